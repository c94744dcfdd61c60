// Program::load: acceptance of serializer output and rejection of every kind of bad file.
#include "runtime/executor/program.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <ostream>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "runtime/loader/buffer_data_loader.h"
#include "runtime/loader/file_data_loader.h"
#include "runtime/loader/mmap_data_loader.h"
#include "schema/program_generated.h"
#include "tests/compiler/serializer_test_util.h"
#include "tests/executor/raw_program.h"
#include "tools/compiler/serializer.h"

namespace tern {
namespace {

using compiler::Graph;
using compiler::MemoryPlan;
using compiler::Node;
using compiler::ProgramGraph;
using compiler::Value;
using testing::RawArena;
using testing::RawDelegate;
using testing::RawInstruction;
using testing::RawMethod;
using testing::RawProgram;
using testing::RawQuant;
using testing::RawSegment;
using testing::RawState;
using testing::RawValue;

using testing::read_u64;
using testing::tensor;

Value constant_f32(const std::string& name, std::vector<int64_t> sizes, float first) {
  Value v = tensor(name, std::move(sizes));
  v.is_constant = true;
  size_t numel = 1;
  for (int64_t s : v.sizes) numel *= static_cast<size_t>(s);
  std::vector<float> values(numel);
  for (size_t i = 0; i < numel; ++i) values[i] = first + static_cast<float>(i);
  std::vector<uint8_t>& bytes = v.data.mutable_vector();
  bytes.resize(numel * 4);
  std::memcpy(bytes.data(), values.data(), bytes.size());
  return v;
}

/// forward(x f32[2,3]) -> y f32[2,4] = add(matmul(x, w f32[3,4]), b f32[4], alpha=1)
/// with a hand-made plan: x @0 (24 B), h @64 (32 B), y @128 (32 B); arena 192 bytes.
using Sample = testing::PlannedProgram;

Sample sample() {
  Graph g;
  g.values.push_back(tensor("x", {2, 3}));           // 0
  g.values.push_back(constant_f32("w", {3, 4}, 1));  // 1
  g.values.push_back(constant_f32("b", {4}, 100));   // 2
  g.values.push_back(tensor("h", {2, 4}));           // 3
  g.values.push_back(tensor("y", {2, 4}));           // 4
  Value alpha;
  alpha.kind = Value::Kind::Int;
  alpha.int_value = 1;
  g.values.push_back(alpha);  // 5
  g.nodes.push_back(Node{"tern::matmul", {0, 1}, {3}, "fc"});
  g.nodes.push_back(Node{"tern::add", {3, 2, 5}, {4}, "bias"});
  g.inputs = {0};
  g.outputs = {4};
  MemoryPlan plan;
  plan.arena_size = 192;
  plan.lower_bound = 192;
  plan.offsets = {0, -1, -1, 64, 128, -1};
  plan.alias_of = {-1, -1, -1, -1, -1, -1};
  plan.lifetimes.resize(6);
  Sample s;
  s.program.source_model = "sample";
  s.program.methods.push_back(g);
  s.plans.push_back(plan);
  return s;
}

std::vector<uint8_t> sample_file() {
  Sample s = sample();
  return compiler::serialize_program(s.program, s.plans);
}

/// Loads `bytes` from a 64-byte aligned copy; returns the error (Ok on success).
Error load_error(const std::vector<uint8_t>& bytes,
                 Program::Verification verification = Program::Verification::Full) {
  std::vector<uint64_t> aligned((bytes.size() + 7) / 8 + 8);
  uint8_t* base = reinterpret_cast<uint8_t*>(aligned.data());
  while (reinterpret_cast<uintptr_t>(base) % 64 != 0) base += 8;
  if (!bytes.empty()) std::memcpy(base, bytes.data(), bytes.size());
  BufferDataLoader loader(base, bytes.size());
  Program::LoadOptions options;
  options.verification = verification;
  auto program = Program::load(&loader, options);
  return program.ok() ? Error::Ok : program.error();
}

#define EXPECT_LOAD_ERROR(bytes, code, substring)                                   \
  do {                                                                              \
    EXPECT_EQ(load_error(bytes), Error::code) << last_error_message();              \
    EXPECT_NE(std::string(last_error_message()).find(substring), std::string::npos) \
        << "message: " << last_error_message();                                     \
  } while (0)

// ---------------------------------------------------------------- serializer output accepted

TEST(Program, LoadsSerializedProgram) {
  const auto bytes = sample_file();
  BufferDataLoader loader(bytes.data(), bytes.size());
  auto program = Program::load(&loader);
  ASSERT_TRUE(program.ok()) << last_error_message();
  EXPECT_EQ(program->num_methods(), 1u);
  EXPECT_STREQ(*program->method_name(0), "forward");
  EXPECT_EQ(program->num_segments(), 2u);  // w and b
  auto w = program->segment_data(0);
  ASSERT_TRUE(w.ok());
  ASSERT_EQ(w->size(), 48u);
  float first = 0;
  std::memcpy(&first, w->data(), 4);
  EXPECT_EQ(first, 1.0f);
  auto b = program->segment_data(1);
  ASSERT_TRUE(b.ok());
  ASSERT_EQ(b->size(), 16u);
  std::memcpy(&first, b->data(), 4);
  EXPECT_EQ(first, 100.0f);
  EXPECT_EQ(program->verify_segment_checksums(), Error::Ok);

  auto meta = program->method_meta("forward");
  ASSERT_TRUE(meta.ok()) << last_error_message();
  EXPECT_EQ(meta->num_inputs(), 1u);
  EXPECT_EQ(meta->num_outputs(), 1u);
  EXPECT_EQ(meta->num_instructions(), 2u);
  EXPECT_EQ(meta->num_arenas(), 1u);
  EXPECT_EQ(*meta->arena_size(0), 192u);
  auto in = meta->input_tensor_info(0);
  ASSERT_TRUE(in.ok());
  EXPECT_EQ(in->nbytes, 24u);
  EXPECT_STREQ(in->name, "x");
}

TEST(Program, LoadsThroughFileAndMmapLoaders) {
  const auto bytes = sample_file();
  std::string path =
      ::testing::TempDir() + "tern_program_test_" + std::to_string(getpid()) + ".pte";
  compiler::write_file(path, bytes);
  {
    auto file = FileDataLoader::from(path.c_str());
    ASSERT_TRUE(file.ok());
    auto program = Program::load(&file.get());
    ASSERT_TRUE(program.ok()) << last_error_message();
    auto w = program->segment_data(0);
    ASSERT_TRUE(w.ok());
    EXPECT_EQ(reinterpret_cast<uintptr_t>(w->data()) % 64, 0u);
  }
  {
    auto mmap = MmapDataLoader::from(path.c_str());
    ASSERT_TRUE(mmap.ok());
    auto program = Program::load(&mmap.get());
    ASSERT_TRUE(program.ok()) << last_error_message();
    auto w = program->segment_data(0);
    ASSERT_TRUE(w.ok());
    EXPECT_EQ(reinterpret_cast<uintptr_t>(w->data()) % 64, 0u);
  }
  std::remove(path.c_str());
}

TEST(Program, LoadsFromAnUnalignedBuffer) {
  const auto bytes = sample_file();
  std::vector<uint8_t> shifted(bytes.size() + 1);
  std::memcpy(shifted.data() + 1, bytes.data(), bytes.size());
  BufferDataLoader loader(shifted.data() + 1, bytes.size());
  auto program = Program::load(&loader);
  ASSERT_TRUE(program.ok()) << last_error_message();
  auto w = program->segment_data(0);
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(w->data()) % 64, 0u);
}

TEST(Program, StaysValidWhenMoved) {
  const auto bytes = sample_file();
  BufferDataLoader loader(bytes.data(), bytes.size());
  auto loaded = Program::load(&loader);
  ASSERT_TRUE(loaded.ok());
  Program moved(std::move(loaded.get()));
  Program again = std::move(moved);
  EXPECT_EQ(again.num_methods(), 1u);
  auto meta = again.method_meta("forward");
  ASSERT_TRUE(meta.ok());
  EXPECT_EQ(meta->num_instructions(), 2u);
  EXPECT_EQ(again.verify_segment_checksums(), Error::Ok);
}

TEST(Program, LookupErrors) {
  const auto bytes = sample_file();
  BufferDataLoader loader(bytes.data(), bytes.size());
  auto program = Program::load(&loader);
  ASSERT_TRUE(program.ok());
  auto name = program->method_name(3);
  EXPECT_EQ(name.error(), Error::InvalidArgument);
  auto meta = program->method_meta("decode");
  EXPECT_EQ(meta.error(), Error::NotFound);
  EXPECT_NE(std::string(last_error_message()).find("'decode'"), std::string::npos);
  EXPECT_NE(std::string(last_error_message()).find("'forward'"), std::string::npos);
  EXPECT_EQ(program->segment_data(2).error(), Error::InvalidArgument);
  EXPECT_EQ(Program::load(nullptr).error(), Error::InvalidArgument);
}

// ---------------------------------------------------------------- whole-file damage

TEST(Program, RefusesTruncatedFiles) {
  const auto bytes = sample_file();
  const uint64_t fb_end = 64 + read_u64(bytes, 24);
  const uint64_t area = read_u64(bytes, 32);
  const size_t points[] = {1,
                           7,
                           8,
                           40,
                           63,
                           64,
                           65,
                           100,
                           static_cast<size_t>(fb_end) - 1,
                           static_cast<size_t>(fb_end),
                           static_cast<size_t>(area),
                           static_cast<size_t>(area) + 10,
                           bytes.size() - 1};
  for (size_t n : points) {
    ASSERT_LT(n, bytes.size());
    std::vector<uint8_t> cut(bytes.begin(), bytes.begin() + static_cast<long>(n));
    EXPECT_EQ(load_error(cut), Error::AccessFailed)
        << "truncated at " << n << ": " << last_error_message();
    EXPECT_NE(std::string(last_error_message()).find(std::to_string(n)), std::string::npos)
        << "truncated at " << n << ": " << last_error_message();
  }
  EXPECT_LOAD_ERROR(std::vector<uint8_t>(), NotATernProgram, "empty");
}

TEST(Program, RefusesBadMagic) {
  auto bytes = sample_file();
  bytes[0] = 'X';
  EXPECT_LOAD_ERROR(bytes, NotATernProgram, "not a tern program");
  const std::vector<uint8_t> zip = {'P', 'K', 3, 4, 20, 0, 0, 0, 8, 0};
  EXPECT_LOAD_ERROR(zip, NotATernProgram, "50 4b 03 04");
}

TEST(Program, RefusesAnExecuTorchLikeFile) {
  std::vector<uint8_t> bytes(512, 0);
  bytes[0] = 0x20;
  std::memcpy(bytes.data() + 4, "ET12eh00", 8);
  EXPECT_LOAD_ERROR(bytes, NotATernProgram, "ExecuTorch program (FlatBuffer identifier ET12)");
}

TEST(Program, RefusesANewerMajorVersion) {
  auto bytes = sample_file();
  bytes[8] = static_cast<uint8_t>(kFormatVersionMajor + 1);
  EXPECT_LOAD_ERROR(bytes, VersionMismatch,
                    std::to_string(kFormatVersionMajor + 1) + ".0, newer than this runtime's " +
                        std::to_string(kFormatVersionMajor));
}

TEST(Program, RefusesAWrongHeaderChecksum) {
  auto bytes = sample_file();
  const uint64_t fb_size = read_u64(bytes, 24);
  bytes[64 + fb_size / 2] ^= 0x40;
  EXPECT_LOAD_ERROR(bytes, ChecksumMismatch, "header checksum");
  bytes = sample_file();
  bytes[48] ^= 1;  // the checksum field itself
  EXPECT_LOAD_ERROR(bytes, ChecksumMismatch, "header checksum");
}

TEST(Program, RefusesAWrongSegmentChecksumOnlyWithFullVerification) {
  auto bytes = sample_file();
  const uint64_t area = read_u64(bytes, 32);
  bytes[area + 5] ^= 0x01;  // a byte of w (segment 0)
  EXPECT_EQ(load_error(bytes, Program::Verification::Structure), Error::Ok) << last_error_message();
  EXPECT_LOAD_ERROR(bytes, ChecksumMismatch, "segment 0");
  EXPECT_NE(std::string(last_error_message()).find("expected 0x"), std::string::npos);

  BufferDataLoader loader(bytes.data(), bytes.size());
  Program::LoadOptions options;
  options.verification = Program::Verification::Structure;
  auto program = Program::load(&loader, options);
  ASSERT_TRUE(program.ok());
  EXPECT_EQ(program->verify_segment_checksums(), Error::ChecksumMismatch);
}

TEST(Program, RefusesAFlatBufferThatFailsTheVerifier) {
  auto bytes = sample_file();
  const uint64_t fb_size = read_u64(bytes, 24);
  // The root table offset points past the end of the FlatBuffer.
  bytes[64] = 0xf0;
  bytes[65] = 0xff;
  bytes[66] = 0xff;
  bytes[67] = 0x0f;
  testing::refresh_header_checksum(bytes);
  EXPECT_LOAD_ERROR(bytes, InvalidProgram, "FlatBuffers verifier");
  // A wrong identifier.
  bytes = sample_file();
  std::memcpy(bytes.data() + 68, "XXXX", 4);
  testing::refresh_header_checksum(bytes);
  EXPECT_LOAD_ERROR(bytes, InvalidProgram, "identifier is \"XXXX\"");
  (void)fb_size;
}

TEST(Program, SurvivesRandomCorruptionOfTheStructure) {
  // Random byte edits inside the FlatBuffer with a valid header checksum: every load must
  // return (Ok or an error), never crash or read out of bounds (run under ASan in CI).
  const auto original = sample_file();
  const uint64_t fb_size = read_u64(original, 24);
  std::mt19937 rng(1234);
  int refused = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    auto bytes = original;
    const int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits; ++e) {
      bytes[64 + rng() % fb_size] = static_cast<uint8_t>(rng());
    }
    testing::refresh_header_checksum(bytes);
    const Error error = load_error(bytes);
    if (error != Error::Ok) {
      ++refused;
      EXPECT_TRUE(error == Error::InvalidProgram || error == Error::ChecksumMismatch)
          << to_string(error) << ": " << last_error_message();
      EXPECT_NE(std::string(last_error_message()), "");
    }
  }
  EXPECT_GT(refused, 0);
}

