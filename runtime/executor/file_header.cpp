#include "runtime/executor/file_header.h"

#include <cstdio>
#include <cstring>

// The state struct is only declared for static linking; its layout is part of libxxhash's ABI.
#define XXH_STATIC_LINKING_ONLY
#include <xxhash.h>

#include "runtime/core/checked_math.h"
#include "runtime/core/error.h"

namespace tern {
namespace {

void put_u16(uint8_t* p, uint16_t v) {
  p[0] = static_cast<uint8_t>(v);
  p[1] = static_cast<uint8_t>(v >> 8);
}
void put_u32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
void put_u64(uint8_t* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
uint16_t get_u16(const uint8_t* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }
uint32_t get_u32(const uint8_t* p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}
uint64_t get_u64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

bool is_digit(uint8_t c) { return c >= '0' && c <= '9'; }

/// Describes up to the first 8 bytes as hex and printable text, e.g. "7f 45 4c 46 ... (\"?ELF\")".
void describe_bytes(const uint8_t* data, size_t size, char* out, size_t capacity) {
  const size_t n = size < 8 ? size : 8;
  size_t pos = 0;
  out[0] = '\0';
  for (size_t i = 0; i < n && pos < capacity; ++i) {
    const int w = snprintf(out + pos, capacity - pos, i == 0 ? "%02x" : " %02x", data[i]);
    if (w < 0) return;
    pos += static_cast<size_t>(w);
  }
  if (pos >= capacity) return;
  char text[9];
  for (size_t i = 0; i < n; ++i) {
    text[i] = (data[i] >= 0x20 && data[i] < 0x7f) ? static_cast<char>(data[i]) : '.';
  }
  text[n] = '\0';
  snprintf(out + pos, capacity - pos, " (\"%s\")", text);
}

}  // namespace

void encode_file_header(const FileHeader& header, uint8_t* out) {
  memset(out, 0, kFileHeaderSize);
  memcpy(out, kFileMagic, sizeof(kFileMagic));
  put_u16(out + 8, header.version_major);
  put_u16(out + 10, header.version_minor);
  put_u32(out + 12, header.header_size);
  put_u64(out + 16, header.flatbuffer_offset);
  put_u64(out + 24, header.flatbuffer_size);
  put_u64(out + 32, header.segment_area_offset);
  put_u64(out + 40, header.segment_area_size);
  put_u64(out + kChecksumFieldOffset, header.checksum);
  // 56..64: reserved, zero.
}

Result<FileHeader> decode_file_header(Span<const uint8_t> bytes, uint64_t file_size) {
  const uint8_t* p = bytes.data();
  const size_t n = bytes.size();
  if (n == 0 || file_size == 0) {
    TERN_RETURN_ERROR(NotATernProgram,
                      "the file is empty (0 bytes); a tern program starts with "
                      "the 8-byte magic \"TERNPTE\\0\" and a %zu-byte header",
                      kFileHeaderSize);
  }
  // An ExecuTorch program: a FlatBuffer whose identifier ("ET12", ...) sits at bytes 4..8.
  if (n >= 8 && p[4] == 'E' && p[5] == 'T' && is_digit(p[6]) && is_digit(p[7])) {
    char extended[48] = "";
    if (n >= 12 && p[8] == 'e' && p[9] == 'h') {
      snprintf(extended, sizeof(extended), " with an extended header \"%c%c%c%c\"", p[8], p[9],
               is_digit(p[10]) ? p[10] : '?', is_digit(p[11]) ? p[11] : '?');
    }
    TERN_RETURN_ERROR(NotATernProgram,
                      "this is an ExecuTorch program (FlatBuffer identifier %c%c%c%c)%s, not a "
                      "tern program; export it with tern_export",
                      p[4], p[5], p[6], p[7], extended);
  }
  const size_t magic_len = n < sizeof(kFileMagic) ? n : sizeof(kFileMagic);
  if (memcmp(p, kFileMagic, magic_len) != 0) {
    char seen[80];
    describe_bytes(p, n, seen, sizeof(seen));
    TERN_RETURN_ERROR(NotATernProgram,
                      "not a tern program: expected the magic \"TERNPTE\\0\" "
                      "(54 45 52 4e 50 54 45 00), found first bytes %s",
                      seen);
  }
  if (n < kFileHeaderSize || file_size < kFileHeaderSize) {
    TERN_RETURN_ERROR(AccessFailed,
                      "truncated tern program: the file is %llu bytes, shorter than the %zu-byte "
                      "file header",
                      static_cast<unsigned long long>(file_size < n ? file_size : n),
                      kFileHeaderSize);
  }

  FileHeader h;
  h.version_major = get_u16(p + 8);
  h.version_minor = get_u16(p + 10);
  h.header_size = get_u32(p + 12);
  h.flatbuffer_offset = get_u64(p + 16);
  h.flatbuffer_size = get_u64(p + 24);
  h.segment_area_offset = get_u64(p + 32);
  h.segment_area_size = get_u64(p + 40);
  h.checksum = get_u64(p + kChecksumFieldOffset);

  TERN_CHECK_OR_RETURN_ERROR(
      h.version_major <= kFormatVersionMajor, VersionMismatch,
      "the program's format version is %u.%u, newer than this runtime's %u.%u; update the tern "
      "runtime or re-export the model with a matching tern_export",
      h.version_major, h.version_minor, kFormatVersionMajor, kFormatVersionMinor);
  TERN_CHECK_OR_RETURN_ERROR(h.version_major >= 1, InvalidProgram,
                             "format version %u.%u is not a released version (oldest is 1.0)",
                             h.version_major, h.version_minor);
  TERN_CHECK_OR_RETURN_ERROR(h.header_size >= kFileHeaderSize, InvalidProgram,
                             "header size %u is smaller than the %zu-byte file header",
                             h.header_size, kFileHeaderSize);
  TERN_CHECK_OR_RETURN_ERROR(
      h.flatbuffer_offset >= h.header_size && h.flatbuffer_offset % 8 == 0, InvalidProgram,
      "FlatBuffer offset %llu must be a multiple of 8 at or after the %u-byte header",
      static_cast<unsigned long long>(h.flatbuffer_offset), h.header_size);
  TERN_CHECK_OR_RETURN_ERROR(h.flatbuffer_size >= 8, InvalidProgram,
                             "FlatBuffer size %llu is too small (at least 8 bytes)",
                             static_cast<unsigned long long>(h.flatbuffer_size));
  TERN_CHECK_OR_RETURN_ERROR(
      range_within(h.flatbuffer_offset, h.flatbuffer_size, file_size), AccessFailed,
      "truncated tern program: FlatBuffer bytes [%llu, +%llu) extend past the end of the "
      "%llu-byte file",
      static_cast<unsigned long long>(h.flatbuffer_offset),
      static_cast<unsigned long long>(h.flatbuffer_size),
      static_cast<unsigned long long>(file_size));
  const uint64_t flatbuffer_end = h.flatbuffer_offset + h.flatbuffer_size;
  TERN_CHECK_OR_RETURN_ERROR(h.segment_area_offset >= flatbuffer_end, InvalidProgram,
                             "segment area offset %llu overlaps the FlatBuffer, which ends at %llu",
                             static_cast<unsigned long long>(h.segment_area_offset),
                             static_cast<unsigned long long>(flatbuffer_end));
  TERN_CHECK_OR_RETURN_ERROR(
      range_within(h.segment_area_offset, h.segment_area_size, file_size), AccessFailed,
      "truncated tern program: segment area [%llu, +%llu) extends past the end of the "
      "%llu-byte file",
      static_cast<unsigned long long>(h.segment_area_offset),
      static_cast<unsigned long long>(h.segment_area_size),
      static_cast<unsigned long long>(file_size));
  return h;
}

uint64_t compute_header_checksum(const uint8_t* header_bytes, Span<const uint8_t> flatbuffer) {
  uint8_t header[kFileHeaderSize];
  memcpy(header, header_bytes, kFileHeaderSize);
  memset(header + kChecksumFieldOffset, 0, 8);
  XXH3_state_t state;
  XXH3_64bits_reset(&state);
  XXH3_64bits_update(&state, header, kFileHeaderSize);
  if (flatbuffer.size() > 0) {
    XXH3_64bits_update(&state, flatbuffer.data(), flatbuffer.size());
  }
  return XXH3_64bits_digest(&state);
}

uint64_t checksum64(const void* data, size_t size) {
  return XXH3_64bits(size == 0 ? "" : data, size);
}

}  // namespace tern
