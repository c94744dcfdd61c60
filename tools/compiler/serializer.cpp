#include "tools/compiler/serializer.h"

#include <flatbuffers/flatbuffers.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <string>
#include <utility>

#include "runtime/core/checked_math.h"
#include "runtime/executor/file_header.h"
#include "schema/program_generated.h"

namespace tern::compiler {
namespace {

using flatbuffers::FlatBufferBuilder;
using flatbuffers::Offset;

/// One segment to write: bytes owned by the ProgramGraph (which outlives serialization).
struct PendingSegment {
  const std::vector<uint8_t>* bytes;
  uint64_t offset = 0;  // from the start of the segment area
};

[[noreturn]] void fail(const Graph& graph, const std::string& what) {
  throw std::invalid_argument("serialize method '" + graph.name + "': " + what);
}

uint64_t tensor_nbytes(const Graph& graph, int id) {
  const Value& v = graph.values[static_cast<size_t>(id)];
  uint64_t numel = 1;
  for (int64_t s : v.sizes) {
    if (s < 0 || !checked_mul(numel, static_cast<uint64_t>(s), &numel)) {
      fail(graph, "value " + std::to_string(id) + " ('" + v.name + "') has invalid sizes");
    }
  }
  uint64_t nbytes = 0;
  if (!dtype_nbytes(v.dtype, numel, &nbytes)) {
    fail(graph, "value " + std::to_string(id) + " ('" + v.name + "') byte size overflows");
  }
  return nbytes;
}

/// Follows plan.alias_of from `id` to the value that owns the bytes.
int alias_root(const Graph& graph, const MemoryPlan& plan, int id) {
  int current = id;
  for (size_t steps = 0; steps <= graph.values.size(); ++steps) {
    const int next = static_cast<size_t>(current) < plan.alias_of.size()
                         ? plan.alias_of[static_cast<size_t>(current)]
                         : -1;
    if (next < 0) return current;
    if (static_cast<size_t>(next) >= graph.values.size()) {
      fail(graph, "plan alias of value " + std::to_string(current) + " is " + std::to_string(next) +
                      ", out of range");
    }
    current = next;
  }
  fail(graph, "plan aliases of value " + std::to_string(id) + " form a cycle");
}

fb::DType to_fb(DType dtype) { return static_cast<fb::DType>(dtype); }

/// Serializes one method, appending its segments to `segments`.
class MethodWriter {
 public:
  MethodWriter(FlatBufferBuilder& fbb, const Graph& graph, const MemoryPlan& plan,
               std::vector<PendingSegment>& segments)
      : fbb_(fbb), graph_(graph), plan_(plan), segments_(segments) {}

  Offset<fb::Method> write();

 private:
  uint32_t add_segment(const std::vector<uint8_t>& bytes) {
    segments_.push_back(PendingSegment{&bytes});
    return static_cast<uint32_t>(segments_.size() - 1);
  }
  void check_value_id(int id, const std::string& where) const {
    if (id < 0 || static_cast<size_t>(id) >= graph_.values.size()) {
      fail(graph_, where + " refers to value " + std::to_string(id) + ", out of range (" +
                       std::to_string(graph_.values.size()) + " values)");
    }
  }
  void assign_constant_segments();
  Offset<fb::EValue> write_value(int id);
  Offset<fb::Tensor> write_tensor(int id);
  Offset<fb::QuantParams> write_quant(const QuantSpec& q);
  Offset<fb::Instruction> write_kernel_call(int node_index);
  uint32_t op_index(const std::string& op);

