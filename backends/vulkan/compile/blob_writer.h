// Building a vulkan blob from a region (internal to backends/vulkan/compile): blob values for
// the graph values the region's nodes read and write, constants, temporaries, nodes; then the
// bytes (vulkan_blob_format.h).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "backends/vulkan/vulkan_blob_format.h"
#include "tools/compiler/graph.h"

namespace tern::compiler::vulkan_compile {

/// Why a node cannot be delegated (supports() is false; lower() rethrows it naming the node).
class Unsupported : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

/// Workgroup size and matmul tile this compiler writes into every blob (specialization
/// constants 0 and 1). 256 invocations and 16x16 tiles: within every Vulkan 1.1 device's
/// guaranteed limits (128 invocations are guaranteed; 256 is what every desktop, mobile and
/// Jetson GPU and lavapipe give — the runtime refuses a device with less, and the program
/// runs its portable fallback).
constexpr uint32_t kWorkgroupSize = 256;
constexpr uint32_t kMatmulTile = 16;

class BlobBuilder {
 public:
  /// `region` null: a dry run for supports() (tensors read from outside are external inputs,
  /// every output internal, no constant bytes copied). `storage`: the blob's storage type
  /// (vulkan::kStorageF32, or kStorageF16: f32 constants written as f16, quantized weights
  /// refused as Unsupported).
  BlobBuilder(const Graph& graph, const DelegateRegion* region,
              uint32_t storage = vulkan::kStorageF32);

  const Graph& graph() const { return graph_; }
  uint32_t storage() const { return storage_; }
  /// The blob value of graph tensor `id` read by a node: f32, an argmax's indices as floats
  /// (device_integers.h), or bool as 0 / 1 floats (a bool
  /// constant as bool_as[0] / bool_as[1] when `bool_as` is given — then a bool made at run time
  /// is Unsupported).
  uint32_t input(int id, const float* bool_as = nullptr);
  /// The blob value a node writes for graph tensor `id` (f32 or bool, not constant or state;
  /// lower_node lets only the ops that make 0 / 1 write a bool).
  uint32_t output(int id);
  /// Embedding / index_select indices: an i64 external input, or an i64 constant (its bytes
  /// copied raw into the blob; the lowering checks its range).
  uint32_t index_input(int id);
  /// An i32 / i64 1-D external input (a grouped product's ends: made by the routing outside
  /// the region).
  uint32_t group_ends_input(int id);
  /// A new internal value / constant.
  uint32_t temp(const std::vector<int64_t>& dims);
  uint32_t constant(const std::vector<int64_t>& dims, std::vector<float> data);
  /// The blob value already made for graph tensor `id`, or kNoValue.
  uint32_t find(int id) const;
  /// A new quantized-weight constant (ValueType::Quant) for graph tensor `id`: `dims` [rows,
  /// cols], `bytes` its QuantLayout (4 * words); `make_bytes` is only called when the blob's
  /// bytes are written (not on a supports() dry run).
  uint32_t quant_constant(int id, const std::vector<int64_t>& dims, uint64_t bytes,
                          const std::function<std::vector<uint8_t>()>& make_bytes);
  /// Appends a node.
  void node(vulkan::NodeOp op, const std::vector<uint32_t>& inputs, uint32_t output,
            const std::vector<int32_t>& params, const std::vector<float>& fparams = {});
  /// The blob bytes.
  std::vector<uint8_t> finish() const;
  size_t num_nodes() const { return nodes_.size(); }

 private:
  uint32_t integer_input(int id, bool allow_i32, const char* what);
  uint32_t add(vulkan::ValueKind kind, vulkan::ValueType type, const std::vector<int64_t>& dims,
               uint32_t arg);
  const Graph& graph_;
  const DelegateRegion* region_;
  uint32_t storage_;
  std::map<int, uint32_t> ids_;
  std::vector<vulkan::BlobValue> values_;
  std::vector<std::vector<uint8_t>> data_;  ///< per value (constants only)
  std::vector<vulkan::BlobNode> nodes_;
  uint32_t num_args_ = 0;
};

/// A 32-bit blob parameter from a graph number (Unsupported past 2^30).
int32_t param(int64_t v, const char* what);

}  // namespace tern::compiler::vulkan_compile
