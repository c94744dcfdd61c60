// Program shared state (format 1.2): verification of the declarations and of each method's
// view, the buffer layout, Program::shared_state_bytes() / init_shared_state(), and binding a
// method's shared state tensors to the caller's buffer at load.
#include "runtime/executor/shared_state.h"

#include <cstring>

#include "runtime/core/checked_math.h"
#include "runtime/core/dtype.h"
#include "runtime/core/tensor_view.h"
#include "runtime/executor/program.h"
#include "schema/program_generated.h"

namespace tern {
namespace internal {
namespace {

using ull = unsigned long long;

uint32_t count(const fb::Program* program) {
  return program->shared_state() == nullptr ? 0 : program->shared_state()->size();
}

const char* name_of(const fb::SharedState* s) {
  return s->name() != nullptr ? s->name()->c_str() : "";
}

/// Byte size of a verified entry.
uint64_t entry_nbytes(const fb::SharedState* s) {
  uint64_t numel = 1;
  for (uint32_t d = 0; s->sizes() != nullptr && d < s->sizes()->size(); ++d) {
    numel *= static_cast<uint64_t>(s->sizes()->Get(d));
  }
  uint64_t nbytes = 0;
  (void)dtype_nbytes(static_cast<DType>(s->dtype()), numel, &nbytes);
  return nbytes;
}

/// Offset of entry `index` in the buffer (`index` == count: the buffer's size). Verified
/// entries only: verify_shared_state checked that the total does not overflow.
uint64_t entry_offset(const fb::Program* program, uint32_t index) {
  uint64_t offset = 0;
  for (uint32_t i = 0; i < index; ++i) {
    offset += entry_nbytes(program->shared_state()->Get(i));
    offset = (offset + kSharedStateAlignment - 1) & ~(kSharedStateAlignment - 1);
  }
  return offset;
}

/// "f32 [2, 4, 16]" into `out`.
void format_layout(uint8_t dtype, const flatbuffers::Vector<int64_t>* sizes, char* out,
                   size_t size) {
  int n = std::snprintf(out, size, "%s [",
                        is_valid_dtype(dtype) ? to_string(static_cast<DType>(dtype)) : "?");
  for (uint32_t d = 0; sizes != nullptr && d < sizes->size() && n > 0 &&
                       static_cast<size_t>(n) < size;
       ++d) {
    n += std::snprintf(out + n, size - static_cast<size_t>(n), "%s%lld", d == 0 ? "" : ", ",
                       static_cast<long long>(sizes->Get(d)));
  }
  if (n > 0 && static_cast<size_t>(n) < size) std::snprintf(out + n, size - n, "]");
}

}  // namespace

Error verify_shared_state(const fb::Program* program, uint32_t num_segments) {
  const uint32_t n = count(program);
  uint64_t total = 0;
  for (uint32_t i = 0; i < n; ++i) {
    const fb::SharedState* s = program->shared_state()->Get(i);
    TERN_CHECK_OR_RETURN_ERROR(s != nullptr && s->name() != nullptr && s->name()->size() > 0,
                               InvalidProgram, "shared state %u: missing or unnamed", i);
    const char* name = name_of(s);
    const uint8_t dtype = static_cast<uint8_t>(s->dtype());
    TERN_CHECK_OR_RETURN_ERROR(is_valid_dtype(dtype), InvalidProgram,
                               "shared state %u ('%s'): unknown dtype %u", i, name, dtype);
    const auto* sizes = s->sizes();
    const uint32_t rank = sizes == nullptr ? 0 : sizes->size();
    TERN_CHECK_OR_RETURN_ERROR(rank <= kMaxRank, InvalidProgram,
                               "shared state %u ('%s'): rank %u exceeds the maximum rank %zu", i,
                               name, rank, kMaxRank);
    // A [long] vector placed 4 bytes off would be a misaligned load (program_verifier.cpp).
    TERN_CHECK_OR_RETURN_ERROR(
        rank == 0 || reinterpret_cast<uintptr_t>(sizes->data()) % alignof(int64_t) == 0,
        InvalidProgram, "shared state %u ('%s'): sizes are not 8-byte aligned", i, name);
    uint64_t numel = 1;
    for (uint32_t d = 0; d < rank; ++d) {
      const int64_t size = sizes->Get(d);
      TERN_CHECK_OR_RETURN_ERROR(
          size >= 0 && checked_mul(numel, static_cast<uint64_t>(size), &numel), InvalidProgram,
          "shared state %u ('%s'): size %lld of dim %u is negative or overflows", i, name,
          static_cast<long long>(size), d);
    }
    uint64_t nbytes = 0;
    TERN_CHECK_OR_RETURN_ERROR(dtype_nbytes(static_cast<DType>(dtype), numel, &nbytes) &&
                                   checked_add(total, nbytes, &total) &&
                                   checked_align_up(total, kSharedStateAlignment, &total) &&
                                   total <= SIZE_MAX,
                               InvalidProgram,
                               "shared state %u ('%s'): the shared state buffer's size overflows",
                               i, name);
    const int32_t init = s->init_segment();
    if (init == -1) continue;
    TERN_CHECK_OR_RETURN_ERROR(init >= 0 && static_cast<uint32_t>(init) < num_segments,
                               InvalidProgram,
                               "shared state %u ('%s'): init segment %d out of range (%u "
                               "segments)",
                               i, name, init, num_segments);
    const uint64_t seg_size = program->segments()->Get(static_cast<uint32_t>(init))->size();
    TERN_CHECK_OR_RETURN_ERROR(seg_size == nbytes, InvalidProgram,
                               "shared state %u ('%s'): init segment %d has %llu bytes, the "
                               "tensor needs %llu",
                               i, name, init, static_cast<ull>(seg_size), static_cast<ull>(nbytes));
  }
  return Error::Ok;
}

Error check_shared_state_view(const fb::Program* program, const char* method, uint32_t index,
                              const fb::Tensor* tensor, bool is_input) {
  TERN_CHECK_METHOD_OR_RETURN_ERROR(!is_input, InvalidProgram, method,
                                    " input: value %u is a shared state tensor; inputs need "
                                    "arena or caller storage",
                                    index);
  const uint32_t location = tensor->location();
  TERN_CHECK_METHOD_OR_RETURN_ERROR(location < count(program), InvalidProgram, method,
                                    " value %u: shared state %u out of range (the program "
                                    "declares %u)",
                                    index, location, count(program));
  const fb::SharedState* s = program->shared_state()->Get(location);
  TERN_CHECK_METHOD_OR_RETURN_ERROR(tensor->offset() == 0, InvalidProgram, method,
                                    " value %u: offset %llu into shared state '%s' (a view of "
                                    "shared state starts at 0)",
                                    index, static_cast<ull>(tensor->offset()), name_of(s));
  TERN_CHECK_METHOD_OR_RETURN_ERROR(tensor->dynamism() == fb::ShapeDynamism::Static,
                                    InvalidProgram, method,
                                    " value %u: shared state '%s' cannot have dynamic dims", index,
                                    name_of(s));
  const auto* mine = tensor->sizes();
  const auto* declared = s->sizes();
  bool same = tensor->dtype() == s->dtype() &&
              (mine == nullptr ? 0 : mine->size()) == (declared == nullptr ? 0 : declared->size());
  for (uint32_t d = 0; same && mine != nullptr && d < mine->size(); ++d) {
    same = mine->Get(d) == declared->Get(d);
  }
  if (same) return Error::Ok;
  char have[160];
  char want[160];
  format_layout(static_cast<uint8_t>(tensor->dtype()), mine, have, sizeof have);
  format_layout(static_cast<uint8_t>(s->dtype()), declared, want, sizeof want);
  TERN_RETURN_METHOD_ERROR(InvalidProgram, method,
                           " value %u views shared state '%s' as %s, but the program declares "
                           "it %s (the methods disagree about the state layout)",
                           index, name_of(s), have, want);
}

Error check_shared_state_listed(const fb::Method* fb_method, const char* method,
                                const uint8_t* is_state) {
  const auto* values = fb_method->values();
  for (uint32_t v = 0; values != nullptr && v < values->size(); ++v) {
    const fb::Tensor* t = values->Get(v)->value_as_Tensor();
    TERN_CHECK_METHOD_OR_RETURN_ERROR(
        is_state[v] != 0 || t == nullptr || t->storage() != fb::StorageKind::SharedState,
        InvalidProgram, method, " value %u: shared state storage, but not listed as state", v);
  }
  return Error::Ok;
}

Error check_shared_state_init(const char* method, uint32_t index, uint32_t value, int32_t init) {
  TERN_CHECK_METHOD_OR_RETURN_ERROR(init == -1, InvalidProgram, method,
                                    " state %u: value %u is shared state, whose initial value is "
                                    "the program's (init segment %d given)",
                                    index, value, init);
  return Error::Ok;
}

Result<uint8_t*> bind_shared_state(const fb::Program* program, Span<uint8_t> buffer,
                                   const char* method, uint32_t index, uint32_t location) {
  const uint64_t total = entry_offset(program, count(program));
  const char* name = name_of(program->shared_state()->Get(location));
  TERN_CHECK_METHOD_OR_RETURN_ERROR(buffer.data() != nullptr && buffer.size() >= total,
                                    InvalidArgument, method,
                                    " value %u is shared state '%s': MemoryManager::shared_state "
                                    "has %zu bytes, expected a buffer of "
                                    "Program::shared_state_bytes() = %llu bytes, initialised "
                                    "with Program::init_shared_state()",
                                    index, name, buffer.data() == nullptr ? 0 : buffer.size(),
                                    static_cast<ull>(total));
  TERN_CHECK_METHOD_OR_RETURN_ERROR(
      reinterpret_cast<uintptr_t>(buffer.data()) % kSharedStateAlignment == 0, InvalidArgument,
      method, ": the shared state buffer at %p is not %llu-byte aligned",
      static_cast<void*>(buffer.data()), static_cast<ull>(kSharedStateAlignment));
  return buffer.data() + entry_offset(program, location);
}

}  // namespace internal

size_t Program::shared_state_bytes() const {
  return static_cast<size_t>(
      internal::entry_offset(program_, internal::count(program_)));
}

Error Program::init_shared_state(Span<uint8_t> buffer) const {
  const uint64_t total = shared_state_bytes();
  if (total == 0) return Error::Ok;
  TERN_CHECK_OR_RETURN_ERROR(buffer.data() != nullptr && buffer.size() >= total, InvalidArgument,
                             "init_shared_state: the buffer has %zu bytes, the program's shared "
                             "state needs %llu (Program::shared_state_bytes())",
                             buffer.data() == nullptr ? 0 : buffer.size(),
                             static_cast<unsigned long long>(total));
  TERN_CHECK_OR_RETURN_ERROR(
      reinterpret_cast<uintptr_t>(buffer.data()) % internal::kSharedStateAlignment == 0,
      InvalidArgument, "init_shared_state: the buffer at %p is not %llu-byte aligned",
      static_cast<void*>(buffer.data()),
      static_cast<unsigned long long>(internal::kSharedStateAlignment));
  std::memset(buffer.data(), 0, static_cast<size_t>(total));
  const uint32_t n = internal::count(program_);
  for (uint32_t i = 0; i < n; ++i) {
    const fb::SharedState* s = program_->shared_state()->Get(i);
    if (s->init_segment() < 0) continue;
    auto bytes = segment_data(static_cast<uint32_t>(s->init_segment()));
    if (!bytes.ok()) return bytes.error();
    if (bytes->size() > 0) {
      std::memcpy(buffer.data() + internal::entry_offset(program_, i), bytes->data(),
                  bytes->size());
    }
  }
  return Error::Ok;
}

}  // namespace tern
