// Program: a loaded, verified .pte file.
#pragma once

#include <cstddef>
#include <cstdint>

#include "runtime/core/result.h"
#include "runtime/core/span.h"
#include "runtime/core/data_loader.h"
#include "runtime/executor/file_header.h"
#include "runtime/executor/method_meta.h"

namespace tern {
namespace fb { struct Program; }

class Method;
struct MemoryManager;
struct MethodLoadOptions;

/// A program file, verified before anything in it is used. Immutable after load and safe to
/// share between threads (each thread loads its own Method).
class Program {
 public:
  enum class Verification : uint8_t {
    /// Header checksum, FlatBuffers verifier and every index/offset/size of the structure.
    Structure = 0,
    /// Structure plus every segment's checksum (reads all weights once).
    Full = 1,
  };
  struct LoadOptions {
    Verification verification = Verification::Full;
  };

  /// Loads and verifies the program behind `loader`, which must outlive the Program (its
  /// buffers hold the program's bytes; segment_buffer() hands the loader's release back).
  /// Relies on the loader's alignment promise (DataLoader::load()); a loader that breaks it is
  /// InvalidArgument.
  /// Errors name what was wrong and where: NotATernProgram (bad magic, an ExecuTorch file),
  /// VersionMismatch (both versions), ChecksumMismatch (header or which segment),
  /// InvalidProgram (which method/value/instruction/segment and the bad index or range),
  /// AccessFailed (the loader failed, e.g. a truncated file).
  static Result<Program> load(DataLoader* loader, const LoadOptions& options);
  /// load(loader, LoadOptions()): Full verification. (An overload rather than a `= {}`
  /// default argument: GCC rejects `= {}` for a nested struct with member initializers.)
  static Result<Program> load(DataLoader* loader);

  Program(Program&&) noexcept = default;
  Program& operator=(Program&&) noexcept = default;

  const FileHeader& header() const { return header_; }
  const fb::Program* flatbuffer() const { return program_; }

  size_t num_methods() const;
  /// Name of method i; InvalidArgument when out of range.
  Result<const char*> method_name(size_t index) const;
  /// NotFound names the method asked for and lists the program's methods.
  Result<MethodMeta> method_meta(const char* name) const;

  /// Loads method `name` into the caller's memory (see Method). The Program must outlive it.
  Result<Method> load_method(const char* name, MemoryManager* memory,
                             const MethodLoadOptions& options) const;
  Result<Method> load_method(const char* name, MemoryManager* memory) const;

  /// Bytes of the buffer that holds the program's shared state (format 1.2: state tensors
  /// that several methods read and write, such as the KV cache of a prefill and a decode
  /// method; docs/format.md "Shared state"); 0 when it has none. The buffer must be 64-byte
  /// aligned and is given to every method through MemoryManager::shared_state.
  size_t shared_state_bytes() const;
  /// Writes every shared state tensor's initial value (its init segment, or zeros) into
  /// `buffer` (at least shared_state_bytes() bytes, 64-byte aligned). Call it before the first
  /// execute, and again to start over (a new conversation): every method loaded with the
  /// buffer sees it. Method::reset_state() leaves shared state alone. InvalidArgument names
  /// the size or alignment expected and given.
  Error init_shared_state(Span<uint8_t> buffer) const;

  size_t num_segments() const;
  /// The bytes of segment `index` (points into the loaded segment area).
  Result<Span<const uint8_t>> segment_data(uint32_t index) const;
  /// Segment `index` as a buffer its receiver owns (a delegate's blob for BackendInterface::
  /// init): the bytes point into the segment area (aligned as the segment's alignment, at most
  /// kLoaderAlignment) and stay valid while the Program lives; freeing the buffer tells the
  /// loader they need not stay in memory (an mmapped file's pages are dropped and read back
  /// from the page cache if touched again). InvalidArgument when out of range.
  Result<FreeableBuffer> segment_buffer(uint32_t index) const;
  /// Recomputes every segment checksum; ChecksumMismatch names the first bad segment.
  Error verify_segment_checksums() const;
  /// Tells the loader (DataLoader::release_resident) that the `size` bytes at `data`, inside
  /// the program's segment area, need not stay in memory; they stay valid. Ranges outside the
  /// segment area are ignored. For a delegate that copied a constant it will not read again
  /// (BackendInitContext::release_constant).
  void release_resident(const void* data, size_t size) const;

 private:
  Program() = default;
  /// Checksums every segment; with `release_checked` (load) each one is then handed to the
  /// loader's release_resident(): weights only verified never stay resident.
  Error verify_segment_checksums(bool release_checked) const;

  FileHeader header_;
  FreeableBuffer structure_;     // the FlatBuffer bytes
  FreeableBuffer segment_area_;  // all segments
  const fb::Program* program_ = nullptr;
  DataLoader* loader_ = nullptr;  // not owned; outlives the Program
};

}  // namespace tern
