// The cpu backend: a delegate runs its blob's nodes in stages (stage_plan.h) — XNNPACK
// runtimes and tern's own kernels — bound to their arguments' memory at prepare and run in
// order at execute. Weights come from the program's constants, which arrive as arguments: the
// first prepare checks them against the blob's Source values, runs the blob's recipes
// (weights/weight_recipe.h) into buffers allocated at init, then creates the XNNPACK runtimes
// (which pack their static weights). 4-D tensors are NHWC inside the delegate; the edges
// convert with tern's own transposes through staging buffers, and values crossing stages live
// in a workspace; both are allocated at init. execute() never allocates. The weights' part
// is delegate_weights.cpp; the delegate itself, cpu_delegate.h.
#include <xnnpack.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

#include "backends/cpu/runtime/blob_dynamic_checks.h"
#include "backends/cpu/runtime/cpu_delegate.h"
#include "backends/cpu/runtime/delegate_weights.h"
#include "backends/cpu/runtime/dynamic_counts.h"
#include "backends/cpu/runtime/blob_reader.h"
#include "backends/cpu/runtime/flush_denormals.h"
#include "backends/cpu/runtime/layout_transpose.h"
#include "backends/cpu/runtime/own_kernel_node.h"
#include "backends/cpu/runtime/stage_plan.h"
#include "backends/cpu/runtime/register_cpu_backend.h"
#include "backends/cpu/runtime/subgraph_builder.h"
#include "backends/cpu/runtime/threadpool_cache.h"
#include "runtime/core/checked_math.h"
#include "runtime/core/platform.h"
#include "runtime/core/tensor_view.h"

