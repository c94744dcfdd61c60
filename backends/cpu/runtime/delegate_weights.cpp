// The first prepare's weights (delegate_weights.h).
#include "backends/cpu/runtime/delegate_weights.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>

#include "backends/cpu/kernels/quant_weight.h"
#include "backends/cpu/runtime/recipe_jobs.h"
#include "backends/cpu/weights/weight_recipe.h"
#include "runtime/core/checked_math.h"
#include "runtime/core/tensor_view.h"

namespace tern {
namespace cpu {
namespace {

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

}  // namespace

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

}  // namespace cpu
}  // namespace tern
