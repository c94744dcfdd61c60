// AtomicFileWriter and write_pte_file (pte_file_writer.h).
#include "tools/compiler/pte_file_writer.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <utility>

#include "runtime/core/checked_math.h"

namespace tern::compiler {

AtomicFileWriter::AtomicFileWriter(std::string path) : path_(std::move(path)) {
  // A destination that exists and is no regular file (/dev/null, a pipe) is written directly:
  // renaming a file over it would replace the device or pipe itself.
  struct stat st {};
  const bool special = ::stat(path_.c_str(), &st) == 0 && !S_ISREG(st.st_mode);
  if (!special) temp_ = path_ + ".tern-tmp-" + std::to_string(::getpid());
  const std::string& target = special ? path_ : temp_;
  fd_ = ::open(target.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (fd_ < 0) fail("cannot open '" + path_ + "' for writing", errno);
}

AtomicFileWriter::~AtomicFileWriter() {
  if (fd_ >= 0) {
    ::close(fd_);
    remove_temp();
  }
}

void AtomicFileWriter::remove_temp() {
  if (!temp_.empty()) ::unlink(temp_.c_str());
}

void AtomicFileWriter::fail(const std::string& what, int error) {
  if (fd_ >= 0) {
    ::close(fd_);
    fd_ = -1;
    remove_temp();
  }
  throw std::runtime_error(what + ": " + std::strerror(error));
}

void AtomicFileWriter::write(const uint8_t* data, uint64_t size) {
  while (size > 0) {
    // At most 1 GiB a call: Linux writes at most ~2 GiB at once anyway.
    const size_t chunk = static_cast<size_t>(std::min<uint64_t>(size, uint64_t{1} << 30));
    const ssize_t n = ::write(fd_, data, chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      fail("cannot write '" + path_ + "' (" + std::to_string(written_) + " bytes written, " +
               std::to_string(size) + " more to go)",
           n < 0 ? errno : ENOSPC);
    }
    data += n;
    size -= static_cast<uint64_t>(n);
    written_ += static_cast<uint64_t>(n);
  }
}

void AtomicFileWriter::write_zeros(uint64_t size) {
  static const uint8_t zeros[4096] = {};
  while (size > 0) {
    const uint64_t n = std::min<uint64_t>(size, sizeof(zeros));
    write(zeros, n);
    size -= n;
  }
}

void AtomicFileWriter::commit() {
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) {
    const int error = errno;
    remove_temp();
    throw std::runtime_error("cannot write '" + path_ + "': " + std::strerror(error));
  }
  if (temp_.empty()) return;  // written in place
  if (::rename(temp_.c_str(), path_.c_str()) != 0) {
    const int error = errno;
    remove_temp();
    throw std::runtime_error("cannot replace '" + path_ + "': " + std::strerror(error));
  }
}

uint64_t write_pte_file(const pte::File& file, const std::string& path) {
  uint64_t end = 0;  // of the previous piece
  for (const pte::AreaBytes& a : file.area_contents) {
    if (a.offset < end) {
      throw std::invalid_argument("write_pte_file: the segment area's pieces overlap or are out "
                                  "of order (one at " + std::to_string(a.offset) +
                                  " after one ending at " + std::to_string(end) + ")");
    }
    if (!checked_add(a.offset, static_cast<uint64_t>(a.bytes.size()), &end)) {
      throw std::invalid_argument("write_pte_file: a segment area piece's end overflows");
    }
  }
  const PteImage image = pte_image(file);
  AtomicFileWriter out(path);
  out.write(image.head.data(), image.head.size());
  uint64_t at = 0;  // within the area
  for (const pte::AreaBytes& a : file.area_contents) {
    if (a.offset >= file.area_size) break;
    const uint64_t n = std::min<uint64_t>(a.bytes.size(), file.area_size - a.offset);
    out.write_zeros(a.offset - at);
    out.write(a.bytes.data(), n);
    at = a.offset + n;
  }
  out.write_zeros(file.area_size - at);
  out.commit();
  return image.file_size;
}

void write_file(const std::string& path, const std::vector<uint8_t>& bytes) {
  AtomicFileWriter out(path);
  out.write(bytes.data(), bytes.size());
  out.commit();
}

}  // namespace tern::compiler
