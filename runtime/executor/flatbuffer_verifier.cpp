#include "runtime/executor/flatbuffer_verifier.h"

#include <cstring>

#include "schema/program_generated.h"

namespace tern {
namespace internal {
namespace {

/// What a field holds, as the generated verifier checks it.
enum Kind : uint8_t {
  kScalar,   // VerifyField<T> (target: sizeof(T), also its alignment)
  kString,   // VerifyOffset + VerifyString
  kVector,   // VerifyOffset + VerifyVector of scalars (target: the element size)
  kStrings,  // VerifyOffset + VerifyVector + VerifyVectorOfStrings
  kTables,   // VerifyOffset + VerifyVector + VerifyVectorOfTables (target: the table)
  kTable,    // VerifyOffset + VerifyTable (target: the table)
  kUnion,    // VerifyOffset + Verify<Union> (target: the union; its type field is slot - 2)
};

/// Table and union numbers (targets of kTables, kTable and kUnion fields).
enum Id : uint8_t {
  kProgram,
  kMethod,
  kSegment,
  kKeyValue,
  kEValue,
  kTensor,
  kQuantParams,
  kInt,
  kDouble,
  kBool,
  kIntList,
  kDoubleList,
  kString_,
  kNone,
  kTensorList,
  kInstruction,
  kKernelCall,
  kDelegateCall,
  kDelegate,
  kCompileSpec,
  kArena,
  kStateTensor,
  kDimSymbol,
  kSymbolicInt,
  kSharedState,
  kNumTables,
  kValueUnion = 0,
  kInstructionKindUnion = 1,
};

struct Field {
  uint8_t slot;    // the field's vtable offset (VT_*)
  uint8_t kind;    // Kind
  uint8_t target;  // a size (kScalar, kVector) or the Id of a table or union
};

/// Every field of every table of program.fbs, table after table, in the order of the generated
/// Verify functions. kFirstField[t] .. kFirstField[t + 1] are table t's fields.
constexpr Field kFields[] = {
    // Program
    {fb::Program::VT_VERSION, kScalar, 4},
    {fb::Program::VT_PRODUCER, kString, 0},
    {fb::Program::VT_SOURCE_MODEL, kString, 0},
    {fb::Program::VT_METADATA, kTables, kKeyValue},
    {fb::Program::VT_METHODS, kTables, kMethod},
    {fb::Program::VT_SEGMENTS, kTables, kSegment},
    {fb::Program::VT_SHARED_STATE, kTables, kSharedState},
    // Method
    {fb::Method::VT_NAME, kString, 0},
    {fb::Method::VT_VALUES, kTables, kEValue},
    {fb::Method::VT_INPUTS, kVector, 4},
    {fb::Method::VT_OUTPUTS, kVector, 4},
    {fb::Method::VT_OPERATORS, kStrings, 0},
    {fb::Method::VT_INSTRUCTIONS, kTables, kInstruction},
    {fb::Method::VT_FALLBACK_INSTRUCTIONS, kTables, kInstruction},
    {fb::Method::VT_DELEGATES, kTables, kDelegate},
    {fb::Method::VT_ARENAS, kTables, kArena},
    {fb::Method::VT_STATE, kTables, kStateTensor},
    {fb::Method::VT_TEMP_SIZE, kScalar, 8},
    {fb::Method::VT_SYMBOLS, kTables, kDimSymbol},
    {fb::Method::VT_SYMBOLIC_INTS, kTables, kSymbolicInt},
    // Segment
    {fb::Segment::VT_OFFSET, kScalar, 8},
    {fb::Segment::VT_SIZE, kScalar, 8},
    {fb::Segment::VT_ALIGNMENT, kScalar, 4},
    {fb::Segment::VT_CHECKSUM, kScalar, 8},
    // KeyValue
    {fb::KeyValue::VT_KEY, kString, 0},
    {fb::KeyValue::VT_VALUE, kString, 0},
    // EValue
    {fb::EValue::VT_VALUE_TYPE, kScalar, 1},
    {fb::EValue::VT_VALUE, kUnion, kValueUnion},
    // Tensor
    {fb::Tensor::VT_DTYPE, kScalar, 1},
    {fb::Tensor::VT_SIZES, kVector, 8},
    {fb::Tensor::VT_DIM_ORDER, kVector, 1},
    {fb::Tensor::VT_STORAGE, kScalar, 1},
    {fb::Tensor::VT_LOCATION, kScalar, 4},
    {fb::Tensor::VT_OFFSET, kScalar, 8},
    {fb::Tensor::VT_QUANT, kTable, kQuantParams},
    {fb::Tensor::VT_DYNAMISM, kScalar, 1},
    {fb::Tensor::VT_NAME, kString, 0},
    {fb::Tensor::VT_DIM_SYMBOLS, kVector, 4},
    // QuantParams
    {fb::QuantParams::VT_SCHEME, kScalar, 1},
    {fb::QuantParams::VT_BLOCK_SIZE, kScalar, 4},
    {fb::QuantParams::VT_ABSMAX, kScalar, 4},
    {fb::QuantParams::VT_DQ_CODES, kScalar, 4},
    {fb::QuantParams::VT_DQ_ABSMAX2, kScalar, 4},
    {fb::QuantParams::VT_DQ_TABLE, kScalar, 4},
    {fb::QuantParams::VT_DQ_OFFSET, kScalar, 4},
    {fb::QuantParams::VT_DQ_BLOCK_SIZE, kScalar, 4},
    {fb::QuantParams::VT_SCALE, kScalar, 4},
    {fb::QuantParams::VT_GRANULARITY, kScalar, 1},
    {fb::QuantParams::VT_BLOCK_ROWS, kScalar, 4},
    {fb::QuantParams::VT_BLOCK_COLS, kScalar, 4},
    // Int, Double, Bool, IntList, DoubleList, String (None has no field), TensorList
    {fb::Int::VT_VALUE, kScalar, 8},
    {fb::Double::VT_VALUE, kScalar, 8},
    {fb::Bool::VT_VALUE, kScalar, 1},
    {fb::IntList::VT_ITEMS, kVector, 8},
    {fb::DoubleList::VT_ITEMS, kVector, 8},
    {fb::String::VT_VALUE, kString, 0},
    {fb::TensorList::VT_ITEMS, kVector, 4},
    // Instruction
    {fb::Instruction::VT_KIND_TYPE, kScalar, 1},
    {fb::Instruction::VT_KIND, kUnion, kInstructionKindUnion},
    {fb::Instruction::VT_DEBUG_NAME, kString, 0},
    // KernelCall
    {fb::KernelCall::VT_OP, kScalar, 4},
    {fb::KernelCall::VT_ARGS, kVector, 4},
    // DelegateCall
    {fb::DelegateCall::VT_DELEGATE, kScalar, 4},
    {fb::DelegateCall::VT_ARGS, kVector, 4},
    {fb::DelegateCall::VT_FALLBACK_BEGIN, kScalar, 4},
    {fb::DelegateCall::VT_FALLBACK_END, kScalar, 4},
    // Delegate
    {fb::Delegate::VT_BACKEND, kString, 0},
    {fb::Delegate::VT_SEGMENT, kScalar, 4},
    {fb::Delegate::VT_COMPILE_SPECS, kTables, kCompileSpec},
    // CompileSpec
    {fb::CompileSpec::VT_KEY, kString, 0},
    {fb::CompileSpec::VT_VALUE, kVector, 1},
    // Arena
    {fb::Arena::VT_SIZE, kScalar, 8},
    {fb::Arena::VT_ALIGNMENT, kScalar, 4},
    {fb::Arena::VT_LOWER_BOUND, kScalar, 8},
    // StateTensor
    {fb::StateTensor::VT_VALUE, kScalar, 4},
    {fb::StateTensor::VT_INIT_SEGMENT, kScalar, 4},
    // DimSymbol
    {fb::DimSymbol::VT_NAME, kString, 0},
    {fb::DimSymbol::VT_MIN, kScalar, 8},
    {fb::DimSymbol::VT_MAX, kScalar, 8},
    // SymbolicInt
    {fb::SymbolicInt::VT_VALUE, kScalar, 4},
    {fb::SymbolicInt::VT_ITEM, kScalar, 4},
    {fb::SymbolicInt::VT_SYMBOL, kScalar, 4},
    // SharedState
    {fb::SharedState::VT_NAME, kString, 0},
    {fb::SharedState::VT_DTYPE, kScalar, 1},
    {fb::SharedState::VT_SIZES, kVector, 8},
    {fb::SharedState::VT_INIT_SEGMENT, kScalar, 4},
};

/// Index of each table's first field in kFields (kNumTables + 1 entries).
constexpr uint8_t kFirstField[kNumTables + 1] = {
    0,   // Program: 7 fields
    7,   // Method: 13
    20,  // Segment: 4
    24,  // KeyValue: 2
    26,  // EValue: 2
    28,  // Tensor: 10
    38,  // QuantParams: 12
    50,  // Int
    51,  // Double
    52,  // Bool
    53,  // IntList
    54,  // DoubleList
    55,  // String
    56,  // None: no field
    56,  // TensorList
    57,  // Instruction: 3
    60,  // KernelCall: 2
    62,  // DelegateCall: 4
    66,  // Delegate: 3
    69,  // CompileSpec: 2
    71,  // Arena: 3
    74,  // StateTensor: 2
    76,  // DimSymbol: 3
    79,  // SymbolicInt: 3
    82,  // SharedState: 4
    86,
};
static_assert(sizeof(kFields) / sizeof(kFields[0]) == 86, "kFirstField must cover kFields");

/// The member tables of each union, by type value 1, 2, ... (0 is NONE).
constexpr uint8_t kValueMembers[] = {kTensor,     kInt,     kDouble, kBool,      kIntList,
                                     kDoubleList, kString_, kNone,   kTensorList};
constexpr uint8_t kInstructionKindMembers[] = {kKernelCall, kDelegateCall};
// A union's type field is the field just before it (slot - 2), checked as a 1-byte scalar.
static_assert(fb::EValue::VT_VALUE_TYPE + 2 == fb::EValue::VT_VALUE, "union type slot");
static_assert(fb::Instruction::VT_KIND_TYPE + 2 == fb::Instruction::VT_KIND, "union type slot");
static_assert(static_cast<size_t>(fb::Value::MAX) == sizeof(kValueMembers),
              "every member of union Value must be listed");
static_assert(static_cast<size_t>(fb::InstructionKind::MAX) == sizeof(kInstructionKindMembers),
              "every member of union InstructionKind must be listed");

// FLATBUFFERS_MIN_BUFFER_SIZE: a root offset, a vtable offset and a 2-field vtable.
constexpr size_t kMinBufferSize =
    sizeof(flatbuffers::uoffset_t) + sizeof(flatbuffers::soffset_t) + 2 * sizeof(uint16_t);

class Walker {
 public:
  Walker(const uint8_t* buf, size_t size) : buf_(buf), size_(size) {}