// ---------------------------------------------------------------- hand-built structures

TEST(Program, ValidRawProgramLoads) {
  const auto bytes = testing::assemble(testing::valid_raw_program());
  EXPECT_EQ(load_error(bytes), Error::Ok) << last_error_message();
}

RawMethod& with_seq(RawProgram& p);

TEST(Program, ValidDynamicRawProgramLoads) {
  RawProgram p = testing::valid_raw_program();
  with_seq(p).symbolic_ints = {compiler::pte::SymbolicInt{3, -1, 0}};
  EXPECT_EQ(load_error(testing::assemble(p)), Error::Ok) << last_error_message();
}

TEST(Program, Format10FileWithoutDynamicShapesLoads) {
  // A 1.0 file (what every 1.0 writer produced) still loads in this 1.1 runtime.
  RawProgram p = testing::valid_raw_program();
  p.minor = 0;
  EXPECT_EQ(load_error(testing::assemble(p)), Error::Ok) << last_error_message();
}

struct Corruption {
  const char* what;
  std::function<void(RawProgram&)> edit;
  const char* message;
};

void PrintTo(const Corruption& c, std::ostream* os) { *os << c.what; }

RawMethod& forward(RawProgram& p) { return p.methods[0]; }

/// Makes input 0's dim 0 ([2, 3]) a valid bounded-dynamic dim "seq" in [1, 2].
RawMethod& with_seq(RawProgram& p) {
  RawMethod& m = forward(p);
  m.symbols = {compiler::pte::DimSymbol{std::string("seq"), 1, 2}};
  m.values[0].tensor.dynamism = 1;
  m.values[0].tensor.dim_symbols = std::vector<int32_t>{0, -1};
  return m;
}

