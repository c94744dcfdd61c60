// safetensors: a round trip, a hand-made file, and every malformed case with its message.
#include "tools/compiler/safetensors.h"

#include <gtest/gtest.h>

#include "tests/support/temp_path.h"

#include <cstdio>
#include <fstream>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace tern::compiler {
namespace {

// A file built by hand: 8-byte little-endian header length, the header text, then `data`.
std::vector<uint8_t> make_file(const std::string& header, const std::vector<uint8_t>& data) {
  std::vector<uint8_t> out;
  const uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<uint8_t>(n >> (8 * i)));
  out.insert(out.end(), header.begin(), header.end());
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

void expect_error(const std::vector<uint8_t>& bytes, std::initializer_list<const char*> fragments) {
  try {
    parse_safetensors(bytes);
    ADD_FAILURE() << "parse_safetensors accepted a malformed file";
  } catch (const std::runtime_error& e) {
    const std::string msg = e.what();
    for (const char* f : fragments) {
      EXPECT_NE(msg.find(f), std::string::npos) << "message: " << msg << "\nmissing: " << f;
    }
  }
}

TEST(Safetensors, ParsesHandMadeFile) {
  // "a": i16 [2] = bytes 0..3 (values 1, -2 little-endian), "b": bool [3] = bytes 4..6.
  const std::string header = R"({"__metadata__":{"format":"pt"},)"
                             R"("b":{"dtype":"BOOL","shape":[3],"data_offsets":[4,7]},)"
                             R"("a":{"dtype":"I16","shape":[2],"data_offsets":[0,4]}})";
  const auto t = parse_safetensors(make_file(header, {1, 0, 0xFE, 0xFF, 1, 0, 1}));
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(t.at("a").dtype, DType::I16);
  EXPECT_EQ(t.at("a").shape, std::vector<int64_t>({2}));
  EXPECT_EQ(t.at("a").data, std::vector<uint8_t>({1, 0, 0xFE, 0xFF}));
  EXPECT_EQ(t.at("b").dtype, DType::Bool);
  EXPECT_EQ(t.at("b").data, std::vector<uint8_t>({1, 0, 1}));
}

TEST(Safetensors, RoundTripEveryDType) {
  std::map<std::string, SafeTensor> in;
  const std::pair<DType, int> types[] = {{DType::F32, 4},     {DType::F16, 2},    {DType::BF16, 2},
                                         {DType::I64, 8},     {DType::I32, 4},    {DType::I16, 2},
                                         {DType::I8, 1},      {DType::U8, 1},     {DType::Bool, 1},
                                         {DType::FP8E4M3, 1}, {DType::FP8E5M2, 1}};
  int k = 0;
  for (const auto& t : types) {
    SafeTensor st;
    st.dtype = t.first;
    st.shape = {2, 3};
    for (int i = 0; i < 6 * t.second; ++i) st.data.mutable_vector().push_back(static_cast<uint8_t>(k * 31 + i));
    in["t" + std::to_string(k++)] = st;
  }
  SafeTensor scalar;  // rank 0: one element
  scalar.dtype = DType::F32;
  scalar.data = {0, 0, 0x80, 0x3F};
  in["scalar"] = scalar;
  SafeTensor empty;
  empty.dtype = DType::I64;
  empty.shape = {0, 5};
  in["empty"] = empty;

  const std::vector<uint8_t> bytes = write_safetensors(in);
  uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = header_len << 8 | bytes[static_cast<size_t>(i)];
  EXPECT_EQ(header_len % 8, 0u);  // data starts 8-byte aligned
  const auto out = parse_safetensors(bytes);
  ASSERT_EQ(out.size(), in.size());
  for (const auto& kv : in) {
    const SafeTensor& o = out.at(kv.first);
    EXPECT_EQ(o.dtype, kv.second.dtype) << kv.first;
    EXPECT_EQ(o.shape, kv.second.shape) << kv.first;
    EXPECT_EQ(o.data, kv.second.data) << kv.first;
  }
}

TEST(Safetensors, Nf4IsWrittenAsPackedBytes) {
  SafeTensor w;
  w.dtype = DType::NF4;
  w.shape = {3, 3};  // 9 codes -> 5 bytes
  w.data = {0x12, 0x34, 0x56, 0x78, 0x90};
  const auto out = parse_safetensors(write_safetensors({{"w", w}}));
  EXPECT_EQ(out.at("w").dtype, DType::U8);
  EXPECT_EQ(out.at("w").shape, std::vector<int64_t>({5}));
  EXPECT_EQ(out.at("w").data, w.data);
}

TEST(Safetensors, WriteRejectsWrongByteCount) {
  SafeTensor w;
  w.dtype = DType::F32;
  w.shape = {2};
  w.data = {1, 2, 3};
  EXPECT_THROW(write_safetensors({{"w", w}}), std::invalid_argument);
}

TEST(Safetensors, FileRoundTripAndMissingFile) {
  SafeTensor w;
  w.dtype = DType::U8;
  w.shape = {2};
  w.data = {7, 9};
  const std::string path = tern::testing_support::unique_temp_path("tern_safetensors_test", ".safetensors");
  {
    const auto bytes = write_safetensors({{"w", w}});
    std::ofstream f(path, std::ios::binary);
    f.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
  }
  EXPECT_EQ(read_safetensors(path).at("w").data, w.data);
  std::remove(path.c_str());
  try {
    read_safetensors(path);
    ADD_FAILURE() << "read a missing file";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
}

void save(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

SafeTensor tensor(DType dtype, std::vector<int64_t> shape, size_t nbytes, uint8_t seed) {
  SafeTensor t;
  t.dtype = dtype;
  t.shape = std::move(shape);
  std::vector<uint8_t> bytes(nbytes);
  for (size_t i = 0; i < nbytes; ++i) bytes[i] = static_cast<uint8_t>(seed + 7 * i);
  t.data = std::move(bytes);
  return t;
}

// write_safetensors orders tensors by decreasing element size: after a 3-byte u8 tensor (first
// by name) the f32 and i64 tensors still start at multiples of 4 and 8.
TEST(Safetensors, WriterAlignsEveryTensorToItsElementSize) {
  const std::map<std::string, SafeTensor> in = {
      {"a_bytes", tensor(DType::U8, {3}, 3, 1)},
      {"b_floats", tensor(DType::F32, {5}, 20, 2)},
      {"c_halves", tensor(DType::F16, {3}, 6, 3)},
      {"d_longs", tensor(DType::I64, {3}, 24, 4)}};
  const std::vector<uint8_t> bytes = write_safetensors(in);
  uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = header_len << 8 | bytes[static_cast<size_t>(i)];
  const std::string header(reinterpret_cast<const char*>(bytes.data()) + 8, header_len);
  const auto begin_of = [&](const std::string& name) {
    const size_t at = header.find("\"data_offsets\":[", header.find("\"" + name + "\""));
    return std::stoull(header.substr(at + 16));
  };
  EXPECT_EQ(begin_of("d_longs"), 0u) << header;
  EXPECT_EQ(begin_of("b_floats"), 24u) << header;
  EXPECT_EQ(begin_of("c_halves"), 44u) << header;
  EXPECT_EQ(begin_of("a_bytes"), 50u) << header;
  const auto out = parse_safetensors(bytes);
  for (const auto& kv : in) EXPECT_EQ(out.at(kv.first).data, kv.second.data) << kv.first;
}

// read_safetensors borrows naturally aligned tensors from the mapped file (no copy) and copies
// the others; the borrowed bytes stay valid after the map of tensors is gone and the file is
// removed (the mapping lives while a tensor holds it).
TEST(Safetensors, ReadBorrowsAlignedTensorsFromTheMappedFile) {
  // Data area: u8[3] at 0, f32[2] at 3 (misaligned), f32[2] at 12 (aligned), u8[1] at 20.
  std::vector<uint8_t> data(21);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(11 * i + 5);
  std::string header =
      "{\"u\":{\"dtype\":\"U8\",\"shape\":[3],\"data_offsets\":[0,3]},"
      "\"odd\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[3,11]},"
      "\"even\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[12,20]},"
      "\"v\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[20,21]}}";
  while (header.size() % 8 != 0) header += ' ';
  const std::string path =
      tern::testing_support::unique_temp_path("tern_safetensors_map", ".safetensors");
  save(path, make_file(header, data));
  ConstantBytes kept;
  {
    const auto t = read_safetensors(path);
    EXPECT_TRUE(t.at("u").data.borrowed());
    EXPECT_FALSE(t.at("odd").data.borrowed());  // at 3: copied
    EXPECT_TRUE(t.at("even").data.borrowed());
    EXPECT_TRUE(t.at("v").data.borrowed());
    EXPECT_EQ(t.at("odd").data, std::vector<uint8_t>(data.begin() + 3, data.begin() + 11));
    kept = t.at("even").data;
  }
  std::remove(path.c_str());
  EXPECT_TRUE(kept.borrowed());
  EXPECT_EQ(kept, std::vector<uint8_t>(data.begin() + 12, data.begin() + 20));
  // A write copies the borrowed bytes first.
  ConstantBytes other = kept;
  other.mutable_vector()[0] ^= 0xFF;
  EXPECT_FALSE(other.borrowed());
  EXPECT_EQ(kept[0], data[12]);
  EXPECT_EQ(other[0], static_cast<uint8_t>(data[12] ^ 0xFF));
}

TEST(Safetensors, ErrorNamesThePathForABadFile) {
  const std::string path = tern::testing_support::unique_temp_path("tern_safetensors_bad", ".safetensors");
  {
    std::ofstream f(path, std::ios::binary);
    f << "abc";
  }
  try {
    read_safetensors(path);
    ADD_FAILURE() << "read a 3-byte file";
  } catch (const std::runtime_error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find(path), std::string::npos) << msg;
    EXPECT_NE(msg.find("too short"), std::string::npos) << msg;
  }
  std::remove(path.c_str());
}

TEST(SafetensorsMalformed, TooShortForLength) { expect_error({1, 2, 3}, {"3 bytes", "too short"}); }

TEST(SafetensorsMalformed, HeaderLengthPastEnd) {
  std::vector<uint8_t> bytes = make_file("{}", {});
  bytes[0] = 200;
  expect_error(bytes, {"header length 200", "exceeds the 2 bytes"});
}

TEST(SafetensorsMalformed, HugeHeaderLength) {
  std::vector<uint8_t> bytes(16, 0xFF);
  expect_error(bytes, {"header length 18446744073709551615"});
}

TEST(SafetensorsMalformed, BadJson) { expect_error(make_file("{\"a\": ", {}), {"not valid JSON"}); }

TEST(SafetensorsMalformed, HeaderNotObject) {
  expect_error(make_file("[1, 2]", {}), {"not a JSON object"});
}

TEST(SafetensorsMalformed, EntryNotObject) {
  expect_error(make_file(R"({"w": 3})", {}), {"tensor 'w'", "not an object"});
}

TEST(SafetensorsMalformed, MissingDType) {
  expect_error(make_file(R"({"w": {"shape": [1], "data_offsets": [0, 1]}})", {0}),
               {"tensor 'w'", "dtype"});
}

TEST(SafetensorsMalformed, UnsupportedDType) {
  expect_error(make_file(R"({"w": {"dtype": "C64", "shape": [1], "data_offsets": [0, 8]}})",
                         std::vector<uint8_t>(8)),
               {"tensor 'w'", "unsupported dtype \"C64\""});
}

TEST(SafetensorsMalformed, MissingShape) {
  expect_error(make_file(R"({"w": {"dtype": "U8", "data_offsets": [0, 1]}})", {0}),
               {"tensor 'w'", "shape"});
}

TEST(SafetensorsMalformed, NegativeShape) {
  expect_error(make_file(R"({"w": {"dtype": "U8", "shape": [-1], "data_offsets": [0, 1]}})", {0}),
               {"tensor 'w'", "shape entry -1"});
}

TEST(SafetensorsMalformed, NonIntegerShape) {
  expect_error(make_file(R"({"w": {"dtype": "U8", "shape": [1.5], "data_offsets": [0, 1]}})", {0}),
               {"tensor 'w'", "shape entry 1.5"});
}

TEST(SafetensorsMalformed, BadOffsetsArity) {
  expect_error(make_file(R"({"w": {"dtype": "U8", "shape": [1], "data_offsets": [0]}})", {0}),
               {"tensor 'w'", "data_offsets"});
}

TEST(SafetensorsMalformed, NegativeOffset) {
  expect_error(make_file(R"({"w": {"dtype": "U8", "shape": [1], "data_offsets": [-1, 0]}})", {0}),
               {"tensor 'w'", "data offset -1"});
}

TEST(SafetensorsMalformed, BeginAfterEnd) {
  expect_error(make_file(R"({"w": {"dtype": "U8", "shape": [1], "data_offsets": [2, 1]}})", {0, 0}),
               {"tensor 'w'", "[2, 1]", "begin after end"});
}

TEST(SafetensorsMalformed, OffsetPastEnd) {
  expect_error(make_file(R"({"w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}})",
                         std::vector<uint8_t>(7)),
               {"tensor 'w'", "[0, 8]", "past the end", "7-byte data area"});
}