  bool root() {
    if (size_ < kMinBufferSize || size_ < 8 || memcmp(buf_ + 4, fb::ProgramIdentifier(), 4) != 0) {
      return false;
    }
    const size_t table = offset_at(0);
    return table != 0 && verify_table(table, kProgram);
  }

 private:
  // flatbuffers::Verifier::Verify(elem, elem_len).
  bool in(size_t pos, size_t len) const { return len < size_ && pos <= size_ - len; }
  // Verify<T>(elem): aligned to and room for a T.
  bool scalar_at(size_t pos, size_t bytes) const {
    return (pos & (bytes - 1)) == 0 && in(pos, bytes);
  }
  uint32_t u32(size_t pos) const {
    uint32_t v;
    memcpy(&v, buf_ + pos, 4);
    return flatbuffers::EndianScalar(v);
  }
  uint16_t u16(size_t pos) const {
    uint16_t v;
    memcpy(&v, buf_ + pos, 2);
    return flatbuffers::EndianScalar(v);
  }

  // VerifyOffset(start): the position the offset at `pos` points to, 0 when it is bad.
  size_t offset_at(size_t pos) const {
    if (!scalar_at(pos, 4)) return 0;
    const uint32_t o = u32(pos);
    if (o == 0 || static_cast<int32_t>(o) < 0 || !in(pos + o, 1)) return 0;
    return pos + o;
  }

