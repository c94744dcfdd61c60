#include "backends/vulkan/compile/blob_writer.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "backends/vulkan/compile/device_integers.h"
#include "runtime/kernels/util/float16_bits.h"

namespace tern::compiler::vulkan_compile {

using vulkan::BlobValue;
using vulkan::ValueKind;
using vulkan::ValueType;

int32_t param(int64_t v, const char* what) {
  if (v < 0 || v > (int64_t{1} << 30)) {
    throw Unsupported(std::string(what) + " = " + std::to_string(v) + " outside 0..2^30");
  }
  return static_cast<int32_t>(v);
}

BlobBuilder::BlobBuilder(const Graph& graph, const DelegateRegion* region, uint32_t storage)
    : graph_(graph), region_(region), storage_(storage) {
  if (region_ != nullptr) {
    num_args_ = static_cast<uint32_t>(region_->inputs.size() + region_->outputs.size());
  }
}

uint32_t BlobBuilder::add(ValueKind kind, ValueType type, const std::vector<int64_t>& graph_dims,
                          uint32_t arg) {
  // A value of rank above 6 (a 3-D pixel shuffle's [B, C, p, p, p, F, H, W]) is recorded with
  // its leading dims merged into the first: only data movement reads it (the other lowerings
  // refuse rank > 6), and the runtime compares an argument of higher rank the same way.
  std::vector<int64_t> dims = graph_dims;
  if (dims.size() > vulkan::kMaxDims) {
    const size_t extra = dims.size() - vulkan::kMaxDims;
    for (size_t d = 1; d <= extra; ++d) {
      if (dims[d] < 1 || dims[0] > (int64_t{1} << 40) / dims[d]) {
        throw Unsupported("rank " + std::to_string(dims.size()) + ": dims too large to merge");
      }
      dims[0] *= dims[d];
    }
    dims.erase(dims.begin() + 1, dims.begin() + 1 + static_cast<std::ptrdiff_t>(extra));
  }
  BlobValue v{};
  v.kind = static_cast<uint32_t>(kind);
  v.type = static_cast<uint32_t>(type);
  v.rank = static_cast<uint32_t>(dims.size());
  v.arg = arg;
  uint64_t n = 1;
  for (size_t d = 0; d < dims.size(); ++d) {
    if (dims[d] < 1 || dims[d] > static_cast<int64_t>(vulkan::kMaxElements)) {
      throw Unsupported("dim " + std::to_string(dims[d]) + " (empty or too large)");
    }
    v.dims[d] = static_cast<uint64_t>(dims[d]);
    n *= v.dims[d];
    if (n > vulkan::kMaxElements) throw Unsupported("more than 2^30 elements");
  }
  values_.push_back(v);
  data_.emplace_back();
  return static_cast<uint32_t>(values_.size() - 1);
}

uint32_t BlobBuilder::temp(const std::vector<int64_t>& dims) {
  return add(ValueKind::Internal, ValueType::F32, dims, vulkan::kNoValue);
}

uint32_t BlobBuilder::constant(const std::vector<int64_t>& dims, std::vector<float> data) {
  if (storage_ == vulkan::kStorageF16) {
    for (float x : data) {
      if (std::isfinite(x) && std::fabs(x) > 65504.0f) {
        throw Unsupported("a constant holds " + std::to_string(x) +
                          ", beyond f16's range (65504): f16 storage (vulkan:f16) cannot hold "
                          "it");
      }
    }
  }
  const uint32_t id = add(ValueKind::Constant, ValueType::F32, dims, vulkan::kNoValue);
  values_[id].data_bytes = vulkan::storage_element_bytes(storage_) * data.size();
  if (region_ != nullptr) {
    data_[id].resize(values_[id].data_bytes);
    if (storage_ == vulkan::kStorageF16) {
      // Round to nearest even (every finite value is within f16's range: checked above).
      for (size_t i = 0; i < data.size(); ++i) {
        const uint16_t h = portable::float_to_half(data[i]);
        std::memcpy(data_[id].data() + 2 * i, &h, 2);
      }
    } else {
      std::memcpy(data_[id].data(), data.data(), data_[id].size());
    }
  }
  return id;
}

uint32_t BlobBuilder::find(int id) const {
  auto it = ids_.find(id);
  return it == ids_.end() ? vulkan::kNoValue : it->second;
}

uint32_t BlobBuilder::quant_constant(int id, const std::vector<int64_t>& dims, uint64_t bytes,
                                     const std::function<std::vector<uint8_t>()>& make_bytes) {
  if (ids_.count(id) != 0) throw std::logic_error("vulkan compile: quantized weight made twice");
  if (storage_ != vulkan::kStorageF32) {
    throw Unsupported("quantized weight: f16 storage (vulkan:f16) takes no quantized weights; "
                      "they stay on the portable kernels (vulkan:f32 takes them)");
  }
  const uint32_t v = add(ValueKind::Constant, ValueType::Quant, dims, vulkan::kNoValue);
  values_[v].data_bytes = bytes;
  if (region_ != nullptr) {
    data_[v] = make_bytes();
    if (data_[v].size() != bytes) throw std::logic_error("vulkan compile: quantized weight size");
  }
  ids_[id] = v;
  return v;
}

static const Value& tensor_value(const Graph& g, int id) {
  if (id < 0 || static_cast<size_t>(id) >= g.values.size() || !g.values[static_cast<size_t>(id)].is_tensor()) {
    throw Unsupported("value " + std::to_string(id) + " is not a tensor");
  }
  const Value& v = g.values[static_cast<size_t>(id)];
  if (v.quant.scheme != QuantSpec::Scheme::None) throw Unsupported("quantized tensor '" + v.name + "'");
  return v;
}

static int64_t numel_of(const std::vector<int64_t>& sizes) {
  int64_t n = 1;
  for (int64_t d : sizes) n *= d;
  return n;
}

static int arg_index(const std::vector<int>& list, int id) {
  auto it = std::find(list.begin(), list.end(), id);
  return it == list.end() ? -1 : static_cast<int>(it - list.begin());
}

uint32_t BlobBuilder::input(int id, const float* bool_as) {
  if (bool_as != nullptr && id >= 0 && static_cast<size_t>(id) < graph_.values.size()) {
    const Value& m = graph_.values[static_cast<size_t>(id)];
    if (m.is_tensor() && m.dtype == DType::Bool && !m.is_constant) {
      // Made at run time (a comparison here, or an input): its 0 / 1 floats are not bool_as's.
      throw Unsupported("a bool tensor '" + m.name + "' made at run time where this op takes "
                        "only a constant one");
    }
  }
  auto it = ids_.find(id);
  if (it != ids_.end()) return it->second;
  const Value& v = tensor_value(graph_, id);
  if (v.is_constant) {
    const size_t n = static_cast<size_t>(numel_of(v.sizes));
    std::vector<float> data(n);
    if (v.dtype == DType::F32) {
      if (v.data.size() != 4 * n) throw Unsupported("constant '" + v.name + "' has no data");
      std::memcpy(data.data(), v.data.data(), 4 * n);
    } else if (v.dtype == DType::Bool) {
      if (v.data.size() != n) throw Unsupported("constant '" + v.name + "' has no data");
      static const float kZeroOne[2] = {0.0f, 1.0f};  // bools are 0 / 1 floats on the device
      const float* as = bool_as != nullptr ? bool_as : kZeroOne;
      for (size_t i = 0; i < n; ++i) data[i] = as[v.data[i] != 0 ? 1 : 0];
    } else {
      throw Unsupported("constant '" + v.name + "' of dtype " + to_string(v.dtype));
    }
    const uint32_t c = constant(v.sizes, std::move(data));
    ids_[id] = c;
    return c;
  }
  const bool device_int = v.dtype == DType::I64 && device_integer_bound(graph_, id) > 0;
  // An int64 value only casts read (an attention mask): floats rounded at the edge.
  const bool cast_int = !device_int && read_only_by_casts(graph_, id);
  if (v.dtype != DType::F32 && v.dtype != DType::Bool && !device_int && !cast_int) {
    throw Unsupported("tensor '" + v.name + "' of dtype " + to_string(v.dtype));
  }
  uint32_t arg = vulkan::kNoValue;
  if (region_ != nullptr) {
    const int a = arg_index(region_->inputs, id);
    if (a < 0) throw Unsupported("tensor '" + v.name + "' read before it is written");
    arg = static_cast<uint32_t>(a);
  }
  const uint32_t b = add(ValueKind::ExternalInput,
                         v.dtype == DType::Bool ? ValueType::Bool
                         : device_int           ? ValueType::I64AsFloat
                         : cast_int             ? ValueType::I64CastToFloat
                                                : ValueType::F32,
                         v.sizes, arg);
  ids_[id] = b;
  return b;
}

uint32_t BlobBuilder::index_input(int id) { return integer_input(id, false, "indices"); }

uint32_t BlobBuilder::group_ends_input(int id) {
  const Value& v = tensor_value(graph_, id);
  if (v.sizes.size() != 1) throw Unsupported("group ends '" + v.name + "': not 1-D");
  return integer_input(id, true, "group ends");
}

uint32_t BlobBuilder::integer_input(int id, bool allow_i32, const char* what) {
  auto it = ids_.find(id);
  if (it != ids_.end()) {
    const uint32_t t = values_[it->second].type;
    if (t != static_cast<uint32_t>(ValueType::I64) &&
        (!allow_i32 || t != static_cast<uint32_t>(ValueType::I32))) {
      throw Unsupported(std::string(what) + " read as f32 elsewhere");
    }
    return it->second;
  }
  const Value& v = tensor_value(graph_, id);
  if (device_integer_bound(graph_, id) > 0) {  // held as floats: only where a node reads them so
    throw Unsupported(std::string(what) + " '" + v.name + "': an argmax's indices");
  }
  const bool i32 = v.dtype == DType::I32;
  if (v.is_constant && v.dtype == DType::I64 && !allow_i32) {
    // Indices known at compile time (a constant index map): raw int64 bytes in the blob.
    const uint32_t c = add(ValueKind::Constant, ValueType::I64, v.sizes, vulkan::kNoValue);
    values_[c].data_bytes = 8 * static_cast<uint64_t>(numel_of(v.sizes));
    if (v.data.size() != values_[c].data_bytes) {
      throw Unsupported(std::string(what) + " '" + v.name + "': a constant without its data");
    }
    if (region_ != nullptr) data_[c] = v.data.to_vector();
    ids_[id] = c;
    return c;
  }
  if (v.is_constant || (v.dtype != DType::I64 && !(allow_i32 && i32))) {
    throw Unsupported(std::string(what) + " '" + v.name + "': an " +
                      (allow_i32 ? "int32 / int64 activation" : "i64 activation or constant") +
                      " expected");
  }
  uint32_t arg = vulkan::kNoValue;
  if (region_ != nullptr) {
    const int a = arg_index(region_->inputs, id);
    if (a < 0) throw Unsupported(std::string(what) + " '" + v.name + "' made inside the region");
    arg = static_cast<uint32_t>(a);
  }
  const uint32_t b = add(ValueKind::ExternalInput, i32 ? ValueType::I32 : ValueType::I64, v.sizes, arg);
  ids_[id] = b;
  return b;
}

uint32_t BlobBuilder::output(int id) {
  auto it = ids_.find(id);
  if (it != ids_.end()) throw Unsupported("value " + std::to_string(id) + " written twice");
  const Value& v = tensor_value(graph_, id);
  const bool device_int = v.dtype == DType::I64 && device_integer_bound(graph_, id) > 0;
  if (v.is_constant || v.is_state ||
      (v.dtype != DType::F32 && v.dtype != DType::Bool && !device_int)) {
    throw Unsupported("output '" + v.name + "' is not an f32 or bool activation, nor an argmax's "
                      "indices");
  }
  ValueKind kind = ValueKind::Internal;
  uint32_t arg = vulkan::kNoValue;
  if (region_ != nullptr) {
    const int a = arg_index(region_->outputs, id);
    if (a >= 0) {
      kind = ValueKind::ExternalOutput;
      arg = static_cast<uint32_t>(region_->inputs.size() + static_cast<size_t>(a));
    }
  }
  // A bool output leaving the delegate is converted to bytes at its edge; inside, 0 / 1 floats.
  // An argmax's indices leaving it: int64 at the edge, floats inside.
  const bool edge = kind == ValueKind::ExternalOutput;
  const ValueType type = edge && v.dtype == DType::Bool ? ValueType::Bool
                         : edge && device_int         ? ValueType::I64AsFloat
                                                      : ValueType::F32;
  const uint32_t b = add(kind, type, v.sizes, arg);
  ids_[id] = b;
  return b;
}

void BlobBuilder::node(vulkan::NodeOp op, const std::vector<uint32_t>& inputs, uint32_t output,
                       const std::vector<int32_t>& params, const std::vector<float>& fparams) {
  if (inputs.empty() || inputs.size() > vulkan::kMaxNodeInputs ||
      params.size() > vulkan::kNodeParams || fparams.size() > vulkan::kNodeFParams) {
    throw std::logic_error("vulkan compile: malformed node");
  }
  vulkan::BlobNode n{};
  n.op = static_cast<uint32_t>(op);
  n.num_inputs = static_cast<uint32_t>(inputs.size());
  for (uint32_t i = 0; i < vulkan::kMaxNodeInputs; ++i) {
    n.inputs[i] = i < inputs.size() ? inputs[i] : vulkan::kNoValue;
  }
  n.output = output;
  for (size_t i = 0; i < params.size(); ++i) n.params[i] = params[i];
  for (size_t i = 0; i < fparams.size(); ++i) n.fparams[i] = fparams[i];
  nodes_.push_back(n);
}

std::vector<uint8_t> BlobBuilder::finish() const {
  using namespace vulkan;
  BlobHeader h{};
  std::memcpy(h.magic, kBlobMagic, 4);
  h.version = kBlobVersion;
  h.header_size = sizeof(BlobHeader);
  h.num_args = num_args_;
  h.num_values = static_cast<uint32_t>(values_.size());
  h.num_nodes = static_cast<uint32_t>(nodes_.size());
  h.value_record_size = sizeof(BlobValue);
  h.node_record_size = sizeof(BlobNode);
  h.storage = storage_;
  h.workgroup_size = kWorkgroupSize;
  h.matmul_tile = kMatmulTile;
  const uint64_t tables = sizeof(BlobHeader) + values_.size() * sizeof(BlobValue) +
                          nodes_.size() * sizeof(BlobNode);
  h.data_offset = (tables + kDataAlignment - 1) / kDataAlignment * kDataAlignment;
  std::vector<BlobValue> values = values_;
  uint64_t data = 0;
  for (size_t i = 0; i < values.size(); ++i) {
    if (values[i].kind != static_cast<uint32_t>(ValueKind::Constant)) continue;
    values[i].data_offset = data;
    data += (values[i].data_bytes + kDataAlignment - 1) / kDataAlignment * kDataAlignment;
  }
  h.data_size = data;
  std::vector<uint8_t> blob(h.data_offset + data, 0);
  std::memcpy(blob.data(), &h, sizeof(h));
  std::memcpy(blob.data() + sizeof(h), values.data(), values.size() * sizeof(BlobValue));
  std::memcpy(blob.data() + sizeof(h) + values.size() * sizeof(BlobValue), nodes_.data(),
              nodes_.size() * sizeof(BlobNode));
  for (size_t i = 0; i < values.size(); ++i) {
    if (values[i].kind != static_cast<uint32_t>(ValueKind::Constant) || data_[i].empty()) continue;
    std::memcpy(blob.data() + h.data_offset + values[i].data_offset, data_[i].data(),
                data_[i].size());
  }
  return blob;
}

}  // namespace tern::compiler::vulkan_compile
