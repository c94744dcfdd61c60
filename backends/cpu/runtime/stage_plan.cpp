#include "backends/cpu/runtime/stage_plan.h"

#include <cstdlib>

#include "backends/cpu/runtime/blob_dynamic_checks.h"
#include "runtime/core/checked_math.h"

namespace tern::cpu {

namespace {

constexpr uint32_t kNone = 0xFFFFFFFFu;

/// One Workspace value to place: its bytes and the stages [first, last] it is live in.
struct Interval {
  uint32_t value;
  uint32_t first, last;
  uint64_t bytes;
};

/// Greedy placement, largest first: each value goes to the lowest aligned offset where it does
/// not overlap any already placed value whose lifetime overlaps its own.
Error place_workspace(Interval* items, uint32_t count, uint64_t alignment, StagePlan* out) {
  for (uint32_t i = 1; i < count; ++i) {  // insertion sort: by bytes, descending
    const Interval key = items[i];
    uint32_t j = i;
    while (j > 0 && items[j - 1].bytes < key.bytes) {
      items[j] = items[j - 1];
      --j;
    }
    items[j] = key;
  }
  uint64_t total = 0;
  for (uint32_t i = 0; i < count; ++i) {
    uint64_t offset = 0;
    bool moved = true;
    while (moved) {  // bump past every conflicting placed value until none overlaps
      moved = false;
      for (uint32_t j = 0; j < i; ++j) {
        const Interval& p = items[j];
        if (p.last < items[i].first || items[i].last < p.first) continue;  // not live together
        const uint64_t at = out->workspace_offsets[p.value];
        if (offset < at + p.bytes && at < offset + items[i].bytes) {
          offset = at + p.bytes;  // already aligned: every size is a multiple of alignment
          moved = true;
        }
      }
    }
    out->workspace_offsets[items[i].value] = offset;
    TERN_CHECK_OR_RETURN_ERROR(offset + items[i].bytes >= offset, MemoryAllocationFailed,
                               "cpu backend: workspace size overflows");
    if (offset + items[i].bytes > total) total = offset + items[i].bytes;
  }
  (void)alignment;
  out->workspace_bytes = total;
  return Error::Ok;
}

}  // namespace

Error plan_stages(const BlobPlan& blob, uint64_t alignment, uint64_t slack, StagePlan* out) {
  *out = StagePlan();
  const uint32_t nn = blob.header.num_nodes, nv = blob.header.num_values;
  uint32_t* stage_of_node = static_cast<uint32_t*>(std::calloc(nn, sizeof(uint32_t)));
  // Per value: the stage that makes it (kNone for constants and external inputs) and whether
  // a stage other than its maker reads it.
  uint32_t* maker = static_cast<uint32_t*>(std::malloc(sizeof(uint32_t) * nv));
  bool* read_elsewhere = static_cast<bool*>(std::calloc(nv, sizeof(bool)));
  bool* read_at_all = static_cast<bool*>(std::calloc(nv, sizeof(bool)));
  bool* made_by_gemm = static_cast<bool*>(std::calloc(nv, sizeof(bool)));
  out->stages = static_cast<Stage*>(std::calloc(nn, sizeof(Stage)));
  out->homes = static_cast<ValueHome*>(std::calloc(nv, sizeof(ValueHome)));
  out->workspace_offsets = static_cast<uint64_t*>(std::calloc(nv, sizeof(uint64_t)));
  uint32_t* last_reader = static_cast<uint32_t*>(std::calloc(nv, sizeof(uint32_t)));
  Interval* items = static_cast<Interval*>(std::calloc(nv, sizeof(Interval)));
  Error err = Error::Ok;
  if (stage_of_node == nullptr || maker == nullptr || read_elsewhere == nullptr ||
      read_at_all == nullptr || made_by_gemm == nullptr || out->stages == nullptr || out->homes == nullptr ||
      out->workspace_offsets == nullptr || last_reader == nullptr || items == nullptr) {
    err = set_error_message(Error::MemoryAllocationFailed,
                            "cpu backend: no memory to plan %u nodes and %u values", nn, nv);
  }
  if (err == Error::Ok) {
    uint32_t count = 0;
    for (uint32_t n = 0; n < nn; ++n) {
      const bool own = is_own_kernel_op(blob.nodes[n].op);
      const bool extend = count > 0 && !own && !out->stages[count - 1].own_kernel;
      if (extend) {
        out->stages[count - 1].end_node = n + 1;
      } else {
        out->stages[count].first_node = n;
        out->stages[count].end_node = n + 1;
        out->stages[count].own_kernel = own;
        ++count;
      }
      stage_of_node[n] = count - 1;
    }
    out->num_stages = count;
    for (uint32_t i = 0; i < nv; ++i) maker[i] = kNone;
    for (uint32_t n = 0; n < nn; ++n) maker[blob.nodes[n].output] = stage_of_node[n];
    for (uint32_t n = 0; n < nn; ++n) {  // tern's GEMMs write the actual rows only
      made_by_gemm[blob.nodes[n].output] = is_gemm_op(blob.nodes[n].op);
    }
    for (uint32_t n = 0; n < nn; ++n) {
      const BlobNode& node = blob.nodes[n];
      for (uint32_t j = 0; j < node.num_inputs; ++j) {
        uint32_t id = node.inputs[j];
        if (blob.values[id].kind == static_cast<uint32_t>(ValueKind::View)) {
          read_at_all[id] = true;
          id = blob.values[id].view_base;  // the bytes read are the base's
          read_elsewhere[id] = true;       // addressed from outside any one XNNPACK runtime
        }
        read_at_all[id] = true;
        if (maker[id] != stage_of_node[n]) read_elsewhere[id] = true;
        if (stage_of_node[n] > last_reader[id]) last_reader[id] = stage_of_node[n];
      }
    }
    for (uint32_t i = 0; i < nv; ++i) {
      const BlobValue& v = blob.values[i];
      ValueHome home = ValueHome::Workspace;
      switch (static_cast<ValueKind>(v.kind)) {
        case ValueKind::Constant:
        case ValueKind::Derived:  // a buffer filled at prepare, or a Source in place
        case ValueKind::Source:   // read by recipes only, never by a node
          home = ValueHome::Constant;
          break;
        case ValueKind::ExternalInput:
          home = ValueHome::Staged;
          break;
        case ValueKind::View:
          home = ValueHome::View;
          break;
        case ValueKind::ExternalOutput:
          // A dynamic output is staged unless a GEMM makes it: the caller's tensor holds only
          // the actual elements, and the other kernels write all the bound's rows.
          home = v.layout == static_cast<uint32_t>(ValueLayout::Nhwc) || read_at_all[i] ||
                         (v.dynamic_mask != 0 && !made_by_gemm[i])
                     ? ValueHome::Staged
                     : ValueHome::Bound;
          break;
        case ValueKind::Internal: {
          // A value nothing reads also goes to the workspace: XNNPACK's subgraph optimizer
          // drops unread internal values but keeps the node that makes them, and then aborts
          // on the node's missing output (found by fuzz_cpu_blob).
          const bool in_xnn = maker[i] != kNone && !out->stages[maker[i]].own_kernel;
          home = in_xnn && read_at_all[i] && !read_elsewhere[i] ? ValueHome::XnnInternal
                                                                 : ValueHome::Workspace;
          break;
        }
      }
      out->homes[i] = home;
    }
    uint32_t placed = 0;
    for (uint32_t i = 0; i < nv && err == Error::Ok; ++i) {
      if (out->homes[i] != ValueHome::Workspace) continue;
      uint64_t bytes = 0;
      if (!checked_mul(value_numel(blob.values[i]), uint64_t{4}, &bytes) ||
          !checked_add(bytes, slack, &bytes) || !checked_align_up(bytes, alignment, &bytes)) {
        err = set_error_message(Error::MemoryAllocationFailed,
                                "cpu backend: workspace value %u: size overflows", i);
        break;
      }
      const uint32_t first = maker[i];
      items[placed++] = Interval{i, first, last_reader[i] > first ? last_reader[i] : first, bytes};
    }
    if (err == Error::Ok) err = place_workspace(items, placed, alignment, out);
  }
  std::free(stage_of_node);
  std::free(maker);
  std::free(read_elsewhere);
  std::free(read_at_all);
  std::free(made_by_gemm);
  std::free(last_reader);
  std::free(items);
  if (err != Error::Ok) free_stage_plan(out);
  return err;
}

void free_stage_plan(StagePlan* plan) {
  std::free(plan->stages);
  std::free(plan->homes);
  std::free(plan->workspace_offsets);
  *plan = StagePlan();
}

}  // namespace tern::cpu
