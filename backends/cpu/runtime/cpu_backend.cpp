// The cpu backend: a delegate runs its blob's nodes in stages (stage_plan.h) — XNNPACK
// runtimes and tern's own kernels — bound to their arguments' memory at prepare and run in
// order at execute. Weights come from the program's constants, which arrive as arguments: the
// first prepare checks them against the blob's Source values, runs the blob's recipes
// (weights/weight_recipe.h) into buffers allocated at init, then creates the XNNPACK runtimes
// (which pack their static weights). 4-D tensors are NHWC inside the delegate; the edges
// convert with tern's own transposes through staging buffers, and values crossing stages live
// in a workspace; both are allocated at init. execute() never allocates.
#include <xnnpack.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>

#include "backends/cpu/runtime/blob_dynamic_checks.h"
#include "backends/cpu/runtime/dynamic_counts.h"
#include "backends/cpu/runtime/blob_reader.h"
#include "backends/cpu/runtime/flush_denormals.h"
#include "backends/cpu/runtime/layout_transpose.h"
#include "backends/cpu/runtime/own_kernel_node.h"
#include "backends/cpu/runtime/recipe_jobs.h"
#include "backends/cpu/runtime/stage_plan.h"
#include "backends/cpu/runtime/register_cpu_backend.h"
#include "backends/cpu/runtime/subgraph_builder.h"
#include "backends/cpu/runtime/threadpool_cache.h"
#include "backends/cpu/runtime/weight_cache.h"
#include "backends/cpu/kernels/quant_weight.h"
#include "backends/cpu/weights/weight_recipe.h"
#include "runtime/core/checked_math.h"
#include "runtime/core/platform.h"
#include "runtime/core/tensor_view.h"