  FlatBufferBuilder& fbb_;
  const Graph& graph_;
  const MemoryPlan& plan_;
  std::vector<PendingSegment>& segments_;
  std::vector<int64_t> constant_segment_;  // per value: segment of a constant root, or -1
  std::vector<bool> is_input_;
  std::vector<std::string> operators_;
};

void MethodWriter::assign_constant_segments() {
  const size_t n = graph_.values.size();
  constant_segment_.assign(n, -1);
  for (size_t i = 0; i < n; ++i) {
    const Value& v = graph_.values[i];
    if (!v.is_tensor() || !v.is_constant) continue;
    if (alias_root(graph_, plan_, static_cast<int>(i)) != static_cast<int>(i)) continue;
    const uint64_t nbytes = tensor_nbytes(graph_, static_cast<int>(i));
    if (v.data.size() != nbytes) {
      fail(graph_, "constant value " + std::to_string(i) + " ('" + v.name + "') has " +
                       std::to_string(v.data.size()) + " bytes, its dtype and sizes need " +
                       std::to_string(nbytes));
    }
    constant_segment_[i] = add_segment(v.data);
  }
}

Offset<fb::QuantParams> MethodWriter::write_quant(const QuantSpec& q) {
  fb::QuantParamsBuilder b(fbb_);
  b.add_scheme(static_cast<fb::QuantScheme>(q.scheme));
  b.add_block_size(q.block_size);
  b.add_absmax(q.absmax);
  b.add_dq_codes(q.dq_codes);
  b.add_dq_absmax2(q.dq_absmax2);
  b.add_dq_table(q.dq_table);
  b.add_dq_offset(q.dq_offset);
  b.add_dq_block_size(q.dq_block_size);
  b.add_scale(q.scale);
  b.add_granularity(static_cast<fb::ScaleGranularity>(q.granularity));
  b.add_block_rows(q.block_rows);
  b.add_block_cols(q.block_cols);
  return b.Finish();
}

Offset<fb::Tensor> MethodWriter::write_tensor(int id) {
  const Value& v = graph_.values[static_cast<size_t>(id)];
  const std::string where = "value " + std::to_string(id) + " ('" + v.name + "')";
  const uint64_t nbytes = tensor_nbytes(graph_, id);
  const int root = alias_root(graph_, plan_, id);
  const Value& root_value = graph_.values[static_cast<size_t>(root)];
  // An alias's bytes start alias_offset bytes into its root's.
  const uint64_t alias_offset =
      root != id && static_cast<size_t>(id) < plan_.alias_offset.size()
          ? plan_.alias_offset[static_cast<size_t>(id)]
          : 0;
  uint64_t alias_end = 0;
  if (!checked_add(alias_offset, nbytes, &alias_end)) {
    fail(graph_, where + " alias offset " + std::to_string(alias_offset) + " overflows");
  }
  if (root != id && root_value.is_tensor() && alias_end > tensor_nbytes(graph_, root)) {
    fail(graph_, where + " views bytes [" + std::to_string(alias_offset) + ", +" +
                     std::to_string(nbytes) + ") of value " + std::to_string(root) + ", which has " +
                     std::to_string(tensor_nbytes(graph_, root)));
  }

  fb::StorageKind storage = fb::StorageKind::Arena;
  uint32_t location = 0;
  uint64_t offset = 0;
  if (root_value.is_tensor() && root_value.is_constant) {
    storage = fb::StorageKind::Constant;
    if (constant_segment_[static_cast<size_t>(root)] < 0) {
      fail(graph_,
           where + " is a view of constant " + std::to_string(root) + ", which has no segment");
    }
    location = static_cast<uint32_t>(constant_segment_[static_cast<size_t>(root)]);
    if (alias_end > root_value.data.size()) {
      fail(graph_, where + " views bytes [" + std::to_string(alias_offset) + ", +" +
                       std::to_string(nbytes) + ") of constant " + std::to_string(root) +
                       ", which has " + std::to_string(root_value.data.size()));
    }
    offset = alias_offset;
  } else if (v.caller_bound) {
    if (!is_input_[static_cast<size_t>(id)]) {
      fail(graph_, where + " is caller-bound but not a method input");
    }
    storage = fb::StorageKind::Caller;
  } else if (root != id && root_value.caller_bound) {
    fail(graph_, where + " is a view of caller-bound input " + std::to_string(root) +
                     "; the format cannot alias caller memory (plan the view instead)");
  } else if (nbytes == 0) {
    offset = 0;  // an empty tensor needs no bytes; offset 0 is inside any arena
  } else {
    // An alias lies at its root's offset plus its alias offset; others at their own.
    const int placed = root != id ? root : id;
    const int64_t planned = static_cast<size_t>(placed) < plan_.offsets.size()
                                ? plan_.offsets[static_cast<size_t>(placed)]
                                : -1;
    if (planned < 0) {
      fail(graph_, where + " is a planned tensor without an arena offset in the plan");
    }
    if (!checked_add(static_cast<uint64_t>(planned), alias_offset, &offset)) {
      fail(graph_, where + " arena offset overflows");
    }
    uint64_t end = 0;
    if (!checked_add(offset, nbytes, &end) || end > plan_.arena_size) {
      fail(graph_, where + " bytes [" + std::to_string(offset) + ", +" + std::to_string(nbytes) +
                       ") exceed the planned arena of " + std::to_string(plan_.arena_size) +
                       " bytes");
    }
  }

  const auto sizes = fbb_.CreateVector(v.sizes);
  const auto name = v.name.empty() ? Offset<flatbuffers::String>() : fbb_.CreateString(v.name);
  Offset<fb::QuantParams> quant;
  if (v.quant.scheme != QuantSpec::Scheme::None) {
    for (int ref :
         {v.quant.absmax, v.quant.dq_codes, v.quant.dq_absmax2, v.quant.dq_table, v.quant.scale}) {
      if (ref != -1) check_value_id(ref, where + " quant params");
    }
    quant = write_quant(v.quant);
  }
  fb::TensorBuilder b(fbb_);
  b.add_dtype(to_fb(v.dtype));
  b.add_sizes(sizes);
  b.add_storage(storage);
  b.add_location(location);
  b.add_offset(offset);
  if (!quant.IsNull()) b.add_quant(quant);
  b.add_dynamism(fb::ShapeDynamism::Static);
  if (!name.IsNull()) b.add_name(name);
  return b.Finish();
}

Offset<fb::EValue> MethodWriter::write_value(int id) {
  const Value& v = graph_.values[static_cast<size_t>(id)];
  fb::Value type = fb::Value::None;
  Offset<void> payload;
  switch (v.kind) {
    case Value::Kind::Tensor:
      type = fb::Value::Tensor;
      payload = write_tensor(id).Union();
      break;
    case Value::Kind::Int:
      type = fb::Value::Int;
      payload = fb::CreateInt(fbb_, v.int_value).Union();
      break;
    case Value::Kind::Double:
      type = fb::Value::Double;
      payload = fb::CreateDouble(fbb_, v.double_value).Union();
      break;
    case Value::Kind::Bool:
      type = fb::Value::Bool;
      payload = fb::CreateBool(fbb_, v.bool_value).Union();
      break;
    case Value::Kind::IntList:
      type = fb::Value::IntList;
      payload = fb::CreateIntList(fbb_, fbb_.CreateVector(v.ints)).Union();
      break;
    case Value::Kind::DoubleList:
      type = fb::Value::DoubleList;
      payload = fb::CreateDoubleList(fbb_, fbb_.CreateVector(v.doubles)).Union();
      break;
    case Value::Kind::String:
      type = fb::Value::String;
      payload = fb::CreateString(fbb_, fbb_.CreateString(v.string_value)).Union();
      break;
    case Value::Kind::None:
      type = fb::Value::None;
      payload = fb::CreateNone(fbb_).Union();
      break;
    case Value::Kind::TensorList: {
      for (int item : v.tensors) {
        check_value_id(item, "tensor list value " + std::to_string(id));
        if (!graph_.values[static_cast<size_t>(item)].is_tensor()) {
          fail(graph_, "tensor list value " + std::to_string(id) + " holds value " +
                           std::to_string(item) + ", which is not a tensor");
        }
      }
      type = fb::Value::TensorList;
      payload = fb::CreateTensorList(fbb_, fbb_.CreateVector(v.tensors)).Union();
      break;
    }
  }
  return fb::CreateEValue(fbb_, type, payload);
}

uint32_t MethodWriter::op_index(const std::string& op) {
  for (size_t i = 0; i < operators_.size(); ++i) {
    if (operators_[i] == op) return static_cast<uint32_t>(i);
  }
  operators_.push_back(op);
  return static_cast<uint32_t>(operators_.size() - 1);
}

Offset<fb::Instruction> MethodWriter::write_kernel_call(int node_index) {
  const Node& node = graph_.nodes[static_cast<size_t>(node_index)];
  if (node.op.empty()) fail(graph_, "node " + std::to_string(node_index) + " has no operator");
  std::vector<int32_t> args;
  for (int a : node.args) {
    check_value_id(a, "node " + std::to_string(node_index) + " (" + node.op + ")");
    args.push_back(a);
  }
  for (int o : node.outputs) {
    check_value_id(o, "node " + std::to_string(node_index) + " (" + node.op + ")");
    args.push_back(o);
  }
  const uint32_t op = op_index(node.op);
  const auto call = fb::CreateKernelCall(fbb_, op, fbb_.CreateVector(args));
  const auto debug =
      node.debug_name.empty() ? Offset<flatbuffers::String>() : fbb_.CreateString(node.debug_name);
  return fb::CreateInstruction(fbb_, fb::InstructionKind::KernelCall, call.Union(), debug);
}

Offset<fb::Method> MethodWriter::write() {
  const size_t num_values = graph_.values.size();
  if (graph_.name.empty()) fail(graph_, "the method has no name");
  if (!plan_.alias_of.empty() && plan_.alias_of.size() != num_values) {
    fail(graph_, "the plan's alias list has " + std::to_string(plan_.alias_of.size()) +
                     " entries for " + std::to_string(num_values) + " values");
  }
  if (!plan_.alias_offset.empty() && plan_.alias_offset.size() != num_values) {
    fail(graph_, "the plan's alias offset list has " + std::to_string(plan_.alias_offset.size()) +
                     " entries for " + std::to_string(num_values) + " values");
  }
  if (!plan_.offsets.empty() && plan_.offsets.size() != num_values) {
    fail(graph_, "the plan's offset list has " + std::to_string(plan_.offsets.size()) +
                     " entries for " + std::to_string(num_values) + " values");
  }
  if (!is_power_of_two(plan_.alignment)) {
    fail(graph_,
         "the plan's alignment " + std::to_string(plan_.alignment) + " is not a power of two");
  }
  is_input_.assign(num_values, false);
  for (int in : graph_.inputs) {
    check_value_id(in, "an input");
    is_input_[static_cast<size_t>(in)] = true;
  }
  for (int out : graph_.outputs) check_value_id(out, "an output");

  // Segments: constants (in value order), then delegate blobs, then state initial values.
  assign_constant_segments();

  // Delegate regions: node -> region, checked contiguous and disjoint.
  std::vector<int> region_of(graph_.nodes.size(), -1);
  for (size_t r = 0; r < graph_.delegates.size(); ++r) {
    const DelegateRegion& region = graph_.delegates[r];
    const std::string where = "delegate region " + std::to_string(r) + " (" + region.backend + ")";
    if (region.backend.empty()) fail(graph_, where + " has no backend name");
    if (region.nodes.empty()) fail(graph_, where + " has no nodes");
    for (size_t k = 0; k < region.nodes.size(); ++k) {
      const int n = region.nodes[k];
      if (n < 0 || static_cast<size_t>(n) >= graph_.nodes.size()) {
        fail(graph_, where + " refers to node " + std::to_string(n) + ", out of range");
      }
      if (k > 0 && n != region.nodes[k - 1] + 1) {
        fail(graph_, where + " nodes are not ascending and contiguous");
      }
      if (region_of[static_cast<size_t>(n)] != -1) {
        fail(graph_, where + " shares node " + std::to_string(n) + " with region " +
                         std::to_string(region_of[static_cast<size_t>(n)]));
      }
      region_of[static_cast<size_t>(n)] = static_cast<int>(r);
    }
    for (int id : region.inputs) check_value_id(id, where + " inputs");
    for (int id : region.outputs) check_value_id(id, where + " outputs");
  }
  std::vector<uint32_t> blob_segment;
  for (const DelegateRegion& region : graph_.delegates) {
    blob_segment.push_back(add_segment(region.blob));
  }

  // State tensors.
  std::vector<Offset<fb::StateTensor>> state;
  for (size_t i = 0; i < num_values; ++i) {
    const Value& v = graph_.values[i];
    if (!v.is_tensor() || !v.is_state) continue;
    if (v.is_constant || v.caller_bound) {
      fail(graph_, "state value " + std::to_string(i) + " ('" + v.name +
                       "') cannot be constant or caller-bound");
    }
    int32_t init = -1;
    if (!v.data.empty()) {
      const uint64_t nbytes = tensor_nbytes(graph_, static_cast<int>(i));
      if (v.data.size() != nbytes) {
        fail(graph_, "state value " + std::to_string(i) + " ('" + v.name + "') initial value has " +
                         std::to_string(v.data.size()) + " bytes, needs " + std::to_string(nbytes));
      }
      init = static_cast<int32_t>(add_segment(v.data));
    }
    state.push_back(fb::CreateStateTensor(fbb_, static_cast<uint32_t>(i), init));
  }

  std::vector<Offset<fb::EValue>> values;
  values.reserve(num_values);
  for (size_t i = 0; i < num_values; ++i) values.push_back(write_value(static_cast<int>(i)));

  // Instructions: a region becomes one DelegateCall at its first node; its nodes become
  // kernel calls in fallback_instructions.
  std::vector<Offset<fb::Instruction>> instructions;
  std::vector<Offset<fb::Instruction>> fallback;
  for (size_t n = 0; n < graph_.nodes.size(); ++n) {
    const int r = region_of[n];
    if (r < 0) {
      instructions.push_back(write_kernel_call(static_cast<int>(n)));
      continue;
    }
    const DelegateRegion& region = graph_.delegates[static_cast<size_t>(r)];
    if (static_cast<int>(n) != region.nodes.front()) continue;
    const uint32_t begin = static_cast<uint32_t>(fallback.size());
    for (int node : region.nodes) fallback.push_back(write_kernel_call(node));
    const uint32_t end = static_cast<uint32_t>(fallback.size());
    std::vector<int32_t> args(region.inputs.begin(), region.inputs.end());
    args.insert(args.end(), region.outputs.begin(), region.outputs.end());
    const auto call =
        fb::CreateDelegateCall(fbb_, static_cast<uint32_t>(r), fbb_.CreateVector(args), begin, end);
    std::string debug = region.backend + "[";
    for (size_t k = 0; k < region.nodes.size(); ++k) {
      const Node& node = graph_.nodes[static_cast<size_t>(region.nodes[k])];
      debug += (k == 0 ? "" : ",") + (node.debug_name.empty() ? node.op : node.debug_name);
      if (debug.size() > 200) {
        debug += ",...";
        break;
      }
    }
    debug += "]";
    instructions.push_back(fb::CreateInstruction(fbb_, fb::InstructionKind::DelegateCall,
                                                 call.Union(), fbb_.CreateString(debug)));
  }

  std::vector<Offset<fb::Delegate>> delegates;
  for (size_t r = 0; r < graph_.delegates.size(); ++r) {
    const DelegateRegion& region = graph_.delegates[r];
    std::vector<Offset<fb::CompileSpec>> specs;
    for (const auto& spec : region.compile_specs) {
      specs.push_back(fb::CreateCompileSpec(fbb_, fbb_.CreateString(spec.first),
                                            fbb_.CreateVector(spec.second)));
    }
    delegates.push_back(fb::CreateDelegate(fbb_, fbb_.CreateString(region.backend), blob_segment[r],
                                           fbb_.CreateVector(specs)));
  }

  std::vector<Offset<flatbuffers::String>> operators;
  for (const std::string& op : operators_) operators.push_back(fbb_.CreateString(op));
  if (plan_.lower_bound > plan_.arena_size) {
    fail(graph_, "the plan's lower bound " + std::to_string(plan_.lower_bound) +
                     " exceeds its arena size " + std::to_string(plan_.arena_size));
  }
  std::vector<Offset<fb::Arena>> arenas = {
      fb::CreateArena(fbb_, plan_.arena_size, plan_.alignment, plan_.lower_bound)};
  std::vector<uint32_t> inputs(graph_.inputs.begin(), graph_.inputs.end());
  std::vector<uint32_t> outputs(graph_.outputs.begin(), graph_.outputs.end());

  return fb::CreateMethod(fbb_, fbb_.CreateString(graph_.name), fbb_.CreateVector(values),
                          fbb_.CreateVector(inputs), fbb_.CreateVector(outputs),
                          fbb_.CreateVector(operators), fbb_.CreateVector(instructions),
                          fbb_.CreateVector(fallback), fbb_.CreateVector(delegates),
                          fbb_.CreateVector(arenas), fbb_.CreateVector(state), plan_.temp_size);
}

}  // namespace

std::vector<uint8_t> serialize_program(const ProgramGraph& program,
                                       const std::vector<MemoryPlan>& plans,
                                       const SerializeOptions& options) {
  if (plans.size() != program.methods.size()) {
    throw std::invalid_argument("serialize: " + std::to_string(plans.size()) + " plans for " +
                                std::to_string(program.methods.size()) + " methods");
  }
  const uint64_t alignment = options.segment_alignment;
  if (!is_power_of_two(alignment) || alignment < 8) {
    throw std::invalid_argument("serialize: segment alignment " + std::to_string(alignment) +
                                " is not a power of two of at least 8");
  }
  for (size_t i = 0; i < program.methods.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      if (program.methods[i].name == program.methods[j].name) {
        throw std::invalid_argument("serialize: two methods are named '" + program.methods[i].name +
                                    "'");
      }
    }
  }

