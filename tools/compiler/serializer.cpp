#include "tools/compiler/serializer.h"

#include <flatbuffers/flatbuffers.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>

#include "runtime/core/checked_math.h"
#include "runtime/executor/file_header.h"
#include "schema/program_generated.h"
#include "tools/compiler/pte_file_writer.h"
#include "tools/compiler/shared_state_list.h"

namespace tern::compiler {
namespace {

// ------------------------------------------------------------------ write_pte: pte::File -> bytes
//
// The order in which objects are built fixes the bytes (a FlatBuffer is built back to front),
// so it is spelled out statement by statement, never left to the unspecified evaluation order
// of function arguments. It is the order serialize_program has always used: reordering it
// changes every .pte file tern writes (identical in meaning, not in bytes).

using flatbuffers::FlatBufferBuilder;
using flatbuffers::Offset;
using flatbuffers::String;

Offset<String> optional_string(FlatBufferBuilder& fbb, const std::optional<std::string>& s) {
  return s ? fbb.CreateString(*s) : Offset<String>();
}
Offset<String> nonempty_string(FlatBufferBuilder& fbb, const std::string& s) {
  return s.empty() ? Offset<String>() : fbb.CreateString(s);
}

Offset<fb::QuantParams> build_quant(FlatBufferBuilder& fbb, const pte::Quant& q) {
  fb::QuantParamsBuilder b(fbb);
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

Offset<fb::Tensor> build_tensor(FlatBufferBuilder& fbb, const pte::Tensor& t) {
  const auto sizes = fbb.CreateVector(t.sizes);
  Offset<flatbuffers::Vector<uint8_t>> dim_order;
  if (t.dim_order) dim_order = fbb.CreateVector(*t.dim_order);
  const auto name = nonempty_string(fbb, t.name);
  Offset<fb::QuantParams> quant;
  if (t.quant) quant = build_quant(fbb, *t.quant);
  Offset<flatbuffers::Vector<int32_t>> dim_symbols;
  if (t.dim_symbols) dim_symbols = fbb.CreateVector(*t.dim_symbols);
  fb::TensorBuilder b(fbb);
  b.add_dtype(static_cast<fb::DType>(t.dtype));
  b.add_sizes(sizes);
  if (t.dim_order) b.add_dim_order(dim_order);
  b.add_storage(static_cast<fb::StorageKind>(t.storage));
  b.add_location(t.location);
  b.add_offset(t.offset);
  if (t.quant) b.add_quant(quant);
  b.add_dynamism(static_cast<fb::ShapeDynamism>(t.dynamism));
  if (!name.IsNull()) b.add_name(name);
  if (t.dim_symbols) b.add_dim_symbols(dim_symbols);
  return b.Finish();
}

Offset<fb::EValue> build_value(FlatBufferBuilder& fbb, const pte::Value& v) {
  Offset<void> payload;
  if (!v.omit_payload) {
    switch (v.type) {
      case fb::Value::Tensor:
        payload = build_tensor(fbb, v.tensor).Union();
        break;
      case fb::Value::Int:
        payload = fb::CreateInt(fbb, v.int_value).Union();
        break;
      case fb::Value::Double:
        payload = fb::CreateDouble(fbb, v.double_value).Union();
        break;
      case fb::Value::Bool:
        payload = fb::CreateBool(fbb, v.bool_value).Union();
        break;
      case fb::Value::IntList: {
        const auto items = fbb.CreateVector(v.ints);
        payload = fb::CreateIntList(fbb, items).Union();
        break;
      }
      case fb::Value::DoubleList: {
        const auto items = fbb.CreateVector(v.doubles);
        payload = fb::CreateDoubleList(fbb, items).Union();
        break;
      }
      case fb::Value::String: {
        const auto text = fbb.CreateString(v.string_value);
        payload = fb::CreateString(fbb, text).Union();
        break;
      }
      case fb::Value::TensorList: {
        const auto items = fbb.CreateVector(v.items);
        payload = fb::CreateTensorList(fbb, items).Union();
        break;
      }
      default:  // None, NONE or a type the union does not have: an empty table
        payload = fb::CreateNone(fbb).Union();
        break;
    }
  }
  return fb::CreateEValue(fbb, v.type, payload);
}

Offset<fb::Instruction> build_instruction(FlatBufferBuilder& fbb, const pte::Instruction& i) {
  Offset<void> payload;
  if (i.kind == fb::InstructionKind::KernelCall) {
    const auto args = fbb.CreateVector(i.args);
    payload = fb::CreateKernelCall(fbb, i.index, args).Union();
  } else if (i.kind == fb::InstructionKind::DelegateCall) {
    const auto args = fbb.CreateVector(i.args);
    payload = fb::CreateDelegateCall(fbb, i.index, args, i.fallback_begin, i.fallback_end).Union();
  }
  const auto debug_name = nonempty_string(fbb, i.debug_name);
  return fb::CreateInstruction(fbb, i.kind, payload, debug_name);
}

Offset<fb::Delegate> build_delegate(FlatBufferBuilder& fbb, const pte::Delegate& d) {
  std::vector<Offset<fb::CompileSpec>> specs;
  for (const pte::CompileSpec& spec : d.compile_specs) {
    const auto value = fbb.CreateVector(spec.value);
    const auto key = optional_string(fbb, spec.key);
    specs.push_back(fb::CreateCompileSpec(fbb, key, value));
  }
  const auto spec_vector = fbb.CreateVector(specs);
  const auto backend = optional_string(fbb, d.backend);
  return fb::CreateDelegate(fbb, backend, d.segment, spec_vector);
}

Offset<fb::Method> build_method(FlatBufferBuilder& fbb, const pte::Method& m) {
  std::vector<Offset<fb::StateTensor>> state;
  for (const pte::StateTensor& s : m.state) {
    state.push_back(fb::CreateStateTensor(fbb, s.value, s.init_segment));
  }
  std::vector<Offset<fb::EValue>> values;
  values.reserve(m.values.size());
  for (const pte::Value& v : m.values) values.push_back(build_value(fbb, v));
  // A delegate call's fallback instructions are built just before it (those up to its
  // fallback_end not built yet); the rest after the last instruction.
  std::vector<Offset<fb::Instruction>> instructions;
  std::vector<Offset<fb::Instruction>> fallback;
  for (const pte::Instruction& i : m.instructions) {
    if (i.kind == fb::InstructionKind::DelegateCall) {
      const size_t end = std::min<size_t>(i.fallback_end, m.fallback.size());
      while (fallback.size() < end)
        fallback.push_back(build_instruction(fbb, m.fallback[fallback.size()]));
    }
    instructions.push_back(build_instruction(fbb, i));
  }
  while (fallback.size() < m.fallback.size()) {
    fallback.push_back(build_instruction(fbb, m.fallback[fallback.size()]));
  }
  std::vector<Offset<fb::Delegate>> delegates;
  for (const pte::Delegate& d : m.delegates) delegates.push_back(build_delegate(fbb, d));
  std::vector<Offset<String>> operators;
  for (const std::string& op : m.operators) operators.push_back(fbb.CreateString(op));
  std::vector<Offset<fb::Arena>> arenas;
  for (const pte::Arena& a : m.arenas) {
    arenas.push_back(fb::CreateArena(fbb, a.size, a.alignment, a.lower_bound));
  }
  const auto state_vector = fbb.CreateVector(state);
  const auto arena_vector = fbb.CreateVector(arenas);
  const auto delegate_vector = fbb.CreateVector(delegates);
  const auto fallback_vector = fbb.CreateVector(fallback);
  const auto instruction_vector = fbb.CreateVector(instructions);
  const auto operator_vector = fbb.CreateVector(operators);
  const auto output_vector = fbb.CreateVector(m.outputs);
  const auto input_vector = fbb.CreateVector(m.inputs);
  const auto value_vector = fbb.CreateVector(values);
  const auto name = optional_string(fbb, m.name);
  Offset<flatbuffers::Vector<Offset<fb::DimSymbol>>> symbol_vector;
  if (!m.symbols.empty()) {
    std::vector<Offset<fb::DimSymbol>> symbols;
    for (const pte::DimSymbol& s : m.symbols) {
      symbols.push_back(fb::CreateDimSymbol(fbb, optional_string(fbb, s.name), s.min, s.max));
    }
    symbol_vector = fbb.CreateVector(symbols);
  }
  Offset<flatbuffers::Vector<Offset<fb::SymbolicInt>>> symbolic_vector;
  if (!m.symbolic_ints.empty()) {
    std::vector<Offset<fb::SymbolicInt>> ints;
    for (const pte::SymbolicInt& s : m.symbolic_ints) {
      ints.push_back(fb::CreateSymbolicInt(fbb, s.value, s.item, s.symbol));
    }
    symbolic_vector = fbb.CreateVector(ints);
  }
  return fb::CreateMethod(fbb, name, value_vector, input_vector, output_vector, operator_vector,
                          instruction_vector, fallback_vector, delegate_vector, arena_vector,
                          state_vector, m.temp_size, symbol_vector, symbolic_vector);
}

/// The part [from, to) of `piece` inside [offset, end); false when they do not meet.
bool piece_within(const pte::AreaBytes& piece, uint64_t offset, uint64_t end, uint64_t* from,
                  uint64_t* to) {
  const uint64_t size = piece.bytes.size();
  if (size == 0 || piece.offset >= end) return false;
  if (piece.offset < offset && offset - piece.offset >= size) return false;
  *from = std::max(offset, piece.offset);
  *to = size >= end - piece.offset ? end : piece.offset + size;
  return true;
}

/// XXH3-64 of the segment area's bytes [offset, +size) as write_pte lays them out; 0 when
/// that range is not inside the area.
uint64_t area_checksum(const pte::File& file, uint64_t offset, uint64_t size) {
  if (!range_within(offset, size, file.area_size)) return 0;
  const uint64_t end = offset + size;
  const pte::AreaBytes* only = nullptr;
  size_t meeting = 0;
  uint64_t from = 0;
  uint64_t to = 0;
  for (const pte::AreaBytes& piece : file.area_contents) {
    if (!piece_within(piece, offset, end, &from, &to)) continue;
    ++meeting;
    only = &piece;
  }
  // The range lies inside one piece (the last one met) that no other piece meets: hash it in
  // place, as for every segment serialize_program writes.
  if (meeting == 1 && from == offset && to == end) {
    return checksum64(only->bytes.data() + (offset - only->offset), size);
  }
  std::vector<uint8_t> bytes(size, 0);
  for (const pte::AreaBytes& piece : file.area_contents) {
    if (!piece_within(piece, offset, end, &from, &to)) continue;
    std::memcpy(bytes.data() + (from - offset), piece.bytes.data() + (from - piece.offset),
                to - from);
  }
  return checksum64(bytes.data(), bytes.size());
}

}  // namespace

PteImage pte_image(const pte::File& file) {
  FlatBufferBuilder fbb(1024);
  std::vector<Offset<fb::Method>> methods;
  for (const pte::Method& m : file.methods) methods.push_back(build_method(fbb, m));
  std::vector<Offset<fb::Segment>> segments;
  for (const pte::Segment& s : file.segments) {
    const uint64_t checksum = s.checksum ? *s.checksum : area_checksum(file, s.offset, s.size);
    segments.push_back(fb::CreateSegment(fbb, s.offset, s.size, s.alignment, checksum));
  }
  std::vector<Offset<fb::KeyValue>> metadata;
  for (const pte::KeyValue& kv : file.metadata) {
    const auto value = fbb.CreateString(kv.value);
    const auto key = optional_string(fbb, kv.key);
    metadata.push_back(fb::CreateKeyValue(fbb, key, value));
  }
  Offset<flatbuffers::Vector<Offset<fb::SharedState>>> shared_vector;
  if (!file.shared_state.empty()) {
    std::vector<Offset<fb::SharedState>> shared;
    for (const pte::SharedState& s : file.shared_state) {
      const auto sizes = fbb.CreateVector(s.sizes);
      const auto name = optional_string(fbb, s.name);
      shared.push_back(fb::CreateSharedState(fbb, name, static_cast<fb::DType>(s.dtype), sizes,
                                             s.init_segment));
    }
    shared_vector = fbb.CreateVector(shared);
  }
  const auto segment_vector = fbb.CreateVector(segments);
  const auto method_vector = fbb.CreateVector(methods);
  const auto metadata_vector = fbb.CreateVector(metadata);
  const auto source_model = fbb.CreateString(file.source_model);
  const auto producer = fbb.CreateString(file.producer);
  const uint32_t version =
      file.version ? *file.version : uint32_t{file.major} * 1000u + uint32_t{file.minor};
  const auto root = fb::CreateProgram(fbb, version, producer, source_model, metadata_vector,
                                      method_vector, segment_vector, shared_vector);
  fb::FinishProgramBuffer(fbb, root);

  // The segment area starts at the first multiple of area_alignment after the FlatBuffer.
  const uint64_t fb_size = fbb.GetSize();
  const uint64_t alignment = std::max<uint64_t>(file.area_alignment, 1);
  PteImage image;
  uint64_t area_offset = 0;
  if (!checked_add(kFileHeaderSize + fb_size, alignment - 1, &area_offset) ||
      !checked_add(area_offset / alignment * alignment, file.area_size, &image.file_size) ||
      area_offset > SIZE_MAX) {
    throw std::invalid_argument("write_pte: a segment area of " + std::to_string(file.area_size) +
                                " bytes aligned to " + std::to_string(alignment) +
                                " does not fit in a file");
  }
  image.area_offset = area_offset / alignment * alignment;
  image.head.assign(static_cast<size_t>(image.area_offset), 0);
  std::memcpy(image.head.data() + kFileHeaderSize, fbb.GetBufferPointer(), fb_size);
  FileHeader header;
  header.version_major = file.major;
  header.version_minor = file.minor;
  header.flatbuffer_offset = kFileHeaderSize;
  header.flatbuffer_size = fb_size;
  header.segment_area_offset = image.area_offset;
  header.segment_area_size = file.area_size;
  encode_file_header(header, image.head.data());
  header.checksum = compute_header_checksum(
      image.head.data(), Span<const uint8_t>(image.head.data() + kFileHeaderSize, fb_size));
  encode_file_header(header, image.head.data());
  return image;
}

std::vector<uint8_t> write_pte(const pte::File& file) {
  PteImage image = pte_image(file);
  if (image.file_size > SIZE_MAX) {
    throw std::invalid_argument("write_pte: a file of " + std::to_string(image.file_size) +
                                " bytes does not fit in memory");
  }
  std::vector<uint8_t> out = std::move(image.head);
  out.resize(static_cast<size_t>(image.file_size), 0);
  for (const pte::AreaBytes& a : file.area_contents) {
    if (a.offset >= file.area_size) continue;
    const uint64_t n = std::min<uint64_t>(a.bytes.size(), file.area_size - a.offset);
    if (n > 0) std::memcpy(out.data() + image.area_offset + a.offset, a.bytes.data(), n);
  }
  return out;
}

namespace {

// --------------------------------------------- serialize_program: ProgramGraph -> pte::File

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

pte::Quant to_pte(const QuantSpec& q) {
  pte::Quant out;
  out.scheme = static_cast<uint8_t>(q.scheme);
  out.block_size = q.block_size;
  out.absmax = q.absmax;
  out.dq_codes = q.dq_codes;
  out.dq_absmax2 = q.dq_absmax2;
  out.dq_table = q.dq_table;
  out.dq_offset = q.dq_offset;
  out.dq_block_size = q.dq_block_size;
  out.scale = q.scale;
  out.granularity = static_cast<uint8_t>(q.granularity);
  out.block_rows = q.block_rows;
  out.block_cols = q.block_cols;
  return out;
}

/// The program's segments in order: their bytes and, for constants, their XXH3-64 (the
/// segment's checksum, so write_pte does not hash the weights a second time). Constant tensors
/// with equal bytes share one segment, across methods too (docs/format.md: a segment may back
/// several constants; a prefill and a decode method of one model then store their weights
/// once): equal size and hash, then the bytes compared. Delegate blobs and initial state values
/// always get their own.
/// The bytes of a constant or a delegate blob, as the segment list holds them.
template <typename Bytes>
Span<const uint8_t> bytes_of(const Bytes& b) {
  return Span<const uint8_t>(b.data(), b.size());
}

class SegmentList {
 public:
  struct Entry {
    Span<const uint8_t> bytes;
    std::optional<uint64_t> checksum;  ///< absent: write_pte computes it
  };