namespace tern {
namespace cpu {
namespace {

bool xnnpack_ready() {
  static const bool ok = xnn_initialize(nullptr) == xnn_status_success;
  return ok;
}

/// Fills d->externals and d->addr from the plans and allocates the staging buffers and the
/// workspace.
Error plan_externals(CpuDelegate* d) {
  const BlobPlan& p = d->plan;
  const uint32_t nv = p.header.num_values;
  d->addr = static_cast<float**>(std::calloc(nv, sizeof(float*)));
  TERN_CHECK_OR_RETURN_ERROR(d->addr != nullptr, DelegateMemoryAllocationFailed,
                             "cpu backend: no memory for %u value addresses", nv);
  uint32_t count = 0;
  for (uint32_t i = 0; i < nv; ++i) {
    const ValueKind k = static_cast<ValueKind>(p.values[i].kind);
    if (k == ValueKind::ExternalInput || k == ValueKind::ExternalOutput) ++count;
  }
  d->externals = static_cast<External*>(std::calloc(count, sizeof(External)));
  TERN_CHECK_OR_RETURN_ERROR(d->externals != nullptr, DelegateMemoryAllocationFailed,
                             "cpu backend: no memory for %u external values", count);
  d->num_externals = count;
  uint64_t staging_bytes = 0;
  uint32_t e = 0;
  for (uint32_t i = 0; i < nv; ++i) {
    const BlobValue& v = p.values[i];
    const ValueHome home = d->stages.homes[i];
    uint64_t bytes = 0;
    if (home == ValueHome::Constant && v.kind == static_cast<uint32_t>(ValueKind::Constant)) {
      d->addr[i] = const_cast<float*>(reinterpret_cast<const float*>(p.data + v.data_offset));
    }
    const ValueKind k = static_cast<ValueKind>(v.kind);
    if (k != ValueKind::ExternalInput && k != ValueKind::ExternalOutput) continue;
    External& x = d->externals[e++];
    new (&x) External();
    x.value = i;
    x.arg = v.arg;
    x.input = k == ValueKind::ExternalInput;
    x.nhwc = v.layout == static_cast<uint32_t>(ValueLayout::Nhwc);
    x.int64 = v.layout == static_cast<uint32_t>(ValueLayout::Int64Plain);
    x.boolean = v.layout == static_cast<uint32_t>(ValueLayout::BoolPlain);
    x.int32 = v.layout == static_cast<uint32_t>(ValueLayout::Int32Plain);
    x.numel = value_numel(v);
    x.rank = v.rank;
    x.dynamic_dim = dynamic_dim_of(v);
    for (uint32_t r = 0; r < v.rank; ++r) x.sizes[r] = static_cast<int64_t>(v.dims[r]);
    if (x.nhwc) {  // blob [N, H, W, C]; tern [N, C, H, W]
      x.n = v.dims[0];
      x.c = v.dims[3];
      x.hw = v.dims[1] * v.dims[2];
      x.sizes[1] = static_cast<int64_t>(v.dims[3]);
      x.sizes[2] = static_cast<int64_t>(v.dims[1]);
      x.sizes[3] = static_cast<int64_t>(v.dims[2]);
    }
    x.staged = home == ValueHome::Staged;
    if (x.staged) {
      TERN_CHECK_OR_RETURN_ERROR(
          buffer_bytes(x.int64 ? 2 * x.numel : x.numel, &bytes) &&
              checked_add(staging_bytes, bytes, &staging_bytes),
          DelegateMemoryAllocationFailed, "cpu backend: staging size overflows");
    }
  }
  TERN_RETURN_IF_ERROR(allocate_buffers(staging_bytes, "edge buffers", &d->staging));
  TERN_RETURN_IF_ERROR(
      allocate_buffers(d->stages.workspace_bytes, "workspace", &d->workspace));
  // Own kernels' scratch: one buffer, as large as the largest need (stages run one at a time).
  const int64_t threads =
      d->pool != nullptr ? static_cast<int64_t>(pthreadpool_get_threads_count(d->pool)) : 1;
  uint64_t scratch_floats = 0;
  for (uint32_t n = 0; n < p.header.num_nodes; ++n) {
    const uint64_t f = own_kernel_scratch_floats(p, n, threads);
    if (f > scratch_floats) scratch_floats = f;
  }
  uint64_t scratch_bytes = 0;
  TERN_CHECK_OR_RETURN_ERROR(checked_mul(scratch_floats, sizeof(float), &scratch_bytes) &&
                                 checked_align_up(scratch_bytes, kStageAlignment, &scratch_bytes),
                             DelegateMemoryAllocationFailed,
                             "cpu backend: kernel scratch size overflows");
  void* scratch = nullptr;
  TERN_RETURN_IF_ERROR(allocate_buffers(scratch_bytes, "kernel scratch", &scratch));
  d->scratch = static_cast<float*>(scratch);
  uint8_t* cursor = static_cast<uint8_t*>(d->staging);
  for (uint32_t i = 0; i < d->num_externals; ++i) {
    External& x = d->externals[i];
    if (!x.staged) continue;
    x.stage = reinterpret_cast<float*>(cursor);
    d->addr[x.value] = x.stage;
    uint64_t bytes = 0;
    (void)buffer_bytes(x.int64 ? 2 * x.numel : x.numel, &bytes);
    cursor += bytes;
  }
  for (uint32_t i = 0; i < nv; ++i) {
    if (d->stages.homes[i] != ValueHome::Workspace) continue;
    d->addr[i] = reinterpret_cast<float*>(static_cast<uint8_t*>(d->workspace) +
                                          d->stages.workspace_offsets[i]);
  }
  // A view's base is an earlier Workspace value (parse_blob, plan_stages): its address is set.
  for (uint32_t i = 0; i < nv; ++i) {
    if (d->stages.homes[i] != ValueHome::View) continue;
    d->addr[i] = d->addr[p.values[i].view_base] + p.values[i].data_offset;
  }
  return Error::Ok;
}

/// Writes the profiler labels: "stage S: <op> <output dims>" for an own-kernel stage (a
/// Winograd conv's op name followed by its tile, " F(2x2,3x3)" or " F(4x4,3x3)"),
/// "stage S: xnnpack <first op> .. <last op> (N nodes) <output dims>" for an XNNPACK stage.
Error make_labels(CpuDelegate* d) {
  const uint32_t n = d->stages.num_stages;
  d->labels = static_cast<char*>(std::calloc(n + 2, kLabelBytes));
  TERN_CHECK_OR_RETURN_ERROR(d->labels != nullptr, DelegateMemoryAllocationFailed,
                             "cpu backend: no memory for %u stage labels", n);
  for (uint32_t s = 0; s < n; ++s) {
    const Stage& st = d->stages.stages[s];
    const BlobNode& first = d->plan.nodes[st.first_node];
    const BlobNode& last = d->plan.nodes[st.end_node - 1];
    const BlobValue& out = d->plan.values[last.output];
    char dims[64];
    format_dims(out.dims, out.rank, dims, sizeof(dims));
    char* label = d->labels + s * kLabelBytes;
    if (st.own_kernel) {
      const char* variant = "";
      if (static_cast<NodeOp>(first.op) == NodeOp::PackedWinogradConv2d) {
        variant = first.params[kWinogradTile] == kWinogradTileF4x4 ? " F(4x4,3x3)" : " F(2x2,3x3)";
      }
      std::snprintf(label, kLabelBytes, "stage %u: %s%s %s", s, node_op_name(first.op), variant,
                    dims);
    } else if (st.end_node - st.first_node == 1) {
      std::snprintf(label, kLabelBytes, "stage %u: xnnpack %s %s", s, node_op_name(first.op),
                    dims);
    } else {
      std::snprintf(label, kLabelBytes, "stage %u: xnnpack %s .. %s (%u nodes) %s", s,
                    node_op_name(first.op), node_op_name(last.op), st.end_node - st.first_node,
                    dims);
    }
  }
  std::snprintf(d->labels + n * kLabelBytes, kLabelBytes, "inputs in (copies, NCHW -> NHWC)");
  std::snprintf(d->labels + (n + 1) * kLabelBytes, kLabelBytes,
                "outputs out (copies, NHWC -> NCHW)");
  return Error::Ok;
}

/// The tensor of argument x.arg, checked against what the blob says (a dynamic dim: any size
/// in [1, its bound]); its data too when `need_data` (a caller-bound input has none until
/// set_input, after prepare). *numel: the tensor's element count (optional).
Error argument_tensor(const External& x, Span<EValue*> args, bool need_data, TensorView** out,
                      uint64_t* numel = nullptr) {
  EValue* e = args[x.arg];
  TERN_CHECK_OR_RETURN_ERROR(e != nullptr && e->is_tensor(), InvalidArgument,
                             "cpu backend: argument %u (external %s of value %u): expected a "
                             "tensor",
                             x.arg, x.input ? "input" : "output", x.value);
  TensorView& t = e->to_tensor();
  char want[96], found[96];
  bool same = t.rank == x.rank && t.sizes != nullptr;
  uint64_t count = 1;
  for (uint32_t r = 0; same && r < x.rank; ++r) {
    same = r == x.dynamic_dim ? t.sizes[r] >= 1 && t.sizes[r] <= x.sizes[r]
                              : t.sizes[r] == x.sizes[r];
    count *= same ? static_cast<uint64_t>(t.sizes[r]) : 1;
  }
  const DType dtype = x.int64     ? DType::I64
                      : x.boolean ? DType::Bool
                      : x.int32   ? DType::I32
                                  : DType::F32;
  const uint64_t elem_bytes = element_bytes(x);
  const char* kind = x.int64 ? "int64" : x.boolean ? "bool" : x.int32 ? "int32" : "f32";
  TERN_CHECK_OR_RETURN_ERROR(same, InvalidArgument,
                             "cpu backend: argument %u ('%s'): expected a %s tensor %s%s, found "
                             "%s",
                             x.arg, t.name ? t.name : "", kind,
                             format_shape(Span<const int64_t>(x.sizes, x.rank), want, sizeof(want)),
                             x.dynamic_dim != kNoValue ? " (a dynamic dim at most its bound)" : "",
                             t.sizes ? format_shape(t.shape(), found, sizeof(found)) : "no sizes");
  TERN_CHECK_OR_RETURN_ERROR(
      t.dtype == dtype && t.is_contiguous() &&
          (!need_data || (t.data != nullptr && t.nbytes >= count * elem_bytes)),
      InvalidArgument,
      "cpu backend: argument %u ('%s'): expected contiguous %s data of "
      "%llu bytes",
      x.arg, t.name ? t.name : "", kind,
      static_cast<unsigned long long>(count * elem_bytes));
  *out = &t;
  if (numel != nullptr) *numel = count;
  return Error::Ok;
}

class CpuBackend final : public BackendInterface {
 public:
  bool is_available() const override { return xnnpack_ready(); }