  FlatBufferBuilder fbb(1024);
  std::vector<PendingSegment> segments;
  std::vector<Offset<fb::Method>> methods;
  for (size_t i = 0; i < program.methods.size(); ++i) {
    MethodWriter writer(fbb, program.methods[i], plans[i], segments);
    methods.push_back(writer.write());
  }

  // Segment layout: each at the next multiple of the alignment.
  uint64_t area_size = 0;
  std::vector<Offset<fb::Segment>> fb_segments;
  for (PendingSegment& seg : segments) {
    if (!checked_align_up(area_size, alignment, &seg.offset) ||
        !checked_add(seg.offset, seg.bytes->size(), &area_size)) {
      throw std::invalid_argument("serialize: segment area size overflows");
    }
    fb_segments.push_back(fb::CreateSegment(fbb, seg.offset, seg.bytes->size(),
                                            static_cast<uint32_t>(alignment),
                                            checksum64(seg.bytes->data(), seg.bytes->size())));
  }

  std::vector<Offset<fb::KeyValue>> metadata;
  for (const auto& kv : program.metadata) {
    metadata.push_back(
        fb::CreateKeyValue(fbb, fbb.CreateString(kv.first), fbb.CreateString(kv.second)));
  }
  const auto root = fb::CreateProgram(
      fbb, static_cast<uint32_t>(kFormatVersionMajor) * 1000u + kFormatVersionMinor,
      fbb.CreateString(program.producer), fbb.CreateString(program.source_model),
      fbb.CreateVector(metadata), fbb.CreateVector(methods), fbb.CreateVector(fb_segments));
  fb::FinishProgramBuffer(fbb, root);