  uint32_t add(Span<const uint8_t> bytes) { return push(bytes, std::nullopt); }
  uint32_t add_constant(Span<const uint8_t> bytes) {
    const uint64_t hash = checksum64(bytes.data(), bytes.size());
    std::vector<uint32_t>& same = constants_[{bytes.size(), hash}];
    for (uint32_t i : same) {
      const Span<const uint8_t> seen = entries_[i].bytes;
      if (bytes.size() == 0 || std::memcmp(seen.data(), bytes.data(), bytes.size()) == 0) return i;
    }
    same.push_back(push(bytes, hash));
    return same.back();
  }
  const std::vector<Entry>& entries() const { return entries_; }

 private:
  uint32_t push(Span<const uint8_t> bytes, std::optional<uint64_t> checksum) {
    entries_.push_back(Entry{bytes, checksum});
    return static_cast<uint32_t>(entries_.size() - 1);
  }

  std::vector<Entry> entries_;
  std::map<std::pair<size_t, uint64_t>, std::vector<uint32_t>> constants_;
};

/// Checks one method and describes it, adding its segments' bytes to `segments`.
class MethodLowering {
 public:
  MethodLowering(const Graph& graph, const MemoryPlan& plan, SegmentList& segments,
                 const SharedStateList& shared)
      : graph_(graph), plan_(plan), segments_(segments), shared_(shared) {}