  Result<DelegateHandle*> init(BackendInitContext& context, FreeableBuffer blob,
                               Span<const CompileSpecView> specs) const override {
    (void)specs;  // the cpu backend has no compile specs; unknown ones are ignored
    TERN_RETURN_IF_ERROR(check_backend_option_keys(
        context.options, "cpu", {}, "none; threads: MethodLoadOptions::num_threads"));
    TERN_CHECK_OR_RETURN_ERROR(xnnpack_ready(), BackendUnavailable,
                               "cpu backend: xnn_initialize failed (unsupported CPU?)");
    void* mem = std::malloc(sizeof(CpuDelegate));
    TERN_CHECK_OR_RETURN_ERROR(mem != nullptr, DelegateMemoryAllocationFailed,
                               "cpu backend: no memory for a delegate");
    CpuDelegate* d = new (mem) CpuDelegate();
    d->blob = std::move(blob);
    d->release_constant = context.release_constant;
    d->release_cookie = context.release_cookie;
    Error err = setup(context, d);
    if (err != Error::Ok) {
      free_delegate(d);
      return err;
    }
    return reinterpret_cast<DelegateHandle*>(d);
  }

  Error prepare(DelegateHandle* handle, Span<EValue*> args) const override {
    CpuDelegate* d = reinterpret_cast<CpuDelegate*>(handle);
    TERN_CHECK_OR_RETURN_ERROR(d != nullptr, DelegateInvalidHandle, "cpu backend: null handle");
    TERN_CHECK_OR_RETURN_ERROR(args.size() == d->plan.header.num_args, InvalidProgram,
                               "cpu backend: the delegate call has %zu arguments, its blob "
                               "expects %u",
                               args.size(), d->plan.header.num_args);
    d->prepared = false;
    TERN_RETURN_IF_ERROR(make_weights(d, args));
    for (uint32_t i = 0; i < d->num_externals; ++i) {
      External& x = d->externals[i];
      TensorView* t = nullptr;
      TERN_RETURN_IF_ERROR(argument_tensor(x, args, /*need_data=*/!x.input, &t));
      x.bound = x.staged ? nullptr : t->data;
      if (!x.staged) d->addr[x.value] = static_cast<float*>(t->data);
    }
    for (uint32_t s = 0; s < d->stages.num_stages; ++s) {
      XnnStage& st = d->xnn[s];
      if (st.runtime == nullptr) continue;
      for (uint32_t e = 0; e < st.num_externals; ++e) {
        st.externals[e].id = e;
        st.externals[e].data = d->addr[st.values[e]];
      }
      const xnn_status status = xnn_setup_runtime(st.runtime, st.num_externals, st.externals);
      TERN_CHECK_OR_RETURN_ERROR(status == xnn_status_success, DelegateExecutionFailed,
                                 "cpu backend: xnn_setup_runtime of stage %u failed (status %d)",
                                 s, static_cast<int>(status));
    }
    d->prepared = true;
    return Error::Ok;
  }