class InvalidStructure : public ::testing::TestWithParam<Corruption> {};

TEST_P(InvalidStructure, IsRefusedWithAMessage) {
  RawProgram p = testing::valid_raw_program();
  GetParam().edit(p);
  EXPECT_LOAD_ERROR(testing::assemble(p), InvalidProgram, GetParam().message);
}

const Corruption kCorruptions[] = {
    // Tensors.
    {"TensorBeyondArena", [](RawProgram& p) { forward(p).values[2].tensor.offset = 112; },
     "method 'forward' value 2: tensor bytes [112, +32) exceed arena 0 of 128 bytes"},
    {"ArenaOutOfRange", [](RawProgram& p) { forward(p).values[0].tensor.location = 1; },
     "method 'forward' value 0: arena 1 out of range (1 arenas)"},
    {"HugeArenaOffset", [](RawProgram& p) { forward(p).values[2].tensor.offset = ~0ull - 8; },
     "exceed arena 0 of 128 bytes"},
    {"ConstantSegmentOutOfRange", [](RawProgram& p) { forward(p).values[1].tensor.location = 3; },
     "value 1: constant segment 3 out of range (1 segments)"},
    {"ConstantBeyondSegment", [](RawProgram& p) { forward(p).values[1].tensor.offset = 4; },
     "value 1: tensor bytes [4, +48) exceed segment 0 of 48 bytes"},
    {"NegativeSize",
     [](RawProgram& p) {
       forward(p).values[0].tensor.sizes = {2, -3};
     },
     "value 0: size -3 of dim 1 is negative"},
    {"RankTooLarge",
     [](RawProgram& p) { forward(p).values[0].tensor.sizes = std::vector<int64_t>(9, 1); },
     "value 0: rank 9 exceeds the maximum rank 8"},
    {"NumelOverflow",
     [](RawProgram& p) {
       forward(p).values[0].tensor.sizes = {int64_t{1} << 40, int64_t{1} << 40};
     },
     "value 0: element count overflows"},
    {"NbytesOverflow",
     [](RawProgram& p) { forward(p).values[0].tensor.sizes = {int64_t{1} << 62}; },
     "value 0: byte size of"},
    {"UnknownDtype", [](RawProgram& p) { forward(p).values[0].tensor.dtype = 99; },
     "value 0: unknown dtype 99"},
    {"DimOrderNotAPermutation",
     [](RawProgram& p) {
       forward(p).values[0].tensor.dim_order = std::vector<uint8_t>{0, 0};
     },
     "value 0: dim order entry 1 is 0; not a permutation"},
    {"DimOrderWrongLength",
     [](RawProgram& p) { forward(p).values[0].tensor.dim_order = std::vector<uint8_t>{0}; },
     "value 0: dim order has 1 entries for rank 2"},
    {"MisalignedArenaOffset", [](RawProgram& p) { forward(p).values[2].tensor.offset = 66; },
     "value 2: offset 66 in arena 0 is not a multiple of the 4-byte f32 element"},
    {"UnknownStorage", [](RawProgram& p) { forward(p).values[2].tensor.storage = 7; },
     "value 2: unknown storage kind 7"},
    {"UnknownDynamism", [](RawProgram& p) { forward(p).values[2].tensor.dynamism = 5; },
     "value 2: unknown shape dynamism 5"},
    // Bounded-dynamic shapes (format 1.1, docs/dynamic-shapes.md); with_seq() makes input 0's
    // dim 0 a valid dynamic "seq" <= 2 first.
    {"DynamicDimsWrongLength",
     [](RawProgram& p) { with_seq(p).values[0].tensor.dim_symbols = std::vector<int32_t>{0}; },
     "value 0: a DynamicBound tensor needs one dim_symbols entry per dim: found 1 for rank 2"},
    {"DynamicSymbolOutOfRange",
     [](RawProgram& p) {
       with_seq(p).values[0].tensor.dim_symbols = std::vector<int32_t>{3, -1};
     },
     "value 0: dim 0 names symbol 3, out of range (1 symbols)"},
    {"DynamicSizeIsNotTheBound", [](RawProgram& p) { with_seq(p).symbols[0].max = 5; },
     "value 0: dim 0 is symbol 'seq' with bound 5, but its planned size is 2"},
    {"DynamicConstant",
     [](RawProgram& p) {
       with_seq(p).values[1].tensor.dynamism = 1;
       forward(p).values[1].tensor.dim_symbols = std::vector<int32_t>{-1, -1};
       forward(p).symbols[0].max = 3;
       forward(p).values[0].tensor.dim_symbols = std::vector<int32_t>{-1, 0};
       forward(p).values[1].tensor.dim_symbols = std::vector<int32_t>{0, -1};
     },
     "value 1: a constant tensor cannot have dynamic dims"},
    {"DynamicWithoutDynamicDim",
     [](RawProgram& p) {
       with_seq(p).values[0].tensor.dim_symbols = std::vector<int32_t>{-1, -1};
     },
     "value 0: DynamicBound tensor has no dynamic dim"},
    {"DimSymbolsOnStaticTensor",
     [](RawProgram& p) {
       with_seq(p).values[2].tensor.dim_symbols = std::vector<int32_t>{0, -1};
     },
     "value 2: dim 0 names symbol 0 but the tensor's dynamism is Static"},
    {"SymbolBadBounds", [](RawProgram& p) { with_seq(p).symbols[0].min = 3; },
     "symbol 0 ('seq'): bounds [3, 2] are invalid"},
    {"SymbolWithoutName", [](RawProgram& p) { with_seq(p).symbols[0].name.reset(); },
     "symbol 0: missing or empty name"},
    {"SymbolNotBoundByAnInput",
     [](RawProgram& p) {
       with_seq(p).values[0].tensor.dynamism = 0;
       forward(p).values[0].tensor.dim_symbols.reset();
       forward(p).values[2].tensor.dynamism = 1;
       forward(p).values[2].tensor.dim_symbols = std::vector<int32_t>{0, -1};
     },
     "symbol 0 ('seq'): no method input has a dim with this symbol"},
    {"SymbolicIntNotAnInt",
     [](RawProgram& p) {
       with_seq(p).symbolic_ints = {compiler::pte::SymbolicInt{0, -1, 0}};
     },
     "symbolic int 0: value 0 is not an int"},
    {"SymbolicIntSymbolOutOfRange",
     [](RawProgram& p) {
       with_seq(p).symbolic_ints = {compiler::pte::SymbolicInt{3, -1, 4}};
     },
     "symbolic int 0: symbol 4 out of range (1 symbols)"},
    {"SymbolicIntItemOfAnInt",
     [](RawProgram& p) {
       with_seq(p).symbolic_ints = {compiler::pte::SymbolicInt{3, 0, 0}};
     },
     "symbolic int 0: value 3 is not an int list"},
    {"CallerStorageOnNonInput", [](RawProgram& p) { forward(p).values[2].tensor.storage = 0; },
     "value 2: caller-bound storage is only allowed for method inputs"},
    {"ConstantInput",
     [](RawProgram& p) {
       forward(p).values[0] = testing::raw_f32_tensor({2, 3}, 1, 0, 0);
     },
     "input 0: value 0 is a constant tensor"},
    {"MissingPayload", [](RawProgram& p) { forward(p).values[3].omit_payload = true; },
     "value 3: no value"},
    {"UnknownValueType",
     [](RawProgram& p) { forward(p).values[3].type = static_cast<fb::Value>(42); }, ""},
    {"TensorListItemNotATensor",
     [](RawProgram& p) {
       RawValue list;
       list.type = fb::Value::TensorList;
       list.items = {0, 3};
       forward(p).values.push_back(list);
     },
     "value 4: tensor list item 1 is value 3, a int, not a tensor"},
    {"TensorListItemOutOfRange",
     [](RawProgram& p) {
       RawValue list;
       list.type = fb::Value::TensorList;
       list.items = {42};
       forward(p).values.push_back(list);
     },
     "value 4: tensor list item 0 is value 42, out of range (5 values)"},
    // Inputs, outputs, operators.
    {"InputOutOfRange", [](RawProgram& p) { forward(p).inputs = {9}; },
     "method 'forward' input 0: value index 9 out of range (4 values)"},
    {"OutputOutOfRange",
     [](RawProgram& p) {
       forward(p).outputs = {2, 4};
     },
     "method 'forward' output 1: value index 4 out of range (4 values)"},
    {"EmptyOperatorName", [](RawProgram& p) { forward(p).operators = {""}; },
     "operator 0: missing or empty name"},
    // Instructions.
    {"OperatorOutOfRange", [](RawProgram& p) { forward(p).instructions[0].index = 5; },
     "instruction 0: operator 5 out of range (1 operators)"},
    {"ArgumentOutOfRange",
     [](RawProgram& p) {
       forward(p).instructions[0].args = {0, 1, 9};
     },
     "instruction 0: argument 2 is value 9, out of range (4 values)"},
    {"NegativeArgument", [](RawProgram& p) { forward(p).instructions[0].args = {-1}; },
     "instruction 0: argument 0 is value -1"},
    {"InstructionWithoutKind",
     [](RawProgram& p) { forward(p).instructions[0].kind = fb::InstructionKind::NONE; },
     "instruction 0: no instruction"},
    {"DelegateOutOfRange",
     [](RawProgram& p) {
       RawInstruction call;
       call.kind = fb::InstructionKind::DelegateCall;
       call.index = 0;
       forward(p).instructions = {call};
     },
     "instruction 0: delegate 0 out of range (0 delegates)"},
    {"FallbackRangeOutside",
     [](RawProgram& p) {
       RawInstruction call;
       call.kind = fb::InstructionKind::DelegateCall;
       call.args = {0, 2};
       call.fallback_begin = 0;
       call.fallback_end = 2;
       forward(p).fallback = {forward(p).instructions[0]};
       forward(p).instructions = {call};
       forward(p).delegates = {RawDelegate{"cpu", 0}};
     },
     "instruction 0: fallback range [0, 2) is not inside the 1 fallback instructions"},
    {"FallbackRangeReversed",
     [](RawProgram& p) {
       RawInstruction call;
       call.kind = fb::InstructionKind::DelegateCall;
       call.fallback_begin = 1;
       call.fallback_end = 0;
       forward(p).fallback = {forward(p).instructions[0]};
       forward(p).instructions = {call};
       forward(p).delegates = {RawDelegate{"cpu", 0}};
     },
     "fallback range [1, 0)"},
    {"DelegateCallInsideFallback",
     [](RawProgram& p) {
       RawInstruction call;
       call.kind = fb::InstructionKind::DelegateCall;
       forward(p).fallback = {call};
       forward(p).delegates = {RawDelegate{"cpu", 0}};
     },
     "fallback instruction 0: a fallback may only hold kernel calls"},
    {"FallbackArgumentOutOfRange",
     [](RawProgram& p) {
       RawInstruction bad = forward(p).instructions[0];
       bad.args = {0, 77};
       forward(p).fallback = {bad};
     },
     "fallback instruction 0: argument 1 is value 77"},
    // Delegates and arenas.
    {"DelegateSegmentOutOfRange",
     [](RawProgram& p) {
       forward(p).delegates = {RawDelegate{"cpu", 5}};
     },
     "delegate 0 (cpu): blob segment 5 out of range (1 segments)"},
    {"DelegateWithoutBackend",
     [](RawProgram& p) {
       forward(p).delegates = {RawDelegate{"", 0}};
     },
     "delegate 0: missing backend name"},
    {"ArenaAlignmentNotPowerOfTwo", [](RawProgram& p) { forward(p).arenas[0].alignment = 48; },
     "arena 0: alignment 48 is not a power of two"},
    {"ArenaLowerBoundAboveSize", [](RawProgram& p) { forward(p).arenas[0].lower_bound = 129; },
     "arena 0: lower bound 129 exceeds its size 128"},
    // State.
    {"StateNotInArena",
     [](RawProgram& p) {
       forward(p).state = {RawState{1, -1}};
     },
     "state 0: value 1 must be a tensor in an arena"},
    {"StateNotATensor",
     [](RawProgram& p) {
       forward(p).state = {RawState{3, -1}};
     },
     "state 0: value 3 must be a tensor in an arena"},
    {"StateOutOfRange",
     [](RawProgram& p) {
       forward(p).state = {RawState{8, -1}};
     },
     "state 0: value 8 out of range (4 values)"},
    {"StateTwice",
     [](RawProgram& p) {
       forward(p).state = {RawState{2, -1}, RawState{2, -1}};
     },
     "state 1: value 2 is listed as state twice"},
    {"StateInitSegmentOutOfRange",
     [](RawProgram& p) {
       forward(p).state = {RawState{2, 4}};
     },
     "state 0: init segment 4 out of range (1 segments)"},
    {"StateInitSegmentWrongSize",
     [](RawProgram& p) {
       forward(p).state = {RawState{2, 0}};
     },
     "state 0: init segment 0 has 48 bytes, value 2 needs 32"},
    // Methods and program.
    {"DuplicateMethodNames", [](RawProgram& p) { p.methods.push_back(p.methods[0]); },
     "methods 0 and 1 are both named 'forward'"},
    {"MethodWithoutName", [](RawProgram& p) { forward(p).name.reset(); },
     "method 0: missing or empty name"},
    {"ProgramVersionDisagreesWithHeader", [](RawProgram& p) { p.version = 1005; },
     "program version 1005 does not match the file header's version 1.2 (1002)"},
    // Segments.
    {"SegmentBeyondArea", [](RawProgram& p) { p.segments[0].size = 100; },
     "segment 0: bytes [0, +100) exceed the 48-byte segment area"},
    {"OverlappingSegments",
     [](RawProgram& p) {
       p.area.resize(192);
       p.segments = {RawSegment{0, 100, 64, std::nullopt}, RawSegment{64, 64, 64, std::nullopt}};
     },
     "segment 1: bytes [64, +64) overlap segment 0, which ends at 100"},
    {"MisalignedSegment",
     [](RawProgram& p) {
       p.area.resize(128);
       p.segments.push_back(RawSegment{72, 8, 64, std::nullopt});
     },
     "segment 1: offset 72 is not a multiple of its alignment 64"},
    {"SegmentAlignmentNotPowerOfTwo", [](RawProgram& p) { p.segments[0].alignment = 24; },
     "segment 0: alignment 24 is not a power of two"},
    {"SegmentAreaNotPageAligned", [](RawProgram& p) { p.segments[0].alignment = 4096; },
     "is not a multiple of the segment's alignment 4096"},
};

