// fuzz_vulkan_blob: the vulkan backend's blob reader (backends/vulkan/runtime/blob_reader.h) on
// untrusted bytes (built only with the vulkan backend: TERN_FUZZ_VULKAN_BLOB).
//
// The blob is as untrusted as the program file around it. parse_blob must refuse anything
// malformed with an Error and a message; what it accepts must keep its promises, which the
// entry checks from an exact-size copy (ASan sees one byte past): the value and node tables
// are whole, every constant lies inside the data section and the data section inside the blob,
// every node's operands are values of the table. The reader's per-node checks (every shader
// access inside its buffers) are what init relies on; init itself needs a Vulkan device and is
// not run here (vulkan_blob_test runs every byte flip of a real blob through init on lavapipe).
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "backends/vulkan/runtime/blob_reader.h"
#include "backends/vulkan/vulkan_blob_format.h"
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

void check_plan(const vulkan::BlobPlan& plan, const uint8_t* base, size_t size) {
  const vulkan::BlobHeader& h = plan.header;
  if (std::memcmp(h.magic, vulkan::kBlobMagic, 4) != 0) fuzz_failure("vulkan blob: accepted bad magic");
  if (plan.values == nullptr || plan.nodes == nullptr || h.num_values == 0 || h.num_nodes == 0) {
    fuzz_failure("vulkan blob: accepted, but the value or node table is missing");
  }
  (void)touch(plan.values, sizeof(vulkan::BlobValue) * h.num_values);
  (void)touch(plan.nodes, sizeof(vulkan::BlobNode) * h.num_nodes);
  const uintptr_t begin = reinterpret_cast<uintptr_t>(base);
  const uintptr_t data = reinterpret_cast<uintptr_t>(plan.data);
  if (plan.data_size > 0 &&
      (data < begin || data - begin > size || plan.data_size > size - (data - begin))) {
    fuzz_failure("vulkan blob: accepted, but the data section lies outside the blob");
  }
  for (uint32_t i = 0; i < h.num_values; ++i) {
    const vulkan::BlobValue& v = plan.values[i];
    (void)vulkan::value_bytes(v, h.storage);
    if (v.kind != static_cast<uint32_t>(vulkan::ValueKind::Constant)) continue;
    if (v.data_offset > plan.data_size || v.data_bytes > plan.data_size - v.data_offset) {
      fuzz_failure("vulkan blob: accepted value " + std::to_string(i) +
                   ", a constant outside the data section");
    }
    (void)touch(plan.data + v.data_offset, static_cast<size_t>(v.data_bytes));
  }
  for (uint32_t i = 0; i < h.num_nodes; ++i) {
    const vulkan::BlobNode& n = plan.nodes[i];
    if (n.num_inputs < 1 || n.num_inputs > 4 || n.output >= h.num_values) {
      fuzz_failure("vulkan blob: accepted node " + std::to_string(i) + " with bad operands");
    }
    for (uint32_t k = 0; k < n.num_inputs; ++k) {
      if (n.inputs[k] >= h.num_values) {
        fuzz_failure("vulkan blob: accepted node " + std::to_string(i) + " reading value " +
                     std::to_string(n.inputs[k]) + " of " + std::to_string(h.num_values));
      }
    }
    if (std::strcmp(vulkan::node_op_name(n.op), "?") == 0) {
      fuzz_failure("vulkan blob: accepted node " + std::to_string(i) + " of unknown op " +
                   std::to_string(n.op));
    }
  }
}

}  // namespace

int fuzz_vulkan_blob(const uint8_t* data, size_t size) {
  fuzz_init();
  // The backend gets blobs at 64-byte aligned segment addresses; an exact-size copy.
  void* raw = nullptr;
  if (posix_memalign(&raw, 64, size == 0 ? 1 : size) != 0) return 0;
  std::unique_ptr<uint8_t, FreeDeleter> copy(static_cast<uint8_t*>(raw));
  if (size > 0) std::memcpy(copy.get(), data, size);

  vulkan::BlobPlan plan;
  clear_error_message();
  const Error err = vulkan::parse_blob(Span<const uint8_t>(copy.get(), size), &plan);
  if (err != Error::Ok) {
    if (last_error_message()[0] == '\0') {
      fuzz_failure(std::string("vulkan parse_blob failed without a message: ") + to_string(err));
    }
  } else {
    check_plan(plan, copy.get(), size);
  }
  vulkan::free_blob_plan(&plan);
  vulkan::free_blob_plan(&plan);  // freeing twice (a default plan after the first) is safe
  return 0;
}

}  // namespace tern::fuzz
