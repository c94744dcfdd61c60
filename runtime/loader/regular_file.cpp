#include "runtime/loader/regular_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "runtime/core/error.h"

namespace tern {

Result<RegularFile> open_regular_file(const char* path) {
  TERN_CHECK_OR_RETURN_ERROR(path != nullptr, InvalidArgument, "file path is null");
  int fd;
  do {
    fd = ::open(path, O_RDONLY | O_CLOEXEC);
  } while (fd < 0 && errno == EINTR);
  TERN_CHECK_OR_RETURN_ERROR(fd >= 0, AccessFailed, "cannot open '%s': %s", path, strerror(errno));
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    TERN_RETURN_ERROR(AccessFailed, "cannot stat '%s': %s", path, strerror(err));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    TERN_RETURN_ERROR(AccessFailed, "'%s' is not a regular file", path);
  }
  RegularFile file;
  file.fd = fd;
  file.size = static_cast<size_t>(st.st_size);
  return file;
}

}  // namespace tern