INSTANTIATE_TEST_SUITE_P(Verifier, InvalidStructure, ::testing::ValuesIn(kCorruptions),
                         [](const ::testing::TestParamInfo<Corruption>& info) {
                           return std::string(info.param.what);
                         });

TEST(Program, EmptySegmentsMayShareAnOffset) {
  RawProgram p = testing::valid_raw_program();
  p.area.resize(128);
  p.segments.push_back(RawSegment{64, 0, 64, std::nullopt});
  p.segments.push_back(RawSegment{64, 64, 64, std::nullopt});
  EXPECT_EQ(load_error(testing::assemble(p)), Error::Ok) << last_error_message();
}

TEST(Program, PageAlignedSegmentsLoad) {
  RawProgram p = testing::valid_raw_program();
  p.area_alignment = 4096;
  p.area.resize(4096 + 48);
  p.segments = {RawSegment{4096, 48, 4096, std::nullopt}};
  EXPECT_EQ(load_error(testing::assemble(p)), Error::Ok) << last_error_message();
}

TEST(Program, StateWithMatchingInitSegmentLoads) {
  RawProgram p = testing::valid_raw_program();
  p.area.resize(96);
  p.segments.push_back(RawSegment{64, 32, 64, std::nullopt});
  forward(p).state = {RawState{2, 1}};
  EXPECT_EQ(load_error(testing::assemble(p)), Error::Ok) << last_error_message();
}