TEST(SafetensorsMalformed, SizeMismatch) {
  expect_error(make_file(R"({"w": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 20]}})",
                         std::vector<uint8_t>(24)),
               {"tensor 'w'", "needs 24 bytes", "give 20"});
}

TEST(SafetensorsMalformed, ShapeOverflow) {
  expect_error(
      make_file(
          R"({"w": {"dtype": "F32", "shape": [4294967296, 4294967296], "data_offsets": [0, 4]}})",
          std::vector<uint8_t>(4)),
      {"tensor 'w'", "overflows"});
}

TEST(SafetensorsMalformed, Overlapping) {
  expect_error(make_file(R"({"a": {"dtype": "U8", "shape": [4], "data_offsets": [0, 4]},)"
                         R"("b": {"dtype": "U8", "shape": [4], "data_offsets": [2, 6]}})",
                         std::vector<uint8_t>(6)),
               {"'a' [0, 4)", "'b' [2, 6)", "overlap"});
}

TEST(SafetensorsMalformed, UnknownEntryKey) {
  expect_error(
      make_file(R"({"w": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1], "x": 1}})", {0}),
      {"tensor 'w'", "unknown key \"x\""});
}

TEST(SafetensorsMalformed, MetadataNotStrings) {
  expect_error(make_file(R"({"__metadata__": {"n": 3}})", {}), {"__metadata__.n", "not a string"});
  expect_error(make_file(R"({"__metadata__": [1]})", {}), {"__metadata__", "not an object"});
}

}  // namespace
}  // namespace tern::compiler
