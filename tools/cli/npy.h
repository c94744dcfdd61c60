// Reading and writing NumPy .npy files (format versions 1.0, 2.0 and 3.0, little-endian,
// C order) for the tern CLI and tests.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/core/dtype.h"

namespace tern {

/// An array read from or to be written to a .npy file: element type, shape (row-major,
/// C order) and the raw little-endian element bytes (numel x element size of them).
struct NpyArray {
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  std::vector<uint8_t> data;

  /// Product of the shape (1 for rank 0).
  uint64_t numel() const;
};

/// Supported descr strings: '<f4' f32, '<f2' f16, '<i8' i64, '<i4' i32, '<i2' i16,
/// '|i1' i8, '|u1' u8, '|b1' bool. Returns the descr of `dtype`; throws std::runtime_error for
/// a dtype with no NumPy equivalent (bf16, nf4, fp8).
std::string npy_descr(DType dtype);

/// Parses the bytes of a .npy file. `source` names the file in messages. Throws
/// std::runtime_error naming `source`, what was expected and what was found for: a bad magic,
/// an unknown version, a truncated preamble or header, a malformed header dictionary, an
/// unsupported descr (big-endian, f64, complex, ...), fortran_order True, a negative or
/// overflowing shape, or data shorter or longer than shape x element size.
NpyArray parse_npy(const uint8_t* bytes, size_t size, const std::string& source);

/// Reads and parses the file at `path` (errors as parse_npy, plus unreadable files).
NpyArray read_npy(const std::string& path);

/// The bytes of a .npy file holding `array` (version 1.0, or 2.0 when the header needs it;
/// header padded so the data starts at a multiple of 64). Throws std::runtime_error when
/// the dtype has no descr or data.size() is not numel x element size.
std::vector<uint8_t> encode_npy(const NpyArray& array);

/// Writes encode_npy(array) to `path`; throws std::runtime_error naming `path` on failure.
void write_npy(const std::string& path, const NpyArray& array);

}  // namespace tern