  Error execute(BackendExecuteContext& context, DelegateHandle* handle,
                Span<EValue*> args) const override {
    CpuDelegate* d = reinterpret_cast<CpuDelegate*>(handle);
    TERN_CHECK_OR_RETURN_ERROR(d != nullptr, DelegateInvalidHandle, "cpu backend: null handle");
    TERN_CHECK_OR_RETURN_ERROR(d->prepared, InvalidState,
                               "cpu backend: execute before a successful prepare");
    TERN_CHECK_OR_RETURN_ERROR(args.size() == d->plan.header.num_args, InvalidArgument,
                               "cpu backend: %zu arguments, expected %u", args.size(),
                               d->plan.header.num_args);
    // A profiler listening: time the edge copies and every stage (the clock is read only then).
    const bool timed = context.report_part != nullptr;
    const uint32_t num_stages = d->stages.num_stages;
    uint64_t t0 = timed ? monotonic_ns() : 0;
    uint64_t* numel = d->numel;  // dynamic plans: each value's element count this time
    for (uint32_t i = 0; i < d->num_externals; ++i) {
      const External& x = d->externals[i];
      if (!x.input) continue;
      TensorView* t = nullptr;
      uint64_t count = 0;
      TERN_RETURN_IF_ERROR(argument_tensor(x, args, /*need_data=*/true, &t, &count));
      if (numel != nullptr) numel[x.value] = count;
      if (!x.staged) continue;
      const float* src = static_cast<const float*>(t->data);
      if (x.nhwc) {
        nchw_to_nhwc(src, x.stage, x.n, x.c, x.hw, d->pool);
      } else {
        std::memcpy(x.stage, src, count * element_bytes(x));
      }
    }
    if (numel != nullptr) TERN_RETURN_IF_ERROR(propagate_dynamic_counts(d->plan, numel));
    if (timed) t0 = report(context, d->labels + num_stages * kLabelBytes, t0);
    // Subnormals flushed on this thread while the stages run (the pool's workers per call):
    // XNNPACK's numerics for tern's kernels too, and no microcode assists (flush_denormals.h).
    const ScopedFlushDenormals flush;
    for (uint32_t s = 0; s < num_stages; ++s) {
      const Stage& stage = d->stages.stages[s];
      if (stage.own_kernel) {
        TERN_RETURN_IF_ERROR(run_own_kernel_node(d->plan, stage.first_node, d->addr, d->pool,
                                                 d->scratch, numel));
      } else {
        const xnn_status status = xnn_invoke_runtime(d->xnn[s].runtime);
        TERN_CHECK_OR_RETURN_ERROR(status == xnn_status_success, DelegateExecutionFailed,
                                   "cpu backend: xnn_invoke_runtime of stage %u failed (status "
                                   "%d)",
                                   s, static_cast<int>(status));
      }
      if (timed) t0 = report(context, d->labels + s * kLabelBytes, t0);
    }
    for (uint32_t i = 0; i < d->num_externals; ++i) {
      const External& x = d->externals[i];
      if (x.input) continue;
      TensorView* t = nullptr;
      uint64_t count = 0;
      TERN_RETURN_IF_ERROR(argument_tensor(x, args, /*need_data=*/true, &t, &count));
      TERN_CHECK_OR_RETURN_ERROR(
          numel == nullptr || numel[x.value] == count, InvalidArgument,
          "cpu backend: argument %u ('%s'): the output tensor holds %llu elements, the delegate "
          "made %llu from its inputs' sizes",
          x.arg, t->name ? t->name : "", static_cast<unsigned long long>(count),
          static_cast<unsigned long long>(numel[x.value]));
      if (!x.staged) {
        TERN_CHECK_OR_RETURN_ERROR(t->data == x.bound, InvalidState,
                                   "cpu backend: argument %u moved since prepare", x.arg);
        continue;
      }
      float* dst = static_cast<float*>(t->data);
      if (x.nhwc) {
        nhwc_to_nchw(x.stage, dst, x.n, x.c, x.hw, d->pool);
      } else {
        std::memcpy(dst, x.stage, count * sizeof(float));
      }
    }
    if (timed) (void)report(context, d->labels + (num_stages + 1) * kLabelBytes, t0);
    return Error::Ok;
  }

