// Blob values of a region being lowered: constants and their recipes, activations in the
// layout each reader needs, outputs, internal values and views, nodes.
#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "backends/cpu/compile/region_lowering_internal.h"

namespace tern::compiler::cpu_compile::lowering {

uint32_t Lowering::add_value(ValueKind kind, ValueLayout layout, const std::vector<uint64_t>& dims,
                             uint32_t arg, uint32_t dynamic_dim) {
  BlobValue v{};
  v.recipe = cpu::kNoValue;
  v.dynamic_mask = dynamic_dim == cpu::kNoValue ? 0u : 1u << dynamic_dim;
  v.kind = static_cast<uint32_t>(kind);
  v.layout = static_cast<uint32_t>(layout);
  v.rank = static_cast<uint32_t>(dims.size());
  v.arg = arg;
  for (size_t i = 0; i < dims.size(); ++i) v.dims[i] = dims[i];
  values_.push_back(v);
  return static_cast<uint32_t>(values_.size() - 1);
}

uint32_t Lowering::add_constant(const std::vector<uint64_t>& dims, const std::vector<float>& data) {
  return add_constant_words(dims, data.data(), data.size());
}

/// A Constant of `count` 4-byte words (f32, or GatherMap's int32 offsets) copied as they are.
uint32_t Lowering::add_constant_words(const std::vector<uint64_t>& dims, const void* words,
                                      size_t count) {
  const uint32_t id = add_value(ValueKind::Constant, ValueLayout::Plain, dims, cpu::kNoValue);
  size_t offset =
      (data_.size() + cpu::kDataAlignment - 1) / cpu::kDataAlignment * cpu::kDataAlignment;
  data_.resize(offset + count * 4, 0);
  if (count != 0) std::memcpy(data_.data() + offset, words, count * 4);
  values_[id].data_offset = offset;
  values_[id].data_bytes = count * 4;
  return id;
}

/// The Source value of tern constant `vid` (a region input), made once: its tern sizes,
/// element type and exact bytes, flagged exclusive when no node outside the region reads it.
uint32_t Lowering::source(int vid) {
  auto it = sources_.find(vid);
  if (it != sources_.end()) return it->second;
  const Value& v = g_.values[static_cast<size_t>(vid)];
  const uint32_t id =
      add_value(ValueKind::Source, ValueLayout::Plain,
                std::vector<uint64_t>(v.sizes.begin(), v.sizes.end()), input_arg_.at(vid));
  cpu::SourceType type = cpu::SourceType::F32;
  if (v.dtype == DType::NF4) type = cpu::SourceType::Nf4;
  if (v.dtype == DType::FP8E4M3) type = cpu::SourceType::Fp8E4M3;
  if (v.dtype == DType::FP8E5M2) type = cpu::SourceType::Fp8E5M2;
  const bool exclusive = region_uses_[vid] == uses_.at(vid) && listed_.count(vid) == 0 &&
                         std::find(g_.outputs.begin(), g_.outputs.end(), vid) == g_.outputs.end();
  values_[id].source = static_cast<uint32_t>(type) | (exclusive ? cpu::kSourceExclusive : 0u);
  values_[id].data_bytes = v.data.size();
  sources_.emplace(vid, id);
  return id;
}

/// Whether tern value `vid` can be a Source: a constant region input of rank 1..6 whose
/// bytes are exactly its dtype's (f32, nf4, fp8).
bool Lowering::sourceable(int vid) const {
  if (vid < 0 || input_arg_.count(vid) == 0) return false;
  const Value& v = g_.values[static_cast<size_t>(vid)];
  if (!v.is_tensor() || !v.is_constant || v.sizes.empty() || v.sizes.size() > cpu::kMaxDims) {
    return false;
  }
  uint64_t n = 1;
  for (int64_t d : v.sizes) n *= static_cast<uint64_t>(d);
  switch (v.dtype) {
    case DType::F32:
      return v.data.size() == 4 * n;
    case DType::NF4:
      return v.data.size() == (n + 1) / 2;
    case DType::FP8E4M3:
    case DType::FP8E5M2:
      return v.data.size() == n;
    default:
      return false;
  }
}

/// The bytes of tern value `vid` as a recipe reads them (the graph's copy), with a quantized
/// weight's scheme tensors.
cpu::RecipeSource Lowering::graph_source(int vid) const {
  cpu::RecipeSource s;
  const Value& v = g_.values[static_cast<size_t>(vid)];
  s.data = v.data.data();
  auto tensor = [&](int id) -> const void* {
    return id >= 0 ? g_.values[static_cast<size_t>(id)].data.data() : nullptr;
  };
  s.absmax = static_cast<const float*>(tensor(v.quant.absmax));
  s.dq_codes = static_cast<const uint8_t*>(tensor(v.quant.dq_codes));
  s.dq_absmax2 = static_cast<const float*>(tensor(v.quant.dq_absmax2));
  s.dq_table = static_cast<const float*>(tensor(v.quant.dq_table));
  s.dq_offset = v.quant.dq_offset;
  s.scale = static_cast<const float*>(tensor(v.quant.scale));
  return s;
}

/// A constant of XNNPACK dims `dims` made by `rc` from the program's constants: a Derived
/// value (its bytes made at prepare from the delegate call's arguments), or, when it is at
/// most kEmbedMaxBytes or a source cannot be an argument, an embedded Constant of the bytes
/// the recipe makes here (the same code the runtime runs).
uint32_t Lowering::add_derived(const std::vector<uint64_t>& dims, Recipe rc) {
  uint64_t numel = 1;
  for (uint64_t d : dims) numel *= d;
  cpu::RecipeShape shape;
  const char* why = "";
  if (!cpu::recipe_shape(rc.r, numel, &shape, &why) || shape.out_floats != numel) {
    throw std::invalid_argument(std::string("cpu backend: internal error: recipe ") +
                                cpu::recipe_op_name(rc.r.op) + ": " + why);
  }
  bool embed = numel * 4 <= cpu::kEmbedMaxBytes;
  for (uint32_t i = 0; i < cpu::kRecipeSources; ++i) {
    if (rc.src[i] >= 0 && !sourceable(rc.src[i])) embed = true;
  }
  if (embed) {
    cpu::RecipeSource srcs[cpu::kRecipeSources];
    for (uint32_t i = 0; i < cpu::kRecipeSources; ++i) {
      if (rc.src[i] >= 0) srcs[i] = graph_source(rc.src[i]);
    }
    std::vector<float> data(numel);
    if (rc.r.op == static_cast<uint32_t>(RecipeOp::Alias)) {
      std::memcpy(data.data(), srcs[0].data, numel * 4);
    } else {
      cpu::run_recipe(rc.r, shape, srcs, data.data());
    }
    return add_constant(dims, data);
  }
  for (uint32_t i = 0; i < cpu::kRecipeSources; ++i) {
    if (rc.src[i] >= 0) rc.r.sources[i] = source(rc.src[i]);
  }
  const uint32_t id = add_value(ValueKind::Derived, ValueLayout::Plain, dims, cpu::kNoValue);
  values_[id].data_bytes = numel * 4;
  values_[id].recipe = static_cast<uint32_t>(recipes_.size());
  recipes_.push_back(rc.r);
  return id;
}

/// A constant holding tern constant `vid` as it is (in place at run time: an Alias), seen with
/// XNNPACK dims `dims`, scaled as Affine when scale / shift say so.
uint32_t Lowering::constant_as(int vid, const std::vector<uint64_t>& dims, double scale,
                               double shift) {
  Recipe rc(scale == 1.0 && shift == 0.0 ? RecipeOp::Alias : RecipeOp::Affine);
  rc.r.scale = scale;
  rc.r.shift = shift;
  rc.src[0] = vid;
  return add_derived(dims, rc);
}

ValueLayout Lowering::layout_of(const std::vector<int64_t>& sizes) {
  return sizes.size() == 4 ? ValueLayout::Nhwc : ValueLayout::Plain;
}

/// Whether tern value `vid` is a 4-D tensor kept channels-last (plain) in the delegate
/// (layout_plan.h); every other 4-D tensor is NHWC.
bool Lowering::is_plain_4d(int vid) const {
  return vid >= 0 && static_cast<size_t>(vid) < plain_.size() && plain_[static_cast<size_t>(vid)];
}

/// The edge layout of tern value `vid`.
ValueLayout Lowering::layout_of_value(int vid) const {
  return is_plain_4d(vid) ? ValueLayout::Plain
                          : layout_of(g_.values[static_cast<size_t>(vid)].sizes);
}

/// The dim of tern value `vid` whose size varies per execution (kNoValue: static). Only the
/// rows maps supports_dynamic_shapes takes touch one (dynamic_rows.h): a value not 4-D, one
/// dynamic dim before the last (blob_dynamic_checks.h).
uint32_t Lowering::dynamic_dim_of(int vid) const {
  const Value& v = g_.values[static_cast<size_t>(vid)];
  if (!v.is_dynamic()) return cpu::kNoValue;
  const int d = single_leading_dynamic_dim(v);
  if (d < 0) {
    throw std::invalid_argument("cpu backend: value " + std::to_string(vid) +
                                " varies in more than one dim, in its last or is 4-D");
  }
  return static_cast<uint32_t>(d);
}

/// The XNNPACK dims of tern value `vid`: NHWC for a 4-D tensor unless it is plain.
std::vector<uint64_t> Lowering::dims_of(int vid) const {
  const std::vector<int64_t>& s = g_.values[static_cast<size_t>(vid)].sizes;
  return is_plain_4d(vid) ? std::vector<uint64_t>(s.begin(), s.end()) : xnn_dims(s);
}

/// The blob value of activation `vid`: made earlier in the region, or a region input.
uint32_t Lowering::activation(int vid) {
  auto it = ids_.find(vid);
  if (it != ids_.end()) return it->second;
  if (lazy_.count(vid) != 0) return materialize(vid);
  auto in = input_arg_.find(vid);
  if (in == input_arg_.end()) {
    throw std::invalid_argument("cpu backend: value " + std::to_string(vid) +
                                " is read before the region makes it and is no region input");
  }
  const uint32_t id = add_value(ValueKind::ExternalInput, layout_of_value(vid), dims_of(vid),
                                in->second, dynamic_dim_of(vid));
  ids_.emplace(vid, id);
  return id;
}

/// Region input `vid` of another element type than f32 (int64 embedding indices, a bool
/// condition): an external input of `layout` and its tern dims, bound once.
uint32_t Lowering::typed_input(int vid, ValueLayout layout, const char* what) {
  auto it = ids_.find(vid);
  if (it != ids_.end()) return it->second;
  auto arg = input_arg_.find(vid);
  if (arg == input_arg_.end()) {
    throw std::invalid_argument(std::string("cpu backend: ") + what + ": no region input");
  }
  const Value& v = g_.values[static_cast<size_t>(vid)];
  const uint32_t id = add_value(ValueKind::ExternalInput, layout,
                                std::vector<uint64_t>(v.sizes.begin(), v.sizes.end()), arg->second);
  ids_.emplace(vid, id);
  return id;
}

/// Activation `vid` with the layout `plain` asks for: its own blob value when it has that
/// layout (or is not 4-D), else a copy of it in the other order (StridedCopy NHWC <-> plain;
/// made once per value and read by every node that wants it so). MobileViTV2's attention
/// multiplies NHWC conv outputs by a softmax over the last dim (plain) and feeds the product
/// to a conv.
uint32_t Lowering::activation_as(int vid, bool plain) {
  const std::vector<int64_t>& s = g_.values[static_cast<size_t>(vid)].sizes;
  if (s.size() != 4 || is_plain_4d(vid) == plain) return activation(vid);
  auto it = relaid_.find(vid);
  if (it != relaid_.end()) return it->second;
  const std::vector<int64_t> order = plain ? std::vector<int64_t>{s[0], s[1], s[2], s[3]}
                                           : std::vector<int64_t>{s[0], s[2], s[3], s[1]};
  const uint32_t id = internal(std::vector<uint64_t>(order.begin(), order.end()));
  emit_copy(view_of(vid), !plain, id);
  relaid_.emplace(vid, id);
  return id;
}

/// Defines the blob value node output `vid` (external when it leaves the region).
uint32_t Lowering::output(int vid) {
  if (ids_.count(vid) != 0) {
    throw std::invalid_argument("cpu backend: value " + std::to_string(vid) + " is produced twice");
  }
  auto out = output_arg_.find(vid);
  const bool external = out != output_arg_.end();
  // Layout only tells the runtime how to convert at the edge: internal values are Plain.
  const uint32_t id = add_value(external ? ValueKind::ExternalOutput : ValueKind::Internal,
                                external ? layout_of_value(vid) : ValueLayout::Plain, dims_of(vid),
                                external ? out->second : cpu::kNoValue, dynamic_dim_of(vid));
  ids_.emplace(vid, id);
  return id;
}

/// A new internal value (an intermediate of a node lowered to several XNNPACK nodes).
uint32_t Lowering::internal(const std::vector<uint64_t>& dims) {
  return add_value(ValueKind::Internal, ValueLayout::Plain, dims, cpu::kNoValue);
}

void Lowering::mark_dynamic_internals() {
  for (const BlobNode& n : nodes_) {
    BlobValue& out = values_[n.output];
    if (out.dynamic_mask != 0 || out.kind != static_cast<uint32_t>(ValueKind::Internal)) continue;
    for (uint32_t i = 0; i < n.num_inputs; ++i) {
      const BlobValue& in = values_[n.inputs[i]];
      if (in.dynamic_mask == 0) continue;
      if (in.rank != out.rank) {
        throw std::invalid_argument("cpu backend: an internal value of rank " +
                                    std::to_string(out.rank) + " made from a dynamic one of rank " +
                                    std::to_string(in.rank));
      }
      out.dynamic_mask = in.dynamic_mask;
      break;
    }
  }
}

/// A new View value of `dims`: internal value `base`'s elements from `offset` on, in place.
uint32_t Lowering::add_view(uint32_t base, uint64_t offset, const std::vector<uint64_t>& dims) {
  const uint32_t id = add_value(ValueKind::View, ValueLayout::Plain, dims, cpu::kNoValue);
  values_[id].view_base = base;
  values_[id].data_offset = offset;
  viewed_.insert(base);
  return id;
}

/// Operand `vid` of a binary op whose output has rank `out_rank`, scaled by `scale`
/// (constants and scalars only).
uint32_t Lowering::binary_operand(int vid, size_t out_rank, double scale, bool out_plain) {
  const Value& v = g_.values[static_cast<size_t>(vid)];
  if (v.kind == Value::Kind::Int || v.kind == Value::Kind::Double) {
    const double s = v.kind == Value::Kind::Int ? static_cast<double>(v.int_value) : v.double_value;
    return add_constant({1}, {static_cast<float>(s * scale)});
  }
  if (!v.is_constant) return out_rank == 4 ? activation_as(vid, out_plain) : activation(vid);
  std::vector<int64_t> dims(out_rank - v.sizes.size(), 1);
  dims.insert(dims.end(), v.sizes.begin(), v.sizes.end());
  if (out_plain || out_rank != 4 || !layout_sensitive(dims)) {  // the same bytes
    const std::vector<uint64_t> d =
        out_plain ? std::vector<uint64_t>(dims.begin(), dims.end()) : xnn_dims(dims);
    return constant_as(vid, d, scale);
  }
  Recipe rc = permute(dims, {0, 2, 3, 1});  // NCHW -> NHWC
  rc.r.scale = scale;
  rc.src[0] = vid;
  return add_derived(xnn_dims(dims), rc);
}

BlobNode& Lowering::add_node(NodeOp op, std::vector<uint32_t> inputs, uint32_t out) {
  BlobNode n{};
  n.op = static_cast<uint32_t>(op);
  n.num_inputs = static_cast<uint32_t>(inputs.size());
  for (uint32_t i = 0; i < cpu::kMaxNodeInputs; ++i) {
    n.inputs[i] = i < inputs.size() ? inputs[i] : cpu::kNoValue;
  }
  n.output = out;
  n.fparams[0] = -kInf;
  n.fparams[1] = kInf;
  nodes_.push_back(n);
  return nodes_.back();
}

/// The blob value that tern value `in` names as the output of the node just lowered: its own
/// value, or for a channels-last result not copied yet (a conv1d's or conv3d's) its view's
/// base; kNoValue when `in` has neither.
uint32_t Lowering::made_value(int in) const {
  if (ids_.count(in) != 0) return ids_.at(in);
  if (channels_last_results_.count(in) != 0) return lazy_.at(in).base;
  return cpu::kNoValue;
}

/// Tern value `out` now names what `in` named (a node folded into the one that made `in`):
/// the same view for a channels-last result, else the blob value retargeted.
void Lowering::rename_result(int in, int out) {
  if (ids_.count(in) == 0 && channels_last_results_.count(in) != 0) {
    lazy_[out] = lazy_.at(in);
    channels_last_results_.insert(out);
  } else {
    retarget_output(in, out);
  }
}

/// The floats of constant blob value `id`, in place in the data section.
float* Lowering::constant_data(uint32_t id) {
  return reinterpret_cast<float*>(data_.data() + values_[id].data_offset);
}

/// The blob value of tern value `from` (made by the last node) now stands for tern value
/// `to` (a folded node's output): external when `to` leaves the region.
void Lowering::retarget_output(int from, int to) {
  const uint32_t id = ids_.at(from);
  if (viewed_.count(id) != 0 && output_arg_.count(to) != 0) {
    throw std::invalid_argument("cpu backend: internal error: a viewed value (" +
                                std::to_string(id) + ") would become a region output");
  }
  ids_.erase(from);
  ids_.emplace(to, id);
  auto ext = output_arg_.find(to);
  if (ext != output_arg_.end()) {
    values_[id].kind = static_cast<uint32_t>(ValueKind::ExternalOutput);
    values_[id].layout = static_cast<uint32_t>(layout_of_value(to));
    values_[id].arg = ext->second;
  }
}

/// Whether blob value `id` is the output of one of tern's own kernels (not XNNPACK's).
bool Lowering::made_by_own_kernel(uint32_t id) const {
  for (auto it = nodes_.rbegin(); it != nodes_.rend(); ++it) {
    if (it->output == id) return cpu::is_own_kernel_op(it->op);
  }
  return false;
}

/// Activation `vid`, or constant `vid` read in place with its own dims (row-major).
uint32_t Lowering::activation_or_constant(int vid) {
  const Value& v = g_.values[static_cast<size_t>(vid)];
  if (!v.is_constant) return activation(vid);
  return constant_as(vid, std::vector<uint64_t>(v.sizes.begin(), v.sizes.end()));
}

}  // namespace tern::compiler::cpu_compile::lowering