  // VerifyVectorOrString: the length prefix and every element in the buffer. Returns the
  // element count through `count`.
  bool vector_at(size_t pos, size_t elem_size, uint32_t* count) const {
    if (!scalar_at(pos, 4)) return false;
    const uint32_t n = u32(pos);
    if (n >= FLATBUFFERS_MAX_BUFFER_SIZE / elem_size) return false;
    *count = n;
    return in(pos, 4 + elem_size * n);
  }

  // VerifyString: a vector of bytes followed by a zero byte.
  bool string_at(size_t pos) const {
    uint32_t n;
    if (!vector_at(pos, 1, &n)) return false;
    const size_t end = pos + 4 + n;
    return in(end, 1) && buf_[end] == 0;
  }

  // The position of element `i` of a vector of offsets at `pos` (Vector<Offset<T>>::Get).
  size_t element(size_t pos, uint32_t i) const {
    const size_t at = pos + 4 + 4 * static_cast<size_t>(i);
    return at + u32(at);
  }

  // T::Verify for table `id` at `table`.
  bool verify_table(size_t table, uint8_t id) {
    // VerifyTableStart: the vtable offset, the complexity limits, the vtable's size and bounds.
    if (!scalar_at(table, 4)) return false;
    const size_t vtable =
        table - static_cast<size_t>(static_cast<int32_t>(u32(table)));  // wraps like FlatBuffers
    ++depth_;
    ++num_tables_;
    if (depth_ > kFlatbufferMaxDepth || num_tables_ > kFlatbufferMaxTables) return false;
    if (!scalar_at(vtable, 2)) return false;
    const uint16_t vtable_size = u16(vtable);
    if ((vtable_size & 1) != 0 || !in(vtable, vtable_size)) return false;

    for (uint32_t f = kFirstField[id]; f < kFirstField[id + 1]; ++f) {
      const Field field = kFields[f];
      // GetOptionalFieldOffset: absent fields (0, or beyond the vtable) are not checked.
      const uint16_t field_offset = field.slot < vtable_size ? u16(vtable + field.slot) : 0;
      if (field_offset == 0) continue;
      const size_t at = table + field_offset;
      if (field.kind == kScalar) {
        if (!scalar_at(at, field.target)) return false;
        continue;
      }
      const size_t target = offset_at(at);
      if (target == 0) return false;
      uint32_t n = 0;
      switch (field.kind) {
        case kString:
          if (!string_at(target)) return false;
          break;
        case kVector:
          if (!vector_at(target, field.target, &n)) return false;
          break;
        case kStrings:
        case kTables:
          if (!vector_at(target, 4, &n)) return false;
          for (uint32_t i = 0; i < n; ++i) {
            const size_t item = element(target, i);
            if (!(field.kind == kStrings ? string_at(item) : verify_table(item, field.target))) {
              return false;
            }
          }
          break;
        case kTable:
          if (!verify_table(target, field.target)) return false;
          break;
        default: {  // kUnion: the type field (already checked: it comes first) picks the table
          const uint16_t type_offset = u16(vtable + field.slot - 2);
          const uint8_t type = type_offset == 0 ? 0 : buf_[table + type_offset];
          const uint8_t* members =
              field.target == kValueUnion ? kValueMembers : kInstructionKindMembers;
          const uint8_t num_members =
              field.target == kValueUnion ? sizeof(kValueMembers) : sizeof(kInstructionKindMembers);
          // NONE and unknown types verify as true, as in the generated Verify<Union>.
          if (type >= 1 && type <= num_members && !verify_table(target, members[type - 1])) {
            return false;
          }
          break;
        }
      }
    }
    --depth_;  // EndTable
    return true;
  }

  const uint8_t* buf_;
  size_t size_;
  uint32_t depth_ = 0;
  uint32_t num_tables_ = 0;
};

}  // namespace

bool verify_program_flatbuffer(const uint8_t* data, size_t size) {
  return Walker(data, size).root();
}

}  // namespace internal
}  // namespace tern