  /// Reports the part `label` that began at `begin_ns` and ends now; returns now.
  static uint64_t report(const BackendExecuteContext& context, const char* label,
                         uint64_t begin_ns) {
    const uint64_t now = monotonic_ns();
    context.report_part(context.part_sink, label, begin_ns, now);
    return now;
  }

  bool takes_dynamic_shapes(DelegateHandle* handle) const override {
    const CpuDelegate* d = reinterpret_cast<const CpuDelegate*>(handle);
    return d != nullptr && d->plan.dynamic;
  }

  void destroy(DelegateHandle* handle) const override {
    free_delegate(reinterpret_cast<CpuDelegate*>(handle));
  }

 private:
  static Error setup(BackendInitContext& context, CpuDelegate* d) {
    // Constants are read in place: the blob keeps the interface's 64-byte alignment promise.
    const Span<const uint8_t> bytes = d->blob.bytes();
    TERN_CHECK_OR_RETURN_ERROR(
        reinterpret_cast<uintptr_t>(bytes.data()) % kLoaderAlignment == 0,
        DelegateInvalidCompatibility,
        "cpu backend: the %zu-byte blob at %p is not %zu-byte aligned (BackendInterface::init "
        "promises it)",
        bytes.size(), static_cast<const void*>(bytes.data()), kLoaderAlignment);
    TERN_RETURN_IF_ERROR(parse_blob(bytes, &d->plan));
    TERN_RETURN_IF_ERROR(plan_stages(d->plan, kStageAlignment, kExtraBytes, &d->stages));
    d->pool = acquire_threadpool(context.num_threads);
    d->xnn = static_cast<XnnStage*>(std::calloc(d->stages.num_stages, sizeof(XnnStage)));
    TERN_CHECK_OR_RETURN_ERROR(d->xnn != nullptr, DelegateMemoryAllocationFailed,
                               "cpu backend: no memory for %u stages", d->stages.num_stages);
    // The XNNPACK runtimes are created at the first prepare, once the recipes have made the
    // weights they pack.
    for (uint32_t s = 0; s < d->stages.num_stages; ++s) new (&d->xnn[s]) XnnStage();
    TERN_RETURN_IF_ERROR(plan_externals(d));
    TERN_RETURN_IF_ERROR(allocate_derived(d));
    if (d->plan.dynamic) {
      const uint32_t nv = d->plan.header.num_values;
      d->numel = static_cast<uint64_t*>(std::malloc(nv * sizeof(uint64_t)));
      TERN_CHECK_OR_RETURN_ERROR(d->numel != nullptr, DelegateMemoryAllocationFailed,
                                 "cpu backend: no memory for %u element counts", nv);
      for (uint32_t i = 0; i < nv; ++i) d->numel[i] = value_numel(d->plan.values[i]);
    }
    return make_labels(d);
  }
};

const CpuBackend g_cpu_backend;

}  // namespace
}  // namespace cpu

const BackendInterface& cpu_backend_interface() { return cpu::g_cpu_backend; }

Error register_cpu_backend() {
  Backend entry;
  entry.name = "cpu";
  entry.backend = &cpu::g_cpu_backend;
  return register_backend(entry);
}

}  // namespace tern