namespace tern {
namespace cpu {
namespace {

constexpr size_t kStageAlignment = 64;
/// Bytes of one part label (a stage, or the edge copies) shown by profilers.
constexpr size_t kLabelBytes = 112;
/// XNN_EXTRA_BYTES: XNNPACK may read this far past an input.
constexpr uint64_t kExtraBytes = XNN_EXTRA_BYTES;

/// One delegate call argument the delegate reads or writes.
struct External {
  uint32_t value = 0;  ///< blob value index (= XNNPACK external id)
  uint32_t arg = 0;    ///< delegate call argument index
  bool input = false;
  bool nhwc = false;    ///< transposed at the edge
  bool staged = false;  ///< the stages work on `stage`, copied from/to the argument
  bool int64 = false;   ///< ValueLayout::Int64Plain: int64 elements (embedding indices)
  bool boolean = false;  ///< ValueLayout::BoolPlain: bool elements, a byte each (a condition)
  bool int32 = false;    ///< ValueLayout::Int32Plain: int32 elements (a grouped product's ends)
  uint64_t numel = 0;
  uint64_t n = 0, c = 0, hw = 0;  ///< NHWC externals: the tern tensor is [n, c, h, w]
  uint32_t rank = 0;              ///< the tern tensor's rank and sizes (a dynamic dim's bound)
  int64_t sizes[kMaxDims] = {};
  uint32_t dynamic_dim = kNoValue;  ///< dynamic_dim_of(its value) (Plain: a tern dim)
  float* stage = nullptr;
  void* bound = nullptr;  ///< unstaged outputs: the argument's data at prepare
};

/// Bytes of one element of external `x`'s argument.
uint64_t element_bytes(const External& x) {
  return x.int64 ? 8 : x.boolean ? 1 : x.int32 ? 4 : sizeof(float);
}

/// The cpu backend's DelegateHandle.
struct CpuDelegate {
  BlobPlan plan;
  FreeableBuffer blob;  ///< the blob segment: constants are read from it in place
  pthreadpool_t pool = nullptr;
  StagePlan stages;
  XnnStage* xnn = nullptr;  ///< per stage (empty for own-kernel stages)
  float** addr = nullptr;   ///< per blob value: its bytes (null for XnnInternal; Bound at prepare)
  External* externals = nullptr;
  uint32_t num_externals = 0;
  void* staging = nullptr;    ///< edge buffers of Staged externals
  void* workspace = nullptr;  ///< Workspace values
  float* scratch = nullptr;   ///< own kernels' scratch (the largest any node needs)
  /// Dynamic plans: per value, its element count at the current execution (else null). Static
  /// values keep the count set at init; an execute rewrites each dynamic one (its argument's
  /// count, or the node that makes it) before anything reads it.
  uint64_t* numel = nullptr;
  /// Derived values (recipes' outputs) read at execute: by tern's kernels, or in place by
  /// XNNPACK (a binary op's static operand). Alias recipes need no buffer. Owned by
  /// `kept_block` once init made it (weight_cache.h: other delegates may read from it).
  void* derived_kept = nullptr;
  WeightBlock* kept_block = nullptr;
  /// Per value: the block of another delegate (or this one) whose packed copy it reads
  /// (weight_cache.h), one reference each; null where the value is its own.
  WeightBlock** borrowed = nullptr;
  /// Derived values only XNNPACK's conv / depthwise / fully-connected nodes read: XNNPACK packs
  /// them into its own buffers when it creates the runtimes, after which these are freed.
  void* derived_transient = nullptr;
  /// Per value: a Source's argument data at the first prepare (null before, and for others).
  const void** source_data = nullptr;
  /// Per value: the value is a Source read by an Alias recipe (in place at execute: never
  /// released to the loader).
  bool* aliased_source = nullptr;
  /// Per value: for a Source, the last Derived value whose recipe reads it (kNoValue: none).
  uint32_t* last_recipe_reader = nullptr;
  /// BackendInitContext::release_constant and its cookie (null: none).
  void (*release_constant)(void* cookie, const void* data, size_t size) = nullptr;
  void* release_cookie = nullptr;
  /// The recipes have run and the XNNPACK runtimes exist (the first successful prepare).
  bool weights_ready = false;
  /// Profiler labels: one per stage, then "inputs in" and "outputs out" (kLabelBytes each).
  char* labels = nullptr;
  bool prepared = false;
};

bool xnnpack_ready() {
  static const bool ok = xnn_initialize(nullptr) == xnn_status_success;
  return ok;
}

void free_delegate(CpuDelegate* d) {
  if (d == nullptr) return;
  if (d->xnn != nullptr) {
    for (uint32_t s = 0; s < d->stages.num_stages; ++s) free_xnn_stage(&d->xnn[s]);
    std::free(d->xnn);
  }
  release_threadpool(d->pool);
  std::free(d->staging);
  std::free(d->workspace);
  std::free(d->scratch);
  std::free(d->numel);
  std::free(d->labels);
  if (d->borrowed != nullptr) {
    for (uint32_t i = 0; i < d->plan.header.num_values; ++i) weight_block_release(d->borrowed[i]);
    std::free(d->borrowed);
  }
  if (d->kept_block != nullptr) {
    weight_cache_forget(d->kept_block);   // no one else finds these values from now on
    weight_block_release(d->kept_block);  // frees derived_kept unless others still read it
  } else {
    std::free(d->derived_kept);
  }
  std::free(d->derived_transient);
  std::free(d->source_data);
  std::free(d->aliased_source);
  std::free(d->last_recipe_reader);
  std::free(d->externals);
  std::free(d->addr);
  free_stage_plan(&d->stages);
  free_blob_plan(&d->plan);
  d->~CpuDelegate();
  std::free(d);
}

/// Bytes of the buffer of a value of `numel` floats: XNN_EXTRA_BYTES of slack (XNNPACK may
/// read that far past an input), rounded to kStageAlignment.
bool buffer_bytes(uint64_t numel, uint64_t* out) {
  return checked_align_up(numel * sizeof(float) + kExtraBytes, kStageAlignment, out);
}

/// Allocates `bytes` (zeroed unless `zero` is false, kStageAlignment-aligned) into *out;
/// nothing for 0 bytes.
Error allocate_buffers(uint64_t bytes, const char* what, void** out, bool zero = true) {
  if (bytes == 0) return Error::Ok;
  TERN_CHECK_OR_RETURN_ERROR(bytes <= SIZE_MAX, DelegateMemoryAllocationFailed,
                             "cpu backend: %s of %llu bytes", what,
                             static_cast<unsigned long long>(bytes));
  *out = std::aligned_alloc(kStageAlignment, static_cast<size_t>(bytes));
  TERN_CHECK_OR_RETURN_ERROR(*out != nullptr, DelegateMemoryAllocationFailed,
                             "cpu backend: no memory for %llu bytes of %s",
                             static_cast<unsigned long long>(bytes), what);
  if (zero) std::memset(*out, 0, static_cast<size_t>(bytes));
  return Error::Ok;
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

/// Whether every node reading value `i` reads it as the weight or bias of an XNNPACK conv,
/// depthwise conv, fully-connected or deconvolution node (XNNPACK copies those into its packed weights when
/// it creates the runtime).
bool only_packed_by_xnnpack(const BlobPlan& p, uint32_t i) {
  for (uint32_t n = 0; n < p.header.num_nodes; ++n) {
    const BlobNode& node = p.nodes[n];
    const NodeOp op = static_cast<NodeOp>(node.op);
    const bool packs = op == NodeOp::Conv2d || op == NodeOp::DepthwiseConv2d ||
                       op == NodeOp::FullyConnected || op == NodeOp::Deconv2d;
    for (uint32_t j = 0; j < node.num_inputs; ++j) {
      if (node.inputs[j] == i && (!packs || j == 0)) return false;
    }
  }
  return true;
}

/// Allocates (once, at init) the buffers of the Derived values that a recipe fills at prepare,
/// and notes which Sources an Alias recipe reads in place.
Error allocate_derived(CpuDelegate* d) {
  const BlobPlan& p = d->plan;
  const uint32_t nv = p.header.num_values;
  d->source_data = static_cast<const void**>(std::calloc(nv, sizeof(void*)));
  d->aliased_source = static_cast<bool*>(std::calloc(nv, sizeof(bool)));
  d->last_recipe_reader = static_cast<uint32_t*>(std::malloc(nv * sizeof(uint32_t)));
  bool* transient = static_cast<bool*>(std::calloc(nv, sizeof(bool)));
  if (d->source_data == nullptr || d->aliased_source == nullptr ||
      d->last_recipe_reader == nullptr || transient == nullptr) {
    std::free(transient);
    TERN_RETURN_ERROR(DelegateMemoryAllocationFailed,
                      "cpu backend: no memory for the tables of %u values", nv);
  }
  uint64_t bytes[2] = {0, 0};  // kept, transient
  for (uint32_t i = 0; i < nv; ++i) d->last_recipe_reader[i] = kNoValue;
  for (uint32_t i = 0; i < nv; ++i) {
    const BlobValue& v = p.values[i];
    if (v.kind != static_cast<uint32_t>(ValueKind::Derived)) continue;
    const BlobRecipe& r = p.recipes[v.recipe];
    for (uint32_t slot = 0; slot < kRecipeSources; ++slot) {
      if (r.sources[slot] != kNoValue) d->last_recipe_reader[r.sources[slot]] = i;
    }
    if (r.op == static_cast<uint32_t>(RecipeOp::Alias)) {
      d->aliased_source[r.sources[0]] = true;
      continue;
    }
    transient[i] = only_packed_by_xnnpack(p, i);
    uint64_t b = 0;
    if (!buffer_bytes(value_numel(v), &b) || !checked_add(bytes[transient[i]], b,
                                                          &bytes[transient[i]])) {
      std::free(transient);
      TERN_RETURN_ERROR(DelegateMemoryAllocationFailed, "cpu backend: weight buffers overflow");
    }
  }
  // Not zeroed here (each recipe writes every float of its value; the slack after it is
  // zeroed as each buffer is placed): the pages are first touched by the packing itself.
  Error err = allocate_buffers(bytes[0], "weight buffers", &d->derived_kept, /*zero=*/false);
  if (err == Error::Ok) {
    d->borrowed = static_cast<WeightBlock**>(std::calloc(nv, sizeof(WeightBlock*)));
    if (d->derived_kept != nullptr) d->kept_block = weight_block_create(d->derived_kept);
    if (d->borrowed == nullptr || (d->derived_kept != nullptr && d->kept_block == nullptr)) {
      err = set_error_message(Error::DelegateMemoryAllocationFailed,
                              "cpu backend: no memory for the weight tables of %u values", nv);
    }
  }
  if (err == Error::Ok) {
    err = allocate_buffers(bytes[1], "weight buffers packed by XNNPACK", &d->derived_transient,
                           /*zero=*/false);
  }
  uint8_t* cursor[2] = {static_cast<uint8_t*>(d->derived_kept),
                        static_cast<uint8_t*>(d->derived_transient)};
  for (uint32_t i = 0; i < nv && err == Error::Ok; ++i) {
    const BlobValue& v = p.values[i];
    if (v.kind != static_cast<uint32_t>(ValueKind::Derived) ||
        p.recipes[v.recipe].op == static_cast<uint32_t>(RecipeOp::Alias)) {
      continue;
    }
    d->addr[i] = reinterpret_cast<float*>(cursor[transient[i]]);
    uint64_t b = 0;
    (void)buffer_bytes(value_numel(v), &b);
    const uint64_t used = value_numel(v) * sizeof(float);
    std::memset(cursor[transient[i]] + used, 0, static_cast<size_t>(b - used));
    cursor[transient[i]] += b;
  }
  std::free(transient);
  return err;
}

/// The DType a Source of `type` is.
DType source_dtype(uint32_t type) {
  switch (static_cast<SourceType>(type)) {
    case SourceType::Nf4:
      return DType::NF4;
    case SourceType::Fp8E4M3:
      return DType::FP8E4M3;
    case SourceType::Fp8E5M2:
      return DType::FP8E5M2;
    case SourceType::F32:
      break;
  }
  return DType::F32;
}

/// The argument of Source value `i`, checked against the blob: a contiguous tensor of the
/// source's dtype, its exact sizes, at least its bytes, with data.
Error source_tensor(const CpuDelegate* d, uint32_t i, Span<EValue*> args, const TensorView** out) {
  const BlobValue& v = d->plan.values[i];
  EValue* e = args[v.arg];
  TERN_CHECK_OR_RETURN_ERROR(e != nullptr && e->is_tensor(), InvalidArgument,
                             "cpu backend: value %u (weight source, argument %u): expected a "
                             "tensor (a program constant)",
                             i, v.arg);
  const TensorView& t = e->to_tensor();
  const DType dtype = source_dtype(v.source & 0xFFu);
  bool same = t.rank == v.rank && t.sizes != nullptr && t.dtype == dtype;
  for (uint32_t r = 0; same && r < v.rank; ++r) {
    same = t.sizes[r] >= 0 && static_cast<uint64_t>(t.sizes[r]) == v.dims[r];
  }
  char want[96], found[96];
  TERN_CHECK_OR_RETURN_ERROR(
      same && t.is_contiguous() && t.data != nullptr && t.nbytes >= v.data_bytes,
      InvalidArgument,
      "cpu backend: value %u (weight source, argument %u '%s'): expected a contiguous %s tensor "
      "%s of %llu bytes, found %s%s %s of %llu bytes%s",
      i, v.arg, t.name ? t.name : "", to_string(dtype),
      format_dims(v.dims, v.rank, want, sizeof(want)),
      static_cast<unsigned long long>(v.data_bytes), t.is_contiguous() ? "" : "non-contiguous ",
      to_string(t.dtype), t.sizes ? format_shape(t.shape(), found, sizeof(found)) : "(no sizes)",
      static_cast<unsigned long long>(t.nbytes), t.data ? "" : " (no data)");
  *out = &t;
  return Error::Ok;
}

/// The scheme tensors of quantized Source argument `t` for a QuantWeight recipe of `params`
/// (the blob node's QuantParam values): the argument's scheme must be the one the blob was
/// compiled for (then the runtime's own checks of the program give the tensors' lengths).
Error quant_source(uint32_t value, const TensorView& t, const uint32_t* q, RecipeSource* out) {
  const QuantView* view = t.quant;
  const QuantWeightFormat format = static_cast<QuantWeightFormat>(q[kQuantFormat]);
  bool ok = view != nullptr;
  if (ok && format == QuantWeightFormat::Nf4) {
    ok = view->scheme == QuantView::Scheme::NF4 && view->block_size == q[kQuantBlockSize] &&
         view->absmax != nullptr;
  } else if (ok && format == QuantWeightFormat::Nf4DoubleQuant) {
    ok = view->scheme == QuantView::Scheme::NF4DoubleQuant &&
         view->block_size == q[kQuantBlockSize] && view->dq_block_size == q[kQuantDqBlockSize] &&
         view->dq_codes != nullptr && view->dq_absmax2 != nullptr && view->dq_table != nullptr;
  } else if (ok) {
    const uint32_t granularity = static_cast<uint32_t>(view->granularity);
    const bool block = granularity == static_cast<uint32_t>(Fp8Granularity::Block);
    ok = view->scheme == QuantView::Scheme::FP8 && granularity == q[kQuantGranularity] &&
         (!block || (view->block_rows == q[kQuantBlockRows] &&
                     view->block_cols == q[kQuantBlockCols])) &&
         view->scale != nullptr;
  }
  TERN_CHECK_OR_RETURN_ERROR(
      ok, InvalidArgument,
      "cpu backend: value %u (quantized weight source '%s'): its quantization parameters are "
      "not those the blob was compiled for (format %u, block size %u, dq block size %u, "
      "granularity %u, tile %ux%u)",
      value, t.name ? t.name : "", q[kQuantFormat], q[kQuantBlockSize], q[kQuantDqBlockSize],
      q[kQuantGranularity], q[kQuantBlockRows], q[kQuantBlockCols]);
  out->absmax = view->absmax;
  out->dq_codes = view->dq_codes;
  out->dq_absmax2 = view->dq_absmax2;
  out->dq_table = view->dq_table;
  out->dq_offset = view->dq_offset;
  out->scale = view->scale;
  return Error::Ok;
}

/// Checks Derived value `i`'s recipe against its sources' arguments (checked by
/// source_tensor) and fills *job to run it into d->addr[i]; an Alias recipe instead points
/// d->addr[i] at its source (*queue false: nothing to run).
Error value_job(CpuDelegate* d, uint32_t i, Span<EValue*> args, RecipeJob* job, bool* queue) {
  const BlobPlan& p = d->plan;
  const BlobValue& v = p.values[i];
  const BlobRecipe& r = p.recipes[v.recipe];
  const char* why = "";
  TERN_CHECK_OR_RETURN_ERROR(recipe_shape(r, value_numel(v), &job->shape, &why), InvalidState,
                             "cpu backend: value %u: recipe %u: %s", i, v.recipe, why);
  for (uint32_t slot = 0; slot < kRecipeSources; ++slot) {
    const uint32_t id = r.sources[slot];
    job->sources[slot] = RecipeSource();
    if (id == kNoValue) continue;
    job->sources[slot].data = d->source_data[id];
    if (slot == 0 && job->shape.quantized != SourceType::F32) {
      TERN_RETURN_IF_ERROR(
          quant_source(id, args[p.values[id].arg]->to_tensor(), r.params, &job->sources[slot]));
    }
  }
  *queue = r.op != static_cast<uint32_t>(RecipeOp::Alias);
  if (!*queue) d->addr[i] = const_cast<float*>(static_cast<const float*>(job->sources[0].data));
  job->recipe = &r;
  job->out = d->addr[i];
  return Error::Ok;
}

/// After Derived value `i`'s recipe ran: a quantized weight's codes must be ones the fused
/// kernels decode.
Error check_made_value(CpuDelegate* d, uint32_t i) {
  const BlobPlan& p = d->plan;
  const BlobRecipe& r = p.recipes[p.values[i].recipe];
  if (r.op != static_cast<uint32_t>(RecipeOp::QuantWeight)) return Error::Ok;
  const QuantWeightDesc q = quant_weight_desc(r.params);
  QuantWeightLayout layout;
  (void)quant_weight_layout(q, &layout);  // recipe_shape checked it
  const QuantWeightView w = quant_weight_view(q, layout, d->addr[i]);
  TERN_CHECK_OR_RETURN_ERROR(
      (q.format != QuantWeightFormat::Nf4DoubleQuant || std::isfinite(w.dq_offset)) &&
          !quant_weight_has_nonfinite_codes(w),
      InvalidArgument,
      "cpu backend: value %u: the quantized weight (argument %u) holds a NaN or infinity "
      "FP8 code or a non-finite double quantization offset, which the fused kernels do not "
      "decode",
      i, p.values[r.sources[0]].arg);
  return Error::Ok;
}

/// The cache key of Derived value `i` (weight_cache.h): its recipe without the blob-local
/// source indices, each source's constant address and byte count, its element count.
void weight_key_of(const CpuDelegate* d, uint32_t i, WeightKey* key) {
  const BlobPlan& p = d->plan;
  const BlobValue& v = p.values[i];
  weight_key_clear(key);
  key->recipe = p.recipes[v.recipe];
  for (uint32_t slot = 0; slot < kRecipeSources; ++slot) {
    const uint32_t id = key->recipe.sources[slot];
    key->recipe.sources[slot] = 0;
    if (id == kNoValue) continue;
    key->source[slot] = d->source_data[id];
    key->source_bytes[slot] = p.values[id].data_bytes;
  }
  key->numel = value_numel(v);
}

/// The first prepare runs the recipes in batches of at most this many values and bytes of
/// output, each batch over the pool (recipe_jobs.h); after a batch, the constants no later
/// recipe reads go back to the loader, so the program's pages and the packed copies are never
/// all resident at once.
constexpr uint32_t kPackBatchValues = 32;
constexpr uint64_t kPackBatchBytes = uint64_t{64} << 20;

/// The recipes queued for the next batch: each job's value, and for a kept value its cache key.
struct PackBatch {
  RecipeJob jobs[kPackBatchValues];
  uint32_t values[kPackBatchValues];
  WeightKey keys[kPackBatchValues];
  bool kept[kPackBatchValues];
  uint32_t count = 0;
  uint64_t bytes = 0;
};

/// Runs the queued recipes, checks what they made and offers the kept values to the other
/// delegates (weight_cache.h); the batch is empty after.
Error run_batch(CpuDelegate* d, PackBatch* b) {
  run_recipe_jobs(b->jobs, b->count, d->pool);
  const uint32_t count = b->count;
  b->count = 0;
  b->bytes = 0;
  for (uint32_t j = 0; j < count; ++j) {
    TERN_RETURN_IF_ERROR(check_made_value(d, b->values[j]));
    if (b->kept[j]) weight_cache_insert(b->keys[j], d->kept_block, d->addr[b->values[j]]);
  }
  return Error::Ok;
}

/// Derived value `i` at the first prepare: a kept value (read at execute) that another delegate
/// already made from the same constants is read from its buffer (weight_cache.h); anything else
/// is checked and queued in `b` (which runs first when it holds a value of the same key, so the
/// second reads the first's buffer as it would one after another).
Error queue_value(CpuDelegate* d, uint32_t i, Span<EValue*> args, PackBatch* b) {
  const BlobPlan& p = d->plan;
  const bool kept = d->kept_block != nullptr &&
                    p.recipes[p.values[i].recipe].op != static_cast<uint32_t>(RecipeOp::Alias) &&
                    !only_packed_by_xnnpack(p, i);
  const uint32_t at = b->count;
  if (kept) {
    if (d->borrowed[i] != nullptr) return Error::Ok;  // a retried prepare: shared already
    weight_key_of(d, i, &b->keys[at]);
    for (uint32_t j = 0; j < at; ++j) {
      if (!b->kept[j] || std::memcmp(&b->keys[j], &b->keys[at], sizeof(WeightKey)) != 0) continue;
      TERN_RETURN_IF_ERROR(run_batch(d, b));
      return queue_value(d, i, args, b);
    }
    WeightBlock* owner = nullptr;
    const float* shared = weight_cache_find(b->keys[at], &owner);
    if (shared != nullptr) {
      d->addr[i] = const_cast<float*>(shared);
      d->borrowed[i] = owner;
      return Error::Ok;
    }
  }
  bool queue = false;
  TERN_RETURN_IF_ERROR(value_job(d, i, args, &b->jobs[at], &queue));
  if (!queue) return Error::Ok;
  b->values[at] = i;
  b->kept[at] = kept;
  b->bytes += b->jobs[at].shape.out_floats * sizeof(float);
  ++b->count;
  return Error::Ok;
}

/// Hands back to the loader the constants whose last recipe reader is among values
/// [from, to) — all of which have been made — unless an Alias reads them in place.
void release_read_constants(CpuDelegate* d, uint32_t from, uint32_t to) {
  const BlobPlan& p = d->plan;
  for (uint32_t i = from; i < to && d->release_constant != nullptr; ++i) {
    if (p.values[i].kind != static_cast<uint32_t>(ValueKind::Derived)) continue;
    const BlobRecipe& r = p.recipes[p.values[i].recipe];
    for (uint32_t slot = 0; slot < kRecipeSources; ++slot) {
      const uint32_t s = r.sources[slot];
      if (s == kNoValue || d->last_recipe_reader[s] != i) continue;
      const BlobValue& v = p.values[s];
      if ((v.source & kSourceExclusive) == 0 || d->aliased_source[s]) continue;
      d->release_constant(d->release_cookie, d->source_data[s], static_cast<size_t>(v.data_bytes));
    }
  }
}

/// Runs every recipe (in batches over the pool: PackBatch), handing each constant back to the
/// loader as soon as the batch holding its last recipe reader has run.
Error make_derived_values(CpuDelegate* d, Span<EValue*> args) {
  const BlobPlan& p = d->plan;
  const uint32_t nv = p.header.num_values;
  std::unique_ptr<PackBatch> batch(new (std::nothrow) PackBatch());
  TERN_CHECK_OR_RETURN_ERROR(batch != nullptr, DelegateMemoryAllocationFailed,
                             "cpu backend: no memory to queue the weight recipes");
  uint32_t released = 0;  // values before this one have handed their constants back
  for (uint32_t i = 0; i < nv; ++i) {
    if (p.values[i].kind != static_cast<uint32_t>(ValueKind::Derived)) continue;
    TERN_RETURN_IF_ERROR(queue_value(d, i, args, batch.get()));
    if (batch->count == kPackBatchValues || batch->bytes >= kPackBatchBytes) {
      TERN_RETURN_IF_ERROR(run_batch(d, batch.get()));
      release_read_constants(d, released, i + 1);
      released = i + 1;
    }
  }
  TERN_RETURN_IF_ERROR(run_batch(d, batch.get()));
  release_read_constants(d, released, nv);
  return Error::Ok;
}

/// The first prepare: checks every Source argument, runs every recipe, creates the XNNPACK
/// runtimes (which pack their static weights from the Derived buffers, the blob's embedded
/// constants and the arguments), frees what only XNNPACK's packing read, and hands back to the
/// loader the constants no one reads again. Later calls check the Sources are the same
/// constants (the same bytes) and do nothing else.
Error make_weights(CpuDelegate* d, Span<EValue*> args) {
  const BlobPlan& p = d->plan;
  const uint32_t nv = p.header.num_values;
  for (uint32_t i = 0; i < nv; ++i) {
    if (p.values[i].kind != static_cast<uint32_t>(ValueKind::Source)) continue;
    const TensorView* t = nullptr;
    TERN_RETURN_IF_ERROR(source_tensor(d, i, args, &t));
    if (!d->weights_ready) {
      d->source_data[i] = t->data;
      continue;
    }
    TERN_CHECK_OR_RETURN_ERROR(t->data == d->source_data[i], InvalidState,
                               "cpu backend: value %u (weight source, argument %u): the constant "
                               "moved since the first prepare (%p, was %p)",
                               i, p.values[i].arg, t->data, d->source_data[i]);
  }
  if (d->weights_ready) return Error::Ok;
  TERN_RETURN_IF_ERROR(make_derived_values(d, args));
  for (uint32_t s = 0; s < d->stages.num_stages; ++s) {
    free_xnn_stage(&d->xnn[s]);  // a failed earlier prepare may have built some
    if (d->stages.stages[s].own_kernel) continue;
    TERN_RETURN_IF_ERROR(
        build_xnn_stage(p, d->stages, d->stages.stages[s], d->addr, d->pool, &d->xnn[s]));
  }
  if (d->derived_transient != nullptr) {
    // Poisoned (NaN) before it goes: a read after this point would show in every test.
    uint64_t bytes = 0;
    for (uint32_t i = 0; i < nv; ++i) {
      const BlobValue& v = p.values[i];
      if (v.kind != static_cast<uint32_t>(ValueKind::Derived) ||
          p.recipes[v.recipe].op == static_cast<uint32_t>(RecipeOp::Alias) ||
          !only_packed_by_xnnpack(p, i)) {
        continue;
      }
      uint64_t b = 0;
      (void)buffer_bytes(value_numel(v), &b);
      bytes += b;
      d->addr[i] = nullptr;  // XNNPACK holds its own packed copy now
    }
    std::memset(d->derived_transient, 0xFF, static_cast<size_t>(bytes));
    std::free(d->derived_transient);
    d->derived_transient = nullptr;
  }
  d->weights_ready = true;
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