  pte::Method lower();

 private:
  uint32_t add_segment(Span<const uint8_t> bytes) { return segments_.add(bytes); }
  void check_value_id(int id, const std::string& where) const {
    if (id < 0 || static_cast<size_t>(id) >= graph_.values.size()) {
      fail(graph_, where + " refers to value " + std::to_string(id) + ", out of range (" +
                       std::to_string(graph_.values.size()) + " values)");
    }
  }
  void assign_constant_segments();
  pte::Value lower_value(int id);
  pte::Tensor lower_tensor(int id);
  pte::Instruction kernel_call(int node_index);
  uint32_t op_index(const std::string& op);

  const Graph& graph_;
  const MemoryPlan& plan_;
  SegmentList& segments_;
  const SharedStateList& shared_;
  std::vector<int64_t> constant_segment_;  // per value: segment of a constant root, or -1
  std::vector<bool> is_input_;
  std::vector<std::string> operators_;
};

void MethodLowering::assign_constant_segments() {
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
    constant_segment_[i] = segments_.add_constant(bytes_of(v.data));
  }
}

pte::Tensor MethodLowering::lower_tensor(int id) {
  const Value& v = graph_.values[static_cast<size_t>(id)];
  const std::string where = "value " + std::to_string(id) + " ('" + v.name + "')";
  const uint64_t nbytes = tensor_nbytes(graph_, id);
  const int root = alias_root(graph_, plan_, id);
  const Value& root_value = graph_.values[static_cast<size_t>(root)];
  // An alias's bytes start alias_offset bytes into its root's.
  const uint64_t alias_offset = root != id && static_cast<size_t>(id) < plan_.alias_offset.size()
                                    ? plan_.alias_offset[static_cast<size_t>(id)]
                                    : 0;
  uint64_t alias_end = 0;
  if (!checked_add(alias_offset, nbytes, &alias_end)) {
    fail(graph_, where + " alias offset " + std::to_string(alias_offset) + " overflows");
  }
  if (root != id && root_value.is_tensor() && alias_end > tensor_nbytes(graph_, root)) {
    fail(graph_, where + " views bytes [" + std::to_string(alias_offset) + ", +" +
                     std::to_string(nbytes) + ") of value " + std::to_string(root) +
                     ", which has " + std::to_string(tensor_nbytes(graph_, root)));
  }

  pte::Tensor t;
  t.dtype = static_cast<uint8_t>(v.dtype);
  t.sizes = v.sizes;
  t.storage = static_cast<uint8_t>(fb::StorageKind::Arena);
  if (root_value.is_tensor() && root_value.is_constant) {
    t.storage = static_cast<uint8_t>(fb::StorageKind::Constant);
    if (constant_segment_[static_cast<size_t>(root)] < 0) {
      fail(graph_,
           where + " is a view of constant " + std::to_string(root) + ", which has no segment");
    }
    t.location = static_cast<uint32_t>(constant_segment_[static_cast<size_t>(root)]);
    if (alias_end > root_value.data.size()) {
      fail(graph_, where + " views bytes [" + std::to_string(alias_offset) + ", +" +
                       std::to_string(nbytes) + ") of constant " + std::to_string(root) +
                       ", which has " + std::to_string(root_value.data.size()));
    }
    t.offset = alias_offset;
  } else if (v.is_state && !v.shared_state.empty()) {
    t.storage = static_cast<uint8_t>(fb::StorageKind::SharedState);
    t.location = shared_.index(v.shared_state);
    t.offset = 0;
  } else if (v.caller_bound) {
    if (!is_input_[static_cast<size_t>(id)]) {
      fail(graph_, where + " is caller-bound but not a method input");
    }
    t.storage = static_cast<uint8_t>(fb::StorageKind::Caller);
  } else if (root != id && root_value.caller_bound) {
    fail(graph_, where + " is a view of caller-bound input " + std::to_string(root) +
                     "; the format cannot alias caller memory (plan the view instead)");
  } else if (nbytes == 0) {
    t.offset = 0;  // an empty tensor needs no bytes; offset 0 is inside any arena
  } else {
    // An alias lies at its root's offset plus its alias offset; others at their own.
    const int placed = root != id ? root : id;
    const int64_t planned = static_cast<size_t>(placed) < plan_.offsets.size()
                                ? plan_.offsets[static_cast<size_t>(placed)]
                                : -1;
    if (planned < 0) {
      fail(graph_, where + " is a planned tensor without an arena offset in the plan");
    }
    if (!checked_add(static_cast<uint64_t>(planned), alias_offset, &t.offset)) {
      fail(graph_, where + " arena offset overflows");
    }
    uint64_t end = 0;
    if (!checked_add(t.offset, nbytes, &end) || end > plan_.arena_size) {
      fail(graph_, where + " bytes [" + std::to_string(t.offset) + ", +" + std::to_string(nbytes) +
                       ") exceed the planned arena of " + std::to_string(plan_.arena_size) +
                       " bytes");
    }
  }
  t.name = v.name;
  if (v.is_dynamic()) {
    t.dynamism = static_cast<uint8_t>(fb::ShapeDynamism::DynamicBound);
    t.dim_symbols = std::vector<int32_t>(v.dim_symbols.begin(), v.dim_symbols.end());
  }
  if (v.quant.scheme != QuantSpec::Scheme::None) {
    for (int ref :
         {v.quant.absmax, v.quant.dq_codes, v.quant.dq_absmax2, v.quant.dq_table, v.quant.scale}) {
      if (ref != -1) check_value_id(ref, where + " quant params");
    }
    t.quant = to_pte(v.quant);
  }
  return t;
}

pte::Value MethodLowering::lower_value(int id) {
  const Value& v = graph_.values[static_cast<size_t>(id)];
  pte::Value out;
  switch (v.kind) {
    case Value::Kind::Tensor:
      out.type = fb::Value::Tensor;
      out.tensor = lower_tensor(id);
      break;
    case Value::Kind::Int:
      out.type = fb::Value::Int;
      out.int_value = v.int_value;
      break;
    case Value::Kind::Double:
      out.type = fb::Value::Double;
      out.double_value = v.double_value;
      break;
    case Value::Kind::Bool:
      out.type = fb::Value::Bool;
      out.bool_value = v.bool_value;
      break;
    case Value::Kind::IntList:
      out.type = fb::Value::IntList;
      out.ints = v.ints;
      break;
    case Value::Kind::DoubleList:
      out.type = fb::Value::DoubleList;
      out.doubles = v.doubles;
      break;
    case Value::Kind::String:
      out.type = fb::Value::String;
      out.string_value = v.string_value;
      break;
    case Value::Kind::None:
      out.type = fb::Value::None;
      break;
    case Value::Kind::TensorList:
      for (int item : v.tensors) {
        check_value_id(item, "tensor list value " + std::to_string(id));
        if (!graph_.values[static_cast<size_t>(item)].is_tensor()) {
          fail(graph_, "tensor list value " + std::to_string(id) + " holds value " +
                           std::to_string(item) + ", which is not a tensor");
        }
      }
      out.type = fb::Value::TensorList;
      out.items.assign(v.tensors.begin(), v.tensors.end());
      break;
  }
  return out;
}

uint32_t MethodLowering::op_index(const std::string& op) {
  for (size_t i = 0; i < operators_.size(); ++i) {
    if (operators_[i] == op) return static_cast<uint32_t>(i);
  }
  operators_.push_back(op);
  return static_cast<uint32_t>(operators_.size() - 1);
}

pte::Instruction MethodLowering::kernel_call(int node_index) {
  const Node& node = graph_.nodes[static_cast<size_t>(node_index)];
  if (node.op.empty()) fail(graph_, "node " + std::to_string(node_index) + " has no operator");
  pte::Instruction call;
  call.kind = fb::InstructionKind::KernelCall;
  for (int a : node.args) {
    check_value_id(a, "node " + std::to_string(node_index) + " (" + node.op + ")");
    call.args.push_back(a);
  }
  for (int o : node.outputs) {
    check_value_id(o, "node " + std::to_string(node_index) + " (" + node.op + ")");
    call.args.push_back(o);
  }
  call.index = op_index(node.op);
  call.debug_name = node.debug_name;
  return call;
}

pte::Method MethodLowering::lower() {
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

  pte::Method m;
  m.name = graph_.name;

  // Segments: constants (in value order; equal bytes share one), then delegate blobs, then
  // state initial values.
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
  for (const DelegateRegion& region : graph_.delegates) {
    pte::Delegate d;
    d.backend = region.backend;
    d.segment = add_segment(bytes_of(region.blob));
    for (const auto& spec : region.compile_specs) {
      d.compile_specs.push_back(pte::CompileSpec{spec.first, spec.second});
    }
    m.delegates.push_back(std::move(d));
  }

  // State tensors.
  for (size_t i = 0; i < num_values; ++i) {
    const Value& v = graph_.values[i];
    if (!v.is_tensor() || !v.is_state) continue;
    if (v.is_constant || v.caller_bound) {
      fail(graph_, "state value " + std::to_string(i) + " ('" + v.name +
                       "') cannot be constant or caller-bound");
    }
    int32_t init = -1;
    if (!v.data.empty() && v.shared_state.empty()) {  // shared: the program's entry has it
      const uint64_t nbytes = tensor_nbytes(graph_, static_cast<int>(i));
      if (v.data.size() != nbytes) {
        fail(graph_, "state value " + std::to_string(i) + " ('" + v.name + "') initial value has " +
                         std::to_string(v.data.size()) + " bytes, needs " + std::to_string(nbytes));
      }
      init = static_cast<int32_t>(add_segment(bytes_of(v.data)));
    }
    m.state.push_back(pte::StateTensor{static_cast<uint32_t>(i), init});
  }

  m.values.reserve(num_values);
  for (size_t i = 0; i < num_values; ++i) m.values.push_back(lower_value(static_cast<int>(i)));

  // Instructions: a region becomes one DelegateCall at its first node; its nodes become
  // kernel calls in fallback_instructions.
  for (size_t n = 0; n < graph_.nodes.size(); ++n) {
    const int r = region_of[n];
    if (r < 0) {
      m.instructions.push_back(kernel_call(static_cast<int>(n)));
      continue;
    }
    const DelegateRegion& region = graph_.delegates[static_cast<size_t>(r)];
    if (static_cast<int>(n) != region.nodes.front()) continue;
    pte::Instruction call;
    call.kind = fb::InstructionKind::DelegateCall;
    call.index = static_cast<uint32_t>(r);
    call.fallback_begin = static_cast<uint32_t>(m.fallback.size());
    for (int node : region.nodes) m.fallback.push_back(kernel_call(node));
    call.fallback_end = static_cast<uint32_t>(m.fallback.size());
    call.args.assign(region.inputs.begin(), region.inputs.end());
    call.args.insert(call.args.end(), region.outputs.begin(), region.outputs.end());
    call.debug_name = region.backend + "[";
    for (size_t k = 0; k < region.nodes.size(); ++k) {
      const Node& node = graph_.nodes[static_cast<size_t>(region.nodes[k])];
      call.debug_name +=
          (k == 0 ? "" : ",") + (node.debug_name.empty() ? node.op : node.debug_name);
      if (call.debug_name.size() > 200) {
        call.debug_name += ",...";
        break;
      }
    }
    call.debug_name += "]";
    m.instructions.push_back(std::move(call));
  }

  m.operators = operators_;
  if (plan_.lower_bound > plan_.arena_size) {
    fail(graph_, "the plan's lower bound " + std::to_string(plan_.lower_bound) +
                     " exceeds its arena size " + std::to_string(plan_.arena_size));
  }
  m.arenas = {pte::Arena{plan_.arena_size, plan_.alignment, plan_.lower_bound}};
  m.inputs.assign(graph_.inputs.begin(), graph_.inputs.end());
  m.outputs.assign(graph_.outputs.begin(), graph_.outputs.end());
  m.temp_size = plan_.temp_size;
  for (const DimSymbol& s : graph_.symbols)
    m.symbols.push_back(pte::DimSymbol{s.name, s.min, s.max});
  for (size_t i = 0; i < num_values; ++i) {
    const std::vector<int>& syms = graph_.values[i].int_symbols;
    const bool is_int = graph_.values[i].kind == Value::Kind::Int;
    for (size_t k = 0; k < syms.size(); ++k) {
      if (syms[k] < 0) continue;
      m.symbolic_ints.push_back(pte::SymbolicInt{static_cast<uint32_t>(i),
                                                 is_int ? -1 : static_cast<int32_t>(k),
                                                 static_cast<uint32_t>(syms[k])});
    }
  }
  return m;
}

}  // namespace

namespace {

/// The file serialize_program writes, its segment area borrowing the program's bytes.
pte::File describe_program(const ProgramGraph& program, const std::vector<MemoryPlan>& plans,
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

  pte::File file;
  // A file says the newest minor version whose features it uses (1.1: dynamic shapes, 1.2:
  // shared state), so that a program without them stays a 1.0 file any 1.x runtime reads.
  const SharedStateList shared(program);
  file.minor = 0;
  for (const Graph& g : program.methods) {
    if (!g.symbols.empty()) file.minor = kFormatMinorDynamicShapes;
  }
  if (!shared.empty()) file.minor = kFormatMinorSharedState;
  file.producer = program.producer;
  file.source_model = program.source_model;
  for (const auto& kv : program.metadata)
    file.metadata.push_back(pte::KeyValue{kv.first, kv.second});
  SegmentList segment_list;
  for (size_t i = 0; i < program.methods.size(); ++i) {
    file.methods.push_back(
        MethodLowering(program.methods[i], plans[i], segment_list, shared).lower());
  }
  // Shared state entries, their initial values after every method's segments.
  for (const SharedStateList::Entry& e : shared.entries()) {
    const Value& v = e.tensor();
    pte::SharedState s;
    s.name = v.shared_state;
    s.dtype = static_cast<uint8_t>(v.dtype);
    s.sizes = v.sizes;
    if (!v.data.empty()) {
      const uint64_t nbytes = tensor_nbytes(*e.graph, e.value);
      if (v.data.size() != nbytes) {
        fail(*e.graph, "shared state '" + v.shared_state + "' initial value has " +
                           std::to_string(v.data.size()) + " bytes, needs " +
                           std::to_string(nbytes));
      }
      s.init_segment = static_cast<int32_t>(segment_list.add(bytes_of(v.data)));
    }
    file.shared_state.push_back(std::move(s));
  }

  // Segment layout: each at the next multiple of the alignment; write_pte checksums them.
  for (const SegmentList::Entry& entry : segment_list.entries()) {
    const Span<const uint8_t> bytes = entry.bytes;
    pte::Segment seg;
    seg.size = bytes.size();
    seg.checksum = entry.checksum;
    seg.alignment = static_cast<uint32_t>(alignment);
    if (!checked_align_up(file.area_size, alignment, &seg.offset) ||
        !checked_add(seg.offset, seg.size, &file.area_size)) {
      throw std::invalid_argument("serialize: segment area size overflows");
    }
    file.area_contents.push_back(pte::AreaBytes{seg.offset, bytes});
    file.segments.push_back(seg);
  }
  file.area_alignment = alignment;
  return file;
}

}  // namespace

std::vector<uint8_t> serialize_program(const ProgramGraph& program,
                                       const std::vector<MemoryPlan>& plans,
                                       const SerializeOptions& options) {
  return write_pte(describe_program(program, plans, options));
}

uint64_t serialize_program_to_file(const ProgramGraph& program,
                                   const std::vector<MemoryPlan>& plans, const std::string& path,
                                   const SerializeOptions& options) {
  return write_pte_file(describe_program(program, plans, options), path);
}


}  // namespace tern::compiler
