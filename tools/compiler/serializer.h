// The serializer: ProgramGraph + memory plans -> .pte bytes (docs/format.md).
//
// Two layers:
// - serialize_program checks a ProgramGraph and its plans, lays out the segments, describes
//   the file as a pte::File and hands it to write_pte;
// - write_pte turns any pte::File into bytes (FlatBuffer, file header with its checksum,
//   segment area), field by field as given, with no checks of its own. Tests use it to write
//   invalid files too (tests/executor/raw_program.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "runtime/core/span.h"
#include "runtime/executor/file_header.h"
#include "schema/program_generated.h"
#include "tools/compiler/graph.h"
#include "tools/compiler/memory_planner.h"

namespace tern::compiler {

struct SerializeOptions {
  /// Alignment of every segment (64 by default; 4096 for page-aligned mmap on request).
  uint32_t segment_alignment = 64;
};

/// Writes a program: file header, FlatBuffer, then one aligned, checksummed segment per
/// constant tensor, per delegate blob and per state initial value. `plans[i]` is the plan of
/// `program.methods[i]`. Throws std::invalid_argument on an inconsistent input.
std::vector<uint8_t> serialize_program(const ProgramGraph& program,
                                       const std::vector<MemoryPlan>& plans,
                                       const SerializeOptions& options = {});

/// serialize_program's file written to `path` as it is laid out, the segments streamed from
/// the program's bytes (never the whole file in memory: a model's weights are not held twice);
/// returns the file's size. Replaces `path` only when the whole file was written (atomic
/// rename); throws std::invalid_argument as serialize_program, std::runtime_error naming the
/// path and the system's reason when writing fails (pte_file_writer.h).
uint64_t serialize_program_to_file(const ProgramGraph& program,
                                   const std::vector<MemoryPlan>& plans, const std::string& path,
                                   const SerializeOptions& options = {});

/// Writes bytes to `path`, replacing it only once they are all written (AtomicFileWriter,
/// pte_file_writer.h); throws std::runtime_error naming the path and the reason on failure.
void write_file(const std::string& path, const std::vector<uint8_t>& bytes);

/// A .pte file described field by field: every field of schema/program.fbs (same names and
/// defaults; Method::fallback is fallback_instructions), the file header's version and the
/// segment area. Nothing is checked or derived except where a comment says so: enumerations
/// are raw bytes and union types the generated enums, both written as given (unknown values
/// too); indices may point anywhere; a union's payload is the one its type names.
namespace pte {

/// tern.fb.QuantParams. Value references are value indices (-1: absent).
struct Quant {
  uint8_t scheme = 0;  ///< fb::QuantScheme
  uint32_t block_size = 64;
  int32_t absmax = -1;
  int32_t dq_codes = -1;
  int32_t dq_absmax2 = -1;
  int32_t dq_table = -1;
  float dq_offset = 0.0f;
  uint32_t dq_block_size = 256;
  int32_t scale = -1;
  uint8_t granularity = 1;  ///< fb::ScaleGranularity (PerChannel)
  uint32_t block_rows = 128;
  uint32_t block_cols = 128;
};

/// tern.fb.Tensor.
struct Tensor {
  uint8_t dtype = 0;  ///< fb::DType (F32)
  std::vector<int64_t> sizes;
  std::optional<std::vector<uint8_t>> dim_order;  ///< absent: contiguous
  uint8_t storage = 2;                            ///< fb::StorageKind (Arena)
  uint32_t location = 0;
  uint64_t offset = 0;
  std::optional<Quant> quant;
  uint8_t dynamism = 0;  ///< fb::ShapeDynamism (Static)
  std::string name;      ///< empty: absent
  std::optional<std::vector<int32_t>> dim_symbols;  ///< absent: not written (format 1.1)
};

/// tern.fb.EValue: `type` selects which of the fields below is the payload. A type that is no
/// member of the union gets an empty table as its payload; omit_payload writes none.
struct Value {
  fb::Value type = fb::Value::Tensor;
  bool omit_payload = false;
  Tensor tensor;
  int64_t int_value = 0;
  double double_value = 0.0;
  bool bool_value = false;
  std::vector<int64_t> ints;    ///< IntList
  std::vector<double> doubles;  ///< DoubleList
  std::string string_value;     ///< String
  std::vector<int32_t> items;   ///< TensorList
};

/// tern.fb.Instruction: a KernelCall{op = index, args} or a DelegateCall{delegate = index, args,
/// fallback_begin, fallback_end}; another kind is written without a payload.
struct Instruction {
  fb::InstructionKind kind = fb::InstructionKind::KernelCall;
  uint32_t index = 0;
  std::vector<int32_t> args;
  uint32_t fallback_begin = 0;
  uint32_t fallback_end = 0;
  std::string debug_name;  ///< empty: absent
};

struct CompileSpec {
  std::optional<std::string> key;
  std::vector<uint8_t> value;
};

struct Delegate {
  std::optional<std::string> backend;
  uint32_t segment = 0;
  std::vector<CompileSpec> compile_specs = {};
};

struct Arena {
  uint64_t size = 0;
  uint32_t alignment = 64;
  uint64_t lower_bound = 0;
};

struct StateTensor {
  uint32_t value = 0;
  int32_t init_segment = -1;
};

/// tern.fb.DimSymbol (format 1.1).
struct DimSymbol {
  std::optional<std::string> name;
  int64_t min = 1;
  int64_t max = 0;
};

/// tern.fb.SymbolicInt (format 1.1).
struct SymbolicInt {
  uint32_t value = 0;
  int32_t item = -1;
  uint32_t symbol = 0;
};

/// tern.fb.SharedState (format 1.2).
struct SharedState {
  std::optional<std::string> name;
  uint8_t dtype = 0;  ///< fb::DType (F32)
  std::vector<int64_t> sizes;
  int32_t init_segment = -1;
};

struct Method {
  std::optional<std::string> name;
  std::vector<Value> values;
  std::vector<uint32_t> inputs;
  std::vector<uint32_t> outputs;
  std::vector<std::string> operators;
  std::vector<Instruction> instructions;
  std::vector<Instruction> fallback;  ///< fallback_instructions
  std::vector<Delegate> delegates;
  std::vector<Arena> arenas;
  std::vector<StateTensor> state;
  uint64_t temp_size = 0;
  std::vector<DimSymbol> symbols;          ///< empty: not written
  std::vector<SymbolicInt> symbolic_ints;  ///< empty: not written
};

/// tern.fb.Segment. An absent checksum is the XXH3-64 of the segment area's bytes
/// [offset, +size), or 0 when that range is not inside the area.
struct Segment {
  uint64_t offset = 0;
  uint64_t size = 0;
  uint32_t alignment = 64;
  std::optional<uint64_t> checksum;
};

struct KeyValue {
  std::optional<std::string> key;
  std::string value;
};

/// Bytes placed in the segment area at `offset` (borrowed: they must outlive write_pte).
struct AreaBytes {
  uint64_t offset = 0;
  Span<const uint8_t> bytes;
};

/// The whole file: header version, the Program table, and the segment area.
struct File {
  uint16_t major = kFormatVersionMajor;  ///< file header version
  uint16_t minor = kFormatVersionMinor;
  std::optional<uint32_t> version;  ///< Program.version; absent: major * 1000 + minor
  std::string producer;
  std::string source_model;
  std::vector<KeyValue> metadata;
  std::vector<Method> methods;
  std::vector<Segment> segments;
  std::vector<SharedState> shared_state;  ///< empty: not written (format 1.2)
  /// The segment area: `area_size` bytes, zero but where area_contents places bytes (later
  /// pieces over earlier ones, cut at area_size), at the first multiple of `area_alignment`
  /// (0 counts as 1) after the FlatBuffer.
  uint64_t area_size = 0;
  std::vector<AreaBytes> area_contents;
  uint64_t area_alignment = 64;
};

}  // namespace pte

/// The bytes of `file`: the 64-byte header (FlatBuffer at 64, its checksum computed), the
/// FlatBuffer (identifier "TRNP"), zero padding, the segment area. Writes what it is given.
std::vector<uint8_t> write_pte(const pte::File& file);

/// The part of `file`'s bytes before its segment area (header, FlatBuffer, padding), where the
/// area starts and the whole file's size: write_pte and write_pte_file (pte_file_writer.h)
/// lay the area out after it.
struct PteImage {
  std::vector<uint8_t> head;
  uint64_t area_offset = 0;
  uint64_t file_size = 0;
};
PteImage pte_image(const pte::File& file);

}  // namespace tern::compiler
