// One graph node as cuda blob nodes (internal to backends/cuda/compile): what the backend
// takes is exactly what lower_node() accepts, so supports() and lower() never disagree.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "backends/cuda/cuda_blob_format.h"
#include "tools/compiler/graph.h"

namespace tern::compiler::cuda_compile {

/// Why a node cannot be delegated to the cuda backend.
class Unsupported : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

/// A blob node before value ids are mapped: inputs and output are graph value ids (-1 for an
/// absent optional input).
struct PendingNode {
  cuda::NodeOp op = cuda::NodeOp::Unary;
  std::vector<int> inputs;
  int output = -1;
  int64_t params[cuda::kNodeIntParams] = {};
  float fparams[cuda::kNodeFloatParams] = {};
};

/// A tensor a lowering makes for itself between its blob nodes (a long cat's partial results):
/// its id is kTempBase + k within one lowering; region_lowering gives it a region-wide id.
struct TempValue {
  int id = -1;
  DType dtype = DType::F32;
  std::vector<int64_t> sizes;
};
constexpr int kTempBase = 1 << 30;

/// What one graph node becomes.
struct NodeLowering {
  std::vector<PendingNode> nodes;  ///< empty for a view
  /// (value, the value it aliases) for a view: the output shares its input's bytes.
  std::vector<std::pair<int, int>> aliases;
  /// Bytes of workspace the nodes need (im2col columns, attention scores).
  uint64_t workspace_bytes = 0;
  /// Tensors made between this lowering's nodes (ids kTempBase + k).
  std::vector<TempValue> temps;
};

/// Lowers `node` of `g`; throws Unsupported with the reason when the backend does not take it
/// (op, dtypes, attribute values, shapes). Never reads outside the graph.
NodeLowering lower_node(const Graph& g, const Node& node);

/// "[1, 3, 224, 224]".
std::string shape_str(const std::vector<int64_t>& dims);

}  // namespace tern::compiler::cuda_compile