  FileHeader header;
  header.flatbuffer_offset = kFileHeaderSize;
  header.flatbuffer_size = fbb.GetSize();
  uint64_t area_offset = 0;
  checked_align_up(header.flatbuffer_offset + header.flatbuffer_size, alignment, &area_offset);
  header.segment_area_offset = area_offset;
  header.segment_area_size = area_size;

  std::vector<uint8_t> out(area_offset + area_size, 0);
  std::memcpy(out.data() + kFileHeaderSize, fbb.GetBufferPointer(), fbb.GetSize());
  for (const PendingSegment& seg : segments) {
    if (!seg.bytes->empty()) {
      std::memcpy(out.data() + area_offset + seg.offset, seg.bytes->data(), seg.bytes->size());
    }
  }
  encode_file_header(header, out.data());
  header.checksum = compute_header_checksum(
      out.data(), Span<const uint8_t>(out.data() + kFileHeaderSize, fbb.GetSize()));
  encode_file_header(header, out.data());
  return out;
}

void write_file(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  if (!file) {
    throw std::runtime_error("cannot open '" + path + "' for writing: " + std::strerror(errno));
  }
  file.write(reinterpret_cast<const char*>(bytes.data()),
             static_cast<std::streamsize>(bytes.size()));
  file.close();
  if (!file) {
    throw std::runtime_error("cannot write " + std::to_string(bytes.size()) + " bytes to '" + path +
                             "'");
  }
}

}  // namespace tern::compiler