// ---------------------------------------------------------------- quantization parameters

/// Adds an NF4 weight q [2, 64] (64 bytes, segment 1) with absmax f32 [2] (segment 2, 16 bytes
/// so a wrong count still fits), as values 4 and 5.
RawProgram nf4_program() {
  RawProgram p = testing::valid_raw_program();
  p.area.resize(192);
  p.segments.push_back(RawSegment{64, 64, 64, std::nullopt});
  p.segments.push_back(RawSegment{128, 16, 64, std::nullopt});
  RawValue q = testing::raw_f32_tensor({2, 64}, 1, 1, 0);
  q.tensor.dtype = static_cast<uint8_t>(DType::NF4);
  RawQuant quant;
  quant.scheme = static_cast<uint8_t>(fb::QuantScheme::NF4);
  quant.block_size = 64;
  quant.absmax = 5;
  q.tensor.quant = quant;
  forward(p).values.push_back(q);
  forward(p).values.push_back(testing::raw_f32_tensor({2}, 1, 2, 0));
  return p;
}

TEST(Program, Nf4QuantParamsLoad) {
  EXPECT_EQ(load_error(testing::assemble(nf4_program())), Error::Ok) << last_error_message();
}

TEST(Program, Nf4QuantParamsAreChecked) {
  RawProgram p = nf4_program();
  forward(p).values[5].tensor.sizes = {3};
  EXPECT_LOAD_ERROR(testing::assemble(p), InvalidProgram,
                    "value 4: quant absmax (value 5) has 3 elements, expected 2");

  p = nf4_program();
  forward(p).values[4].tensor.quant->absmax = 9;
  EXPECT_LOAD_ERROR(testing::assemble(p), InvalidProgram, "quant absmax is value 9, out of range");

  p = nf4_program();
  forward(p).values[4].tensor.quant->absmax = 2;  // an arena tensor
  EXPECT_LOAD_ERROR(testing::assemble(p), InvalidProgram, "must be a constant tensor");

  p = nf4_program();
  forward(p).values[5].tensor.dtype = static_cast<uint8_t>(DType::F16);
  EXPECT_LOAD_ERROR(testing::assemble(p), InvalidProgram, "has dtype f16, expected f32");

  p = nf4_program();
  forward(p).values[4].tensor.quant->block_size = 48;
  EXPECT_LOAD_ERROR(testing::assemble(p), InvalidProgram, "NF4 block size 48");

  p = nf4_program();
  forward(p).values[4].tensor.dtype = static_cast<uint8_t>(DType::U8);
  forward(p).values[4].tensor.sizes = {2, 32};
  EXPECT_LOAD_ERROR(testing::assemble(p), InvalidProgram, "NF4 quantization on a u8 tensor");

  p = nf4_program();
  forward(p).values[4].tensor.quant->scheme = 17;
  EXPECT_LOAD_ERROR(testing::assemble(p), InvalidProgram, "unknown quantization scheme 17");
}

