// The fixed 64-byte little-endian header at the start of every .pte file (docs/format.md).
#pragma once

#include <cstddef>
#include <cstdint>

#include "runtime/core/result.h"
#include "runtime/core/span.h"

namespace tern {

/// Format version written by this build and the newest major version it reads.
constexpr uint16_t kFormatVersionMajor = 1;
constexpr uint16_t kFormatVersionMinor = 2;  ///< 1.1: bounded-dynamic shapes; 1.2: shared state
/// The oldest minor version that has each feature (a file says the newest it uses).
constexpr uint16_t kFormatMinorDynamicShapes = 1;
constexpr uint16_t kFormatMinorSharedState = 2;
constexpr size_t kFileHeaderSize = 64;
/// The first 8 bytes of a tern program.
constexpr char kFileMagic[8] = {'T', 'E', 'R', 'N', 'P', 'T', 'E', '\0'};
/// The FlatBuffer file identifier of schema/program.fbs.
constexpr char kFlatbufferIdentifier[5] = "TRNP";

/// Decoded file header. Offsets are from the start of the file.
struct FileHeader {
  uint16_t version_major = kFormatVersionMajor;
  uint16_t version_minor = kFormatVersionMinor;
  uint32_t header_size = kFileHeaderSize;
  uint64_t flatbuffer_offset = 0;
  uint64_t flatbuffer_size = 0;
  uint64_t segment_area_offset = 0;
  uint64_t segment_area_size = 0;
  /// XXH3-64 of the 64 header bytes with this field zeroed, followed by the FlatBuffer bytes.
  uint64_t checksum = 0;
};

/// Byte layout (all little-endian):
///   0  magic[8]   8 version_major u16  10 version_minor u16  12 header_size u32
///  16 flatbuffer_offset u64  24 flatbuffer_size u64  32 segment_area_offset u64
///  40 segment_area_size u64  48 checksum u64  56 reserved u64 (zero)
constexpr size_t kChecksumFieldOffset = 48;

/// Encodes `header` into exactly kFileHeaderSize bytes at `out` (checksum as given).
void encode_file_header(const FileHeader& header, uint8_t* out);

/// Decodes and validates the header in `bytes` against a file of `file_size` bytes: magic,
/// version (a newer major is VersionMismatch naming both versions), header size, and that
/// the FlatBuffer and segment ranges lie inside the file, do not overlap and are ordered.
/// A file that is not a tern program gets NotATernProgram with what it looks like (an
/// ExecuTorch program, identifier "ET12", is named as such). Does not check the checksum.
Result<FileHeader> decode_file_header(Span<const uint8_t> bytes, uint64_t file_size);

/// The header checksum: XXH3-64 over the 64 header bytes with the checksum field zeroed,
/// then over `flatbuffer`.
uint64_t compute_header_checksum(const uint8_t* header_bytes, Span<const uint8_t> flatbuffer);

/// XXH3-64 of a byte range (segment checksums).
uint64_t checksum64(const void* data, size_t size);

}  // namespace tern
