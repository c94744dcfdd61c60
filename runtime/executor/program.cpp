#include "runtime/executor/program.h"

#include <cstdint>
#include <cstdio>
#include <cstring>

#include "runtime/core/checked_math.h"
#include "runtime/core/log.h"
#include "runtime/executor/program_verifier.h"
#include "schema/program_generated.h"

namespace tern {
namespace {

using ull = unsigned long long;

/// The alignment DataLoader::load() promises for a range at `offset` (data_loader.h).
size_t promised_alignment(uint64_t offset) {
  if (offset == 0) return kLoaderAlignment;
  const uint64_t lowest = offset & (~offset + 1);
  return lowest < kLoaderAlignment ? static_cast<size_t>(lowest) : kLoaderAlignment;
}

/// InvalidArgument when a loader broke its alignment promise (a caller's own DataLoader).
Error check_loader_alignment(const FreeableBuffer& buffer, uint64_t offset, const char* what) {
  const size_t alignment = promised_alignment(offset);
  TERN_CHECK_OR_RETURN_ERROR(
      buffer.size() == 0 || reinterpret_cast<uintptr_t>(buffer.data()) % alignment == 0,
      InvalidArgument,
      "the data loader returned the %s (file offset %llu) at address %p, which is not "
      "%zu-byte aligned as DataLoader::load() promises",
      what, static_cast<ull>(offset), buffer.data(), alignment);
  return Error::Ok;
}

/// Release function of segment_buffer(): the loader may drop the bytes from memory.
void release_to_loader(void* loader, void* data, size_t size) {
  if (loader != nullptr) static_cast<DataLoader*>(loader)->release_resident(data, size);
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
      TERN_RETURN_CHAINED_ERROR(AccessFailed,
                                "cannot read the %zu-byte file header (file of %zu bytes)",
                                head_size, file_size);
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
      TERN_RETURN_CHAINED_ERROR(AccessFailed,
                                "cannot read the FlatBuffer [%llu, +%llu) of the %zu-byte file",
                                static_cast<ull>(header.flatbuffer_offset),
                                static_cast<ull>(header.flatbuffer_size), file_size);
    }
    TERN_CHECK_OR_RETURN_ERROR(structure->size() == header.flatbuffer_size, AccessFailed,
                               "loader returned %zu bytes for the %llu-byte FlatBuffer",
                               structure->size(), static_cast<ull>(header.flatbuffer_size));
    TERN_RETURN_IF_ERROR(
        check_loader_alignment(structure.get(), header.flatbuffer_offset, "FlatBuffer"));
    program.structure_ = std::move(structure.get());
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
      TERN_RETURN_CHAINED_ERROR(AccessFailed,
                                "cannot read the segment area [%llu, +%llu) of the %zu-byte file",
                                static_cast<ull>(header.segment_area_offset),
                                static_cast<ull>(header.segment_area_size), file_size);
    }
    TERN_CHECK_OR_RETURN_ERROR(area->size() == header.segment_area_size, AccessFailed,
                               "loader returned %zu bytes for the %llu-byte segment area",
                               area->size(), static_cast<ull>(header.segment_area_size));
    // Segments are verified to lie at multiples of their alignment inside the area, so the
    // loader's promise for the area's offset carries over to every segment.
    TERN_RETURN_IF_ERROR(
        check_loader_alignment(area.get(), header.segment_area_offset, "segment area"));
    program.segment_area_ = std::move(area.get());
  }
  program.loader_ = loader;

  if (options.verification == Verification::Full) {
    TERN_RETURN_IF_ERROR(program.verify_segment_checksums(/*release_checked=*/true));
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

Result<FreeableBuffer> Program::segment_buffer(uint32_t index) const {
  TERN_ASSIGN_OR_RETURN(const Span<const uint8_t> data, segment_data(index));
  return FreeableBuffer(data.data(), data.size(), release_to_loader, loader_);
}

Error Program::verify_segment_checksums() const { return verify_segment_checksums(false); }

void Program::release_resident(const void* data, size_t size) const {
  const uintptr_t begin = reinterpret_cast<uintptr_t>(segment_area_.data());
  const uintptr_t at = reinterpret_cast<uintptr_t>(data);
  if (loader_ == nullptr || data == nullptr || at < begin ||
      !range_within(at - begin, size, segment_area_.size())) {
    return;
  }
  loader_->release_resident(data, size);
}

Error Program::verify_segment_checksums(bool release_checked) const {
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
    if (release_checked && loader_ != nullptr) {
      loader_->release_resident(data->data(), data->size());
    }
  }
  return Error::Ok;
}

}  // namespace tern