/// Adds an NF4 double-quant weight q [2, 64] in blocks of 32 (4 blocks; segment 1) with its
/// parameters: dq_codes u8 [4] (segment 2), dq_absmax2 f32 [2] for dq blocks of 2 (segment 3),
/// dq_table f32 [256] (segment 4) — values 4 to 7. Each segment has 16 spare bytes so that a
/// wrong count still fits and the count check, not the bounds check, is what refuses it.
RawProgram nf4_double_quant_program() {
  RawProgram p = testing::valid_raw_program();
  p.area.resize(1344);
  p.segments.push_back(RawSegment{64, 64, 64, std::nullopt});
  p.segments.push_back(RawSegment{128, 16, 64, std::nullopt});
  p.segments.push_back(RawSegment{192, 24, 64, std::nullopt});
  p.segments.push_back(RawSegment{256, 1040, 64, std::nullopt});
  RawValue q = testing::raw_f32_tensor({2, 64}, 1, 1, 0);
  q.tensor.dtype = static_cast<uint8_t>(DType::NF4);
  RawQuant quant;
  quant.scheme = static_cast<uint8_t>(fb::QuantScheme::NF4DoubleQuant);
  quant.block_size = 32;
  quant.dq_codes = 5;
  quant.dq_absmax2 = 6;
  quant.dq_table = 7;
  quant.dq_block_size = 2;
  quant.dq_offset = 0.125f;
  q.tensor.quant = quant;
  forward(p).values.push_back(q);
  RawValue codes = testing::raw_f32_tensor({4}, 1, 2, 0);
  codes.tensor.dtype = static_cast<uint8_t>(DType::U8);
  forward(p).values.push_back(codes);
  forward(p).values.push_back(testing::raw_f32_tensor({2}, 1, 3, 0));
  forward(p).values.push_back(testing::raw_f32_tensor({256}, 1, 4, 0));
  return p;
}

