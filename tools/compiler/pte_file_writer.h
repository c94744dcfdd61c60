// Writing .pte files to disk without holding them in memory: a file written under a temporary
// name beside its destination and renamed over it once complete, and a pte::File streamed into
// one (header and FlatBuffer, then each segment from the bytes it borrows).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tools/compiler/serializer.h"

namespace tern::compiler {

/// Bytes written to `<path>.tern-tmp-<pid>` and renamed to `path` by commit(): a write that
/// fails half way (a full disk, a file size limit, a killed process) never leaves a truncated
/// `path`, and an existing `path` stays as it was until the new one is whole. Without commit()
/// the destructor removes the temporary file. A `path` that exists and is no regular file
/// (/dev/null, a pipe) is written directly. Every failure throws std::runtime_error naming the
/// path, what was being done and the system's reason.
class AtomicFileWriter {
 public:
  explicit AtomicFileWriter(std::string path);
  ~AtomicFileWriter();
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;

  void write(const uint8_t* data, uint64_t size);
  void write_zeros(uint64_t size);
  /// Closes the file and renames it to the destination.
  void commit();
  uint64_t written() const { return written_; }

 private:
  [[noreturn]] void fail(const std::string& what, int error);
  void remove_temp();

  std::string path_;
  std::string temp_;  ///< empty: writing path_ directly
  int fd_ = -1;
  uint64_t written_ = 0;
};

/// Writes `file` to `path` as write_pte lays it out — byte for byte the same file — streaming
/// the segment area from area_contents, which must be in increasing offset order and not
/// overlap (as serialize_program makes them; std::invalid_argument otherwise: write_pte takes
/// any). Returns the file's size.
uint64_t write_pte_file(const pte::File& file, const std::string& path);

}  // namespace tern::compiler
