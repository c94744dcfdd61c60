#include "runtime/executor/file_header.h"

#include <gtest/gtest.h>
#include <xxhash.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

namespace tern {
namespace {

FileHeader sample_header() {
  FileHeader h;
  h.version_major = 1;
  h.version_minor = 3;
  h.header_size = 64;
  h.flatbuffer_offset = 64;
  h.flatbuffer_size = 200;
  h.segment_area_offset = 320;
  h.segment_area_size = 1000;
  h.checksum = 0x1122334455667788ull;
  return h;
}

std::vector<uint8_t> encoded(const FileHeader& h) {
  std::vector<uint8_t> bytes(kFileHeaderSize, 0xee);
  encode_file_header(h, bytes.data());
  return bytes;
}

TEST(FileHeader, EncodesTheDocumentedLittleEndianLayout) {
  const auto b = encoded(sample_header());
  EXPECT_EQ(0, std::memcmp(b.data(), "TERNPTE\0", 8));
  EXPECT_EQ(b[8], 1);  // major
  EXPECT_EQ(b[9], 0);
  EXPECT_EQ(b[10], 3);    // minor
  EXPECT_EQ(b[12], 64);   // header size
  EXPECT_EQ(b[16], 64);   // flatbuffer offset
  EXPECT_EQ(b[24], 200);  // flatbuffer size
  EXPECT_EQ(b[32], 320 & 0xff);
  EXPECT_EQ(b[33], 320 >> 8);
  EXPECT_EQ(b[40], 1000 & 0xff);
  EXPECT_EQ(b[41], 1000 >> 8);
  EXPECT_EQ(b[48], 0x88);  // checksum, least significant byte first
  EXPECT_EQ(b[55], 0x11);
  for (size_t i = 56; i < 64; ++i) EXPECT_EQ(b[i], 0) << "reserved byte " << i;
}

TEST(FileHeader, RoundTrips) {
  const FileHeader h = sample_header();
  const auto b = encoded(h);
  auto decoded = decode_file_header(Span<const uint8_t>(b.data(), b.size()), 1320);
  ASSERT_TRUE(decoded.ok()) << last_error_message();
  EXPECT_EQ(decoded->version_major, 1);
  EXPECT_EQ(decoded->version_minor, 3);
  EXPECT_EQ(decoded->flatbuffer_offset, 64u);
  EXPECT_EQ(decoded->flatbuffer_size, 200u);
  EXPECT_EQ(decoded->segment_area_offset, 320u);
  EXPECT_EQ(decoded->segment_area_size, 1000u);
  EXPECT_EQ(decoded->checksum, 0x1122334455667788ull);
}

Error decode_error(const std::vector<uint8_t>& b, uint64_t file_size) {
  auto r = decode_file_header(Span<const uint8_t>(b.data(), b.size()), file_size);
  return r.ok() ? Error::Ok : r.error();
}

TEST(FileHeader, RefusesAnExecuTorchProgram) {
  // An ExecuTorch .pte: a FlatBuffer root offset, identifier "ET12", extended header "eh00".
  std::vector<uint8_t> b(64, 0);
  b[0] = 0x1c;
  std::memcpy(b.data() + 4, "ET12eh00", 8);
  EXPECT_EQ(decode_error(b, 4096), Error::NotATernProgram);
  const std::string msg = last_error_message();
  EXPECT_NE(msg.find("ExecuTorch program"), std::string::npos) << msg;
  EXPECT_NE(msg.find("ET12"), std::string::npos) << msg;
  EXPECT_NE(msg.find("tern_export"), std::string::npos) << msg;
}

TEST(FileHeader, RefusesOtherMagicNamingTheBytes) {
  std::vector<uint8_t> b(64, 0);
  std::memcpy(b.data(),
              "\x7f"
              "ELF\x02\x01\x01\x00",
              8);
  EXPECT_EQ(decode_error(b, 64), Error::NotATernProgram);
  const std::string msg = last_error_message();
  EXPECT_NE(msg.find("7f 45 4c 46"), std::string::npos) << msg;
  EXPECT_NE(msg.find("ELF"), std::string::npos) << msg;
}

TEST(FileHeader, RefusesAnEmptyOrTinyFile) {
  std::vector<uint8_t> empty;
  EXPECT_EQ(decode_error(empty, 0), Error::NotATernProgram);
  EXPECT_NE(std::string(last_error_message()).find("empty"), std::string::npos);
  std::vector<uint8_t> garbage = {'h', 'i'};
  EXPECT_EQ(decode_error(garbage, 2), Error::NotATernProgram);
}

TEST(FileHeader, TruncatedHeaderIsAccessFailedWithTheSize) {
  auto b = encoded(sample_header());
  b.resize(40);
  EXPECT_EQ(decode_error(b, 40), Error::AccessFailed);
  const std::string msg = last_error_message();
  EXPECT_NE(msg.find("40 bytes"), std::string::npos) << msg;
  EXPECT_NE(msg.find("64-byte"), std::string::npos) << msg;
}

TEST(FileHeader, NewerMajorVersionNamesBothVersions) {
  FileHeader h = sample_header();
  h.version_major = kFormatVersionMajor + 1;
  h.version_minor = 4;
  EXPECT_EQ(decode_error(encoded(h), 1320), Error::VersionMismatch);
  const std::string msg = last_error_message();
  EXPECT_NE(msg.find(std::to_string(kFormatVersionMajor + 1) + ".4"), std::string::npos) << msg;
  EXPECT_NE(
      msg.find(std::to_string(kFormatVersionMajor) + "." + std::to_string(kFormatVersionMinor)),
      std::string::npos)
      << msg;
}

TEST(FileHeader, NewerMinorVersionIsAccepted) {
  FileHeader h = sample_header();
  h.version_minor = 999;
  EXPECT_EQ(decode_error(encoded(h), 1320), Error::Ok);
}

TEST(FileHeader, RangesBeyondTheFileAreRefusedWithTheNumbers) {
  // The segment area ends at 1320; a 1000-byte file is truncated.
  EXPECT_EQ(decode_error(encoded(sample_header()), 1000), Error::AccessFailed);
  std::string msg = last_error_message();
  EXPECT_NE(msg.find("1000-byte file"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[320, +1000)"), std::string::npos) << msg;

  // The FlatBuffer ends at 264; a 200-byte file cannot hold it.
  EXPECT_EQ(decode_error(encoded(sample_header()), 200), Error::AccessFailed);
  msg = last_error_message();
  EXPECT_NE(msg.find("[64, +200)"), std::string::npos) << msg;

  // A size field so large that offset + size overflows.
  FileHeader h = sample_header();
  h.segment_area_size = ~0ull - 100;
  EXPECT_EQ(decode_error(encoded(h), 1320), Error::AccessFailed);
}

TEST(FileHeader, InconsistentLayoutIsInvalidProgram) {
  FileHeader h = sample_header();
  h.segment_area_offset = 128;  // inside the FlatBuffer [64, 264)
  EXPECT_EQ(decode_error(encoded(h), 2000), Error::InvalidProgram);
  h = sample_header();
  h.header_size = 32;
  EXPECT_EQ(decode_error(encoded(h), 2000), Error::InvalidProgram);
  h = sample_header();
  h.flatbuffer_offset = 60;  // before the end of the header
  EXPECT_EQ(decode_error(encoded(h), 2000), Error::InvalidProgram);
  h = sample_header();
  h.flatbuffer_offset = 68;  // not 8-aligned
  EXPECT_EQ(decode_error(encoded(h), 2000), Error::InvalidProgram);
  h = sample_header();
  h.version_major = 0;
  EXPECT_EQ(decode_error(encoded(h), 2000), Error::InvalidProgram);
}

TEST(FileHeader, ChecksumCoversHeaderWithZeroedFieldThenFlatBuffer) {
  FileHeader h = sample_header();
  auto b = encoded(h);
  std::vector<uint8_t> flatbuffer(37);
  for (size_t i = 0; i < flatbuffer.size(); ++i) flatbuffer[i] = static_cast<uint8_t>(i * 13);

  // Reference: one-shot XXH3 over a concatenation made by hand.
  std::vector<uint8_t> joined(b);
  for (size_t i = kChecksumFieldOffset; i < kChecksumFieldOffset + 8; ++i) joined.at(i) = 0;
  joined.insert(joined.end(), flatbuffer.begin(), flatbuffer.end());
  const uint64_t expected = XXH3_64bits(joined.data(), joined.size());

  const Span<const uint8_t> fb(flatbuffer.data(), flatbuffer.size());
  EXPECT_EQ(compute_header_checksum(b.data(), fb), expected);
  // The stored checksum field does not influence the checksum.
  h.checksum = 42;
  b = encoded(h);
  EXPECT_EQ(compute_header_checksum(b.data(), fb), expected);
  // Any other header byte does.
  b[20] ^= 1;
  EXPECT_NE(compute_header_checksum(b.data(), fb), expected);
}

TEST(FileHeader, Checksum64IsXxh3) {
  const char text[] = "tern segment";
  EXPECT_EQ(checksum64(text, sizeof(text)), XXH3_64bits(text, sizeof(text)));
  EXPECT_EQ(checksum64(nullptr, 0), XXH3_64bits("", 0));
}

}  // namespace
}  // namespace tern