TEST(Program, Nf4DoubleQuantParamsLoad) {
  EXPECT_EQ(load_error(testing::assemble(nf4_double_quant_program())), Error::Ok)
      << last_error_message();
  // 4 blocks in dq blocks of 3: a partial last dq block, still 2 second-level absmax values.
  RawProgram p = nf4_double_quant_program();
  forward(p).values[4].tensor.quant->dq_block_size = 3;
  EXPECT_EQ(load_error(testing::assemble(p)), Error::Ok) << last_error_message();
}

TEST(Program, Nf4DoubleQuantParamsAreChecked) {
  RawProgram p = nf4_double_quant_program();
  forward(p).values[4].tensor.quant->dq_block_size = 0;
  EXPECT_LOAD_ERROR(testing::assemble(p), InvalidProgram,
                    "value 4: double-quant block size is 0");

  p = nf4_double_quant_program();
  forward(p).values[4].tensor.quant->dq_offset = std::numeric_limits<float>::quiet_NaN();
  EXPECT_LOAD_ERROR(testing::assemble(p), InvalidProgram,
                    "value 4: double-quant offset is not finite");

  p = nf4_double_quant_program();
  forward(p).values[4].tensor.quant->dq_offset = std::numeric_limits<float>::infinity();
  EXPECT_LOAD_ERROR(testing::assemble(p), InvalidProgram, "double-quant offset is not finite");

  p = nf4_double_quant_program();
  forward(p).values[5].tensor.sizes = {5};
  EXPECT_LOAD_ERROR(testing::assemble(p), InvalidProgram,
                    "value 4: quant dq_codes (value 5) has 5 elements, expected 4");

  p = nf4_double_quant_program();
  forward(p).values[5].tensor.dtype = static_cast<uint8_t>(DType::F32);
  EXPECT_LOAD_ERROR(testing::assemble(p), InvalidProgram,
                    "quant dq_codes (value 5) has dtype f32, expected u8");

  p = nf4_double_quant_program();
  forward(p).values[4].tensor.quant->dq_block_size = 4;  // 4 blocks: one dq block, not 2
  EXPECT_LOAD_ERROR(testing::assemble(p), InvalidProgram,
                    "value 4: quant dq_absmax2 (value 6) has 2 elements, expected 1");

  p = nf4_double_quant_program();
  forward(p).values[7].tensor.sizes = {255};
  EXPECT_LOAD_ERROR(testing::assemble(p), InvalidProgram,
                    "value 4: quant dq_table (value 7) has 255 elements, expected 256");

  p = nf4_double_quant_program();
  forward(p).values[4].tensor.quant->dq_table = 2;  // an arena tensor
  EXPECT_LOAD_ERROR(testing::assemble(p), InvalidProgram, "must be a constant tensor");

  p = nf4_double_quant_program();
  forward(p).values[4].tensor.quant->dq_absmax2 = 12;
  EXPECT_LOAD_ERROR(testing::assemble(p), InvalidProgram,
                    "quant dq_absmax2 is value 12, out of range");

  p = nf4_double_quant_program();
  forward(p).values[4].tensor.dtype = static_cast<uint8_t>(DType::U8);
  forward(p).values[4].tensor.sizes = {2, 32};
  EXPECT_LOAD_ERROR(testing::assemble(p), InvalidProgram,
                    "value 4: NF4 quantization on a u8 tensor");
}

