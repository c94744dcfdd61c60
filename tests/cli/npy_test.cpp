// The .npy reader/writer against hand-written byte strings.
#include "tools/cli/npy.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

namespace tern {
namespace {

std::vector<uint8_t> bytes_of(const std::string& s) { return std::vector<uint8_t>(s.begin(), s.end()); }

// A v1.0 file: magic, version, 2-byte little-endian header length, header, data.
std::string v1_file(const std::string& header, const std::string& data) {
  std::string out("\x93NUMPY\x01\x00", 8);
  out.push_back(static_cast<char>(header.size() & 0xff));
  out.push_back(static_cast<char>(header.size() >> 8));
  return out + header + data;
}

NpyArray parse(const std::string& file) {
  return parse_npy(reinterpret_cast<const uint8_t*>(file.data()), file.size(), "test.npy");
}

// Asserts parsing `file` throws a runtime_error whose message holds every substring.
void expect_parse_error(const std::string& file, std::initializer_list<const char*> substrings) {
  try {
    parse(file);
    ADD_FAILURE() << "expected an error";
  } catch (const std::runtime_error& e) {
    const std::string message = e.what();
    EXPECT_EQ(message.rfind("test.npy: ", 0), 0u) << message;
    for (const char* s : substrings) {
      EXPECT_NE(message.find(s), std::string::npos) << "'" << message << "' lacks '" << s << "'";
    }
  }
}

// 1.0f = 00 00 80 3f, -2.0f = 00 00 00 c0 (IEEE 754 little-endian).
const std::string kF32Data("\x00\x00\x80\x3f\x00\x00\x00\xc0", 8);

TEST(NpyTest, EncodesF32VectorExactly) {
  NpyArray a;
  a.dtype = DType::F32;
  a.shape = {2};
  a.data = bytes_of(kF32Data);
  // 10-byte preamble + 118-byte header = 128, a multiple of 64; header length 118 = 0x76.
  const std::string expected = std::string("\x93NUMPY\x01\x00\x76\x00", 10) +
                               "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }" +
                               std::string(60, ' ') + "\n" + kF32Data;
  EXPECT_EQ(encode_npy(a), bytes_of(expected));
}

TEST(NpyTest, EncodesScalarAndMatrix) {
  NpyArray s;
  s.dtype = DType::I64;
  s.data = bytes_of(std::string("\x05\x00\x00\x00\x00\x00\x00\x00", 8));
  const std::string expected_s = std::string("\x93NUMPY\x01\x00\x76\x00", 10) +
                                 "{'descr': '<i8', 'fortran_order': False, 'shape': (), }" +
                                 std::string(62, ' ') + "\n" + std::string("\x05\0\0\0\0\0\0\0", 8);
  EXPECT_EQ(encode_npy(s), bytes_of(expected_s));

  NpyArray m;
  m.dtype = DType::U8;
  m.shape = {2, 3};
  m.data = {1, 2, 3, 4, 5, 6};
  const std::string expected_m = std::string("\x93NUMPY\x01\x00\x76\x00", 10) +
                                 "{'descr': '|u1', 'fortran_order': False, 'shape': (2, 3), }" +
                                 std::string(58, ' ') + "\n" + "\x01\x02\x03\x04\x05\x06";
  EXPECT_EQ(encode_npy(m), bytes_of(expected_m));
}

TEST(NpyTest, ParsesNumpyStyleV1) {
  const NpyArray a = parse(v1_file(
      "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }" + std::string(60, ' ') + "\n",
      kF32Data));
  EXPECT_EQ(a.dtype, DType::F32);
  EXPECT_EQ(a.shape, (std::vector<int64_t>{2}));
  float values[2];
  ASSERT_EQ(a.data.size(), sizeof(values));
  std::memcpy(values, a.data.data(), sizeof(values));
  EXPECT_EQ(values[0], 1.0f);
  EXPECT_EQ(values[1], -2.0f);
}

TEST(NpyTest, ParsesV2AndOtherSpellings) {
  const std::string header = "{\"shape\": (3,1), \"fortran_order\": False, \"descr\": \"<i4\"}\n";
  std::string file("\x93NUMPY\x02\x00", 8);
  file.push_back(static_cast<char>(header.size()));
  file.append(std::string(3, '\0'));
  file += header;
  file += std::string("\x01\x00\x00\x00\xff\xff\xff\xff\x02\x00\x00\x00", 12);
  const NpyArray a = parse(file);
  EXPECT_EQ(a.dtype, DType::I32);
  EXPECT_EQ(a.shape, (std::vector<int64_t>{3, 1}));
  int32_t v[3];
  std::memcpy(v, a.data.data(), sizeof(v));
  EXPECT_EQ(v[0], 1);
  EXPECT_EQ(v[1], -1);
  EXPECT_EQ(v[2], 2);
}

TEST(NpyTest, ParsesEveryDescr) {
  const struct {
    const char* descr;
    DType dtype;
    size_t item;
  } cases[] = {{"<f4", DType::F32, 4}, {"<f2", DType::F16, 2}, {"<i8", DType::I64, 8},
               {"<i4", DType::I32, 4}, {"<i2", DType::I16, 2}, {"|i1", DType::I8, 1},
               {"|u1", DType::U8, 1},  {"|b1", DType::Bool, 1}};
  for (const auto& c : cases) {
    const std::string header =
        std::string("{'descr': '") + c.descr + "', 'fortran_order': False, 'shape': (2, 2), }\n";
    const NpyArray a = parse(v1_file(header, std::string(4 * c.item, '\x01')));
    EXPECT_EQ(a.dtype, c.dtype) << c.descr;
    EXPECT_EQ(a.data.size(), 4 * c.item) << c.descr;
    EXPECT_EQ(npy_descr(c.dtype), c.descr);
  }
}

TEST(NpyTest, EmptyArray) {
  const NpyArray a = parse(v1_file("{'descr': '<f4', 'fortran_order': False, 'shape': (0, 3), }\n", ""));
  EXPECT_EQ(a.shape, (std::vector<int64_t>{0, 3}));
  EXPECT_TRUE(a.data.empty());
}

TEST(NpyTest, RoundTripsThroughAFile) {
  NpyArray a;
  a.dtype = DType::I16;
  a.shape = {3, 1, 2};
  for (int i = 0; i < 12; ++i) a.data.push_back(static_cast<uint8_t>(i * 7));
  const std::string path = ::testing::TempDir() + "/npy_roundtrip.npy";
  write_npy(path, a);
  const NpyArray b = read_npy(path);
  EXPECT_EQ(b.dtype, a.dtype);
  EXPECT_EQ(b.shape, a.shape);
  EXPECT_EQ(b.data, a.data);
  std::remove(path.c_str());
}

TEST(NpyTest, BadMagic) {
  expect_parse_error("PK\x03\x04 not numpy at all", {"not a .npy file", "magic"});
  expect_parse_error("\x93NUM", {"not a .npy file", "4 bytes"});
}

TEST(NpyTest, BadVersion) {
  expect_parse_error(std::string("\x93NUMPY\x04\x00\x10\x00", 10) + std::string(16, ' '),
                     {"version 4.0", "expected 1.0, 2.0 or 3.0"});
}

TEST(NpyTest, TruncatedPreambleAndHeader) {
  expect_parse_error(std::string("\x93NUMPY\x02\x00\x10\x00", 10), {"truncated .npy preamble", "expected 12"});
  std::string file = v1_file("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }\n", kF32Data);
  expect_parse_error(file.substr(0, 40), {"truncated .npy header", "58 bytes", "only 30"});
}

TEST(NpyTest, DataShorterOrLongerThanShape) {
  const std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }\n";
  expect_parse_error(v1_file(header, kF32Data.substr(0, 6)),
                     {"truncated .npy data", "(2,)", "needs 8 bytes, found 6"});
  expect_parse_error(v1_file(header, kF32Data + "xx"),
                     {"oversized .npy data", "needs 8 bytes, found 10"});
}

TEST(NpyTest, UnsupportedDescrs) {
  const auto file = [](const std::string& descr) {
    return v1_file("{'descr': '" + descr + "', 'fortran_order': False, 'shape': (1,), }\n",
                   std::string(8, '\0'));
  };
  expect_parse_error(file("<f8"), {"unsupported .npy descr '<f8'", "float64", "'<f4'"});
  expect_parse_error(file(">f4"), {"'>f4'", "big-endian"});
  expect_parse_error(file("<c8"), {"'<c8'"});
  expect_parse_error(file("|O"), {"'|O'"});
}

TEST(NpyTest, FortranOrder) {
  expect_parse_error(v1_file("{'descr': '<f4', 'fortran_order': True, 'shape': (2,), }\n", kF32Data),
                     {"fortran_order True", "C-order"});
}

TEST(NpyTest, MalformedHeaders) {
  expect_parse_error(v1_file("{'descr': '<f4', 'fortran_order': False}\n", ""),
                     {"missing key 'shape'"});
  expect_parse_error(v1_file("{'descr': '<f4', 'fortran_order': False, 'shape': (2,)\n", kF32Data),
                     {"malformed .npy header", "expected ',' or '}'"});
  expect_parse_error(v1_file("{'descr': '<f4', 'fortran_order': False, 'shape': [2], }\n", kF32Data),
                     {"malformed .npy header"});
  expect_parse_error(v1_file("{'descr': '<f4', 'fortran_order': False, 'shape': (-2,), }\n", ""),
                     {"negative"});
  expect_parse_error(v1_file("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}\n",
                             kF32Data),
                     {"malformed .npy header"});
  expect_parse_error(v1_file("{'descr': '<f4', 'fortran_order': False, 'shape': "
                             "(99999999999, 99999999999, 99999999999), }\n", ""),
                     {"overflows"});
  expect_parse_error(v1_file("{'descr': 4, 'fortran_order': False, 'shape': (2,), }\n", kF32Data),
                     {"malformed .npy header"});
}

TEST(NpyTest, ReadMissingFileNamesThePath) {
  try {
    read_npy("/nonexistent/dir/x.npy");
    FAIL() << "expected an error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/dir/x.npy"), std::string::npos);
  }
}

TEST(NpyTest, EncodeRejectsInconsistentArrays) {
  NpyArray a;
  a.dtype = DType::F32;
  a.shape = {3};
  a.data.resize(8);
  EXPECT_THROW(encode_npy(a), std::runtime_error);
  a.dtype = DType::NF4;
  EXPECT_THROW(encode_npy(a), std::runtime_error);
}

}  // namespace
}  // namespace tern
