// fuzz_cuda_blob: the cuda backend's blob reader (backends/cuda/runtime/blob_reader.h) on
// untrusted bytes. Host code only: built with or without nvcc (TERN_FUZZ_CUDA_BLOB; the fuzz
// build leaves the backend itself off and links tern::cuda_blob_reader alone).
//
// The blob is as untrusted as the program file around it. parse_blob must refuse anything
// malformed with an Error and a message; what it accepts must keep the promises the runtime
// half relies on without re-checking, which the entry checks from an exact-size copy (ASan
// sees one byte past): the value and node tables are whole, every value lies inside its device
// buffer (constants in the weights buffer, the rest in the arena), aliases point at a
// non-alias value of the same size and offset, and every node's operands are values of the
// table. init itself needs a CUDA device and is not run here.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "backends/cuda/cuda_blob_format.h"
#include "backends/cuda/runtime/blob_reader.h"
#include "runtime/core/error.h"
#include "tests/fuzz/fuzz_entries.h"

namespace tern::fuzz {
namespace {

struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};

/// Reads every byte of [p, p + n) and returns something the compiler cannot drop.
uint8_t touch(const void* p, size_t n) {
  const volatile uint8_t* b = static_cast<const volatile uint8_t*>(p);
  uint8_t x = 0;
  for (size_t i = 0; i < n; ++i) x ^= b[i];
  return x;
}

void check_plan(const cuda::BlobPlan& plan, size_t size) {
  const cuda::BlobHeader& h = plan.header;
  if (std::memcmp(h.magic, cuda::kBlobMagic, 4) != 0) fuzz_failure("cuda blob: accepted bad magic");
  if (h.blob_bytes != size) fuzz_failure("cuda blob: accepted, but blob_bytes is not its size");
  if (h.num_values == 0 || h.num_nodes == 0 || plan.values == nullptr || plan.nodes == nullptr) {
    fuzz_failure("cuda blob: accepted, but the value or node table is missing");
  }
  (void)touch(plan.values, sizeof(cuda::BlobValue) * h.num_values);
  (void)touch(plan.nodes, sizeof(cuda::BlobNode) * h.num_nodes);
  for (uint32_t i = 0; i < h.num_values; ++i) {
    const cuda::BlobValue& v = plan.values[i];
    const std::string what = "cuda blob: accepted value " + std::to_string(i);
    const uint64_t buffer =
        v.kind == static_cast<uint32_t>(cuda::ValueKind::Constant) ? h.weights_bytes : h.arena_bytes;
    if (v.offset > buffer || v.bytes > buffer - v.offset) fuzz_failure(what + " outside its buffer");
    if (v.offset % cuda::kDeviceAlignment != 0) fuzz_failure(what + " at a misaligned offset");
    if (v.rank > cuda::kMaxDims) fuzz_failure(what + " of rank > kMaxDims");
    (void)cuda::value_numel(v);
    if (v.alias_of != cuda::kNoValue) {
      if (v.alias_of >= h.num_values) fuzz_failure(what + ", an alias of no value");
      const cuda::BlobValue& t = plan.values[v.alias_of];
      if (t.alias_of != cuda::kNoValue || t.bytes != v.bytes || t.offset != v.offset ||
          t.kind == static_cast<uint32_t>(cuda::ValueKind::Constant)) {
        fuzz_failure(what + ", an alias that does not match its target");
      }
    }
  }
  for (uint32_t i = 0; i < h.num_nodes; ++i) {
    const cuda::BlobNode& n = plan.nodes[i];
    const std::string what = "cuda blob: accepted node " + std::to_string(i);
    if (n.num_inputs > cuda::kMaxNodeInputs) fuzz_failure(what + " with too many inputs");
    for (uint32_t k = 0; k < n.num_inputs; ++k) {
      if (n.inputs[k] != cuda::kNoValue && n.inputs[k] >= h.num_values) {
        fuzz_failure(what + " reading no value");
      }
    }
    if (n.output >= h.num_values) fuzz_failure(what + " writing no value");
    (void)cuda::node_op_name(n.op);
  }
}

}  // namespace

int fuzz_cuda_blob(const uint8_t* data, size_t size) {
  fuzz_init();
  // Blobs sit at 64-byte aligned segment addresses; an exact-size copy.
  void* raw = nullptr;
  if (posix_memalign(&raw, 64, size == 0 ? 1 : size) != 0) return 0;
  std::unique_ptr<uint8_t, FreeDeleter> copy(static_cast<uint8_t*>(raw));
  if (size > 0) std::memcpy(copy.get(), data, size);

  cuda::BlobPlan plan;
  clear_error_message();
  const Error err = cuda::parse_blob(Span<const uint8_t>(copy.get(), size), &plan);
  if (err != Error::Ok) {
    if (last_error_message()[0] == '\0') {
      fuzz_failure(std::string("cuda parse_blob failed without a message: ") + to_string(err));
    }
    if (err != Error::InvalidProgram && err != Error::DelegateInvalidCompatibility &&
        err != Error::MemoryAllocationFailed) {
      fuzz_failure(std::string("cuda parse_blob: undocumented error ") + to_string(err) + ": " +
                   last_error_message());
    }
    cuda::free_blob_plan(&plan);
    return 0;
  }
  check_plan(plan, size);
  cuda::free_blob_plan(&plan);
  cuda::free_blob_plan(&plan);  // freeing twice (a default plan after the first) is safe
  return 0;
}

}  // namespace tern::fuzz