TEST(Program, Fp8ScalesAreCounted) {
  // FP8 weight [2, 64] per channel: 2 scales; per tensor: 1; blocks of 1x32: 2 * 2 = 4.
  auto make = [](uint8_t granularity, int64_t scales) {
    RawProgram p = nf4_program();
    RawValue& w = forward(p).values[4];
    w.tensor.dtype = static_cast<uint8_t>(DType::FP8E4M3);
    w.tensor.sizes = {2, 32};
    w.tensor.quant = RawQuant{};
    w.tensor.quant->scheme = static_cast<uint8_t>(fb::QuantScheme::FP8);
    w.tensor.quant->granularity = granularity;
    w.tensor.quant->block_rows = 1;
    w.tensor.quant->block_cols = 16;
    w.tensor.quant->scale = 5;
    forward(p).values[5].tensor.sizes = {scales};
    return testing::assemble(p);
  };
  EXPECT_EQ(load_error(make(1, 2)), Error::Ok) << last_error_message();
  EXPECT_EQ(load_error(make(0, 1)), Error::Ok) << last_error_message();
  EXPECT_EQ(load_error(make(2, 4)), Error::Ok) << last_error_message();
  EXPECT_LOAD_ERROR(make(1, 1), InvalidProgram, "quant scale (value 5) has 1 elements, expected 2");
  EXPECT_LOAD_ERROR(make(2, 2), InvalidProgram, "has 2 elements, expected 4");
  EXPECT_LOAD_ERROR(make(9, 2), InvalidProgram, "unknown scale granularity 9");
}

}  // namespace
}  // namespace tern
