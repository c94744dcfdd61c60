#include "runtime/executor/program.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "runtime/core/checked_math.h"
#include "runtime/core/log.h"
#include "runtime/executor/program_verifier.h"
#include "schema/program_generated.h"

namespace tern {
namespace {

using ull = unsigned long long;

constexpr uintptr_t kStructureAlignment = 16;
constexpr uintptr_t kMaxSegmentAlignment = 4096;

/// Copies the thread's last error message (the loader's) so a new message can quote it.
struct SavedMessage {
  SavedMessage() { snprintf(text, sizeof(text), "%s", last_error_message()); }
  char text[256];
};

void free_aligned(void* /*context*/, void* data, size_t /*size*/) { std::free(data); }

/// Returns `buffer` unchanged when its data is aligned to `alignment`, otherwise an aligned
/// heap copy (a caller's buffer need not be aligned; FlatBuffers and kernels need it).
Result<FreeableBuffer> ensure_aligned(FreeableBuffer buffer, uintptr_t alignment,
                                      const char* what) {
  if (buffer.size() == 0 || reinterpret_cast<uintptr_t>(buffer.data()) % alignment == 0) {
    return buffer;
  }
  void* copy = nullptr;
  TERN_CHECK_OR_RETURN_ERROR(posix_memalign(&copy, alignment, buffer.size()) == 0,
                             MemoryAllocationFailed,
                             "cannot allocate %zu bytes to align the %s to %zu bytes",
                             buffer.size(), what, static_cast<size_t>(alignment));
  TERN_LOG(Warning, "the loader's %s is not %zu-byte aligned; copying %zu bytes", what,
           static_cast<size_t>(alignment), buffer.size());
  memcpy(copy, buffer.data(), buffer.size());
  const size_t size = buffer.size();
  buffer.free();
  return FreeableBuffer(copy, size, free_aligned);
}

}  // namespace

Result<Program> Program::load(DataLoader* loader, const LoadOptions& options) {
  TERN_CHECK_OR_RETURN_ERROR(loader != nullptr, InvalidArgument, "data loader is null");
  TERN_ASSIGN_OR_RETURN(const size_t file_size, loader->size());

  const size_t head_size = file_size < kFileHeaderSize ? file_size : kFileHeaderSize;
  FileHeader header;
  uint8_t header_bytes[kFileHeaderSize] = {0};
  {
    auto head = loader->load(0, head_size);
    if (!head.ok()) {
      const SavedMessage cause;
      TERN_RETURN_ERROR(AccessFailed,
                        "cannot read the %zu-byte file header (file of %zu bytes): %s", head_size,
                        file_size, cause.text);
    }
    TERN_CHECK_OR_RETURN_ERROR(head->size() == head_size, AccessFailed,
                               "loader returned %zu bytes for the %zu-byte header", head->size(),
                               head_size);
    if (head_size > 0) memcpy(header_bytes, head->data(), head_size);
    TERN_ASSIGN_OR_RETURN(
        header, decode_file_header(Span<const uint8_t>(header_bytes, head_size), file_size));
  }

  Program program;
  program.header_ = header;
  {
    auto structure = loader->load(static_cast<size_t>(header.flatbuffer_offset),
                                  static_cast<size_t>(header.flatbuffer_size));
    if (!structure.ok()) {
      const SavedMessage cause;
      TERN_RETURN_ERROR(AccessFailed,
                        "cannot read the FlatBuffer [%llu, +%llu) of the %zu-byte "
                        "file: %s",
                        static_cast<ull>(header.flatbuffer_offset),
                        static_cast<ull>(header.flatbuffer_size), file_size, cause.text);
    }
    TERN_CHECK_OR_RETURN_ERROR(structure->size() == header.flatbuffer_size, AccessFailed,
                               "loader returned %zu bytes for the %llu-byte FlatBuffer",
                               structure->size(), static_cast<ull>(header.flatbuffer_size));
    TERN_ASSIGN_OR_RETURN(program.structure_, ensure_aligned(std::move(structure.get()),
                                                             kStructureAlignment, "FlatBuffer"));
  }
  const uint8_t* fb_bytes = static_cast<const uint8_t*>(program.structure_.data());
  const uint64_t computed = compute_header_checksum(
      header_bytes, Span<const uint8_t>(fb_bytes, program.structure_.size()));
  TERN_CHECK_OR_RETURN_ERROR(computed == header.checksum, ChecksumMismatch,
                             "header checksum mismatch: the header says 0x%016llx, the header and "
                             "FlatBuffer bytes hash to 0x%016llx (the file is corrupt)",
                             static_cast<ull>(header.checksum), static_cast<ull>(computed));
  TERN_RETURN_IF_ERROR(internal::verify_flatbuffer(fb_bytes, program.structure_.size()));
  program.program_ = fb::GetProgram(fb_bytes);
  TERN_RETURN_IF_ERROR(internal::verify_program(program.program_, header));

  if (header.segment_area_size > 0) {
    auto area = loader->load(static_cast<size_t>(header.segment_area_offset),
                             static_cast<size_t>(header.segment_area_size));
    if (!area.ok()) {
      const SavedMessage cause;
      TERN_RETURN_ERROR(AccessFailed,
                        "cannot read the segment area [%llu, +%llu) of the "
                        "%zu-byte file: %s",
                        static_cast<ull>(header.segment_area_offset),
                        static_cast<ull>(header.segment_area_size), file_size, cause.text);
    }
    TERN_CHECK_OR_RETURN_ERROR(area->size() == header.segment_area_size, AccessFailed,
                               "loader returned %zu bytes for the %llu-byte segment area",
                               area->size(), static_cast<ull>(header.segment_area_size));
    uintptr_t alignment = 1;
    const auto* segments = program.program_->segments();
    for (uint32_t i = 0; segments != nullptr && i < segments->size(); ++i) {
      if (segments->Get(i)->alignment() > alignment) alignment = segments->Get(i)->alignment();
    }
    if (alignment > kMaxSegmentAlignment) alignment = kMaxSegmentAlignment;
    // A base aligned to 64 bytes is enough for every kernel; only copy below that.
    const uintptr_t needed = alignment < 64 ? alignment : 64;
    if (reinterpret_cast<uintptr_t>(area->data()) % needed == 0) {
      program.segment_area_ = std::move(area.get());
    } else {
      TERN_ASSIGN_OR_RETURN(program.segment_area_,
                            ensure_aligned(std::move(area.get()), alignment, "segment area"));
    }
  }

  if (options.verification == Verification::Full) {
    TERN_RETURN_IF_ERROR(program.verify_segment_checksums(loader));
  }
  return program;
}

Result<Program> Program::load(DataLoader* loader) { return load(loader, LoadOptions()); }

size_t Program::num_methods() const {
  return program_ == nullptr || program_->methods() == nullptr ? 0 : program_->methods()->size();
}

Result<const char*> Program::method_name(size_t index) const {
  const size_t n = num_methods();
  TERN_CHECK_OR_RETURN_ERROR(index < n, InvalidArgument,
                             "method index %zu out of range (the program has %zu methods)", index,
                             n);
  return program_->methods()->Get(static_cast<uint32_t>(index))->name()->c_str();
}

Result<MethodMeta> Program::method_meta(const char* name) const {
  TERN_CHECK_OR_RETURN_ERROR(name != nullptr, InvalidArgument, "method name is null");
  const size_t n = num_methods();
  for (size_t i = 0; i < n; ++i) {
    const fb::Method* method = program_->methods()->Get(static_cast<uint32_t>(i));
    if (strcmp(method->name()->c_str(), name) == 0) {
      return MethodMeta(method);
    }
  }
  char names[512];
  size_t pos = 0;
  names[0] = '\0';
  for (size_t i = 0; i < n && pos < sizeof(names); ++i) {
    const int w = snprintf(names + pos, sizeof(names) - pos, "%s'%s'", i == 0 ? "" : ", ",
                           program_->methods()->Get(static_cast<uint32_t>(i))->name()->c_str());
    if (w < 0) break;
    pos += static_cast<size_t>(w);
  }
  TERN_RETURN_ERROR(NotFound, "no method '%s' in the program; it has %zu: %s", name, n,
                    n == 0 ? "(none)" : names);
}

size_t Program::num_segments() const {
  return program_ == nullptr || program_->segments() == nullptr ? 0 : program_->segments()->size();
}

Result<Span<const uint8_t>> Program::segment_data(uint32_t index) const {
  const size_t n = num_segments();
  TERN_CHECK_OR_RETURN_ERROR(index < n, InvalidArgument,
                             "segment %u out of range (the program has %zu segments)", index, n);
  const fb::Segment* seg = program_->segments()->Get(index);
  if (seg->size() == 0) {
    return Span<const uint8_t>();
  }
  // Verified at load: [offset, +size) lies inside the segment area.
  const uint8_t* base = static_cast<const uint8_t*>(segment_area_.data());
  return Span<const uint8_t>(base + seg->offset(), static_cast<size_t>(seg->size()));
}

Error Program::verify_segment_checksums() const { return verify_segment_checksums(nullptr); }

Error Program::verify_segment_checksums(DataLoader* release_to) const {
  const size_t n = num_segments();
  for (size_t i = 0; i < n; ++i) {
    const fb::Segment* seg = program_->segments()->Get(static_cast<uint32_t>(i));
    auto data = segment_data(static_cast<uint32_t>(i));
    if (!data.ok()) {
      return data.error();
    }
    const uint64_t found = checksum64(data->data(), data->size());
    TERN_CHECK_OR_RETURN_ERROR(found == seg->checksum(), ChecksumMismatch,
                               "segment %zu ([%llu, +%llu) of the segment area): checksum "
                               "expected 0x%016llx, found 0x%016llx (the weights are corrupt)",
                               i, static_cast<ull>(seg->offset()), static_cast<ull>(seg->size()),
                               static_cast<ull>(seg->checksum()), static_cast<ull>(found));
    if (release_to != nullptr) release_to->release_resident(data->data(), data->size());
  }
  return Error::Ok;
}

}  // namespace tern
