// Opening a program file: the one place the file loaders open, stat and check a path.
#pragma once

#include <cstddef>

#include "runtime/core/result.h"

namespace tern {

/// An open, read-only descriptor of a regular file and its size at open time.
struct RegularFile {
  int fd = -1;  ///< owned by the caller, who closes it
  size_t size = 0;
};

/// Opens `path` read-only (close-on-exec) and checks that it is a regular file. Errors:
/// InvalidArgument for a null path; AccessFailed naming the path and the OS error, or saying
/// it is not a regular file (a directory, a device). Nothing stays open on error.
Result<RegularFile> open_regular_file(const char* path);

}  // namespace tern
