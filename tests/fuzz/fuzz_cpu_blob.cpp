// fuzz_cpu_blob: the cpu backend's blob reader (backends/cpu/runtime/blob_reader.h) on
// untrusted bytes, then, for small blobs that parse, the backend's init and destroy (built
// only with the cpu backend: TERN_FUZZ_CPU_BLOB).
//
// A delegate blob sits in a checksummed segment, but a crafted file carries valid checksums:
// the blob is as untrusted as the rest of the file. parse_blob must refuse anything
// malformed with an Error and a message; what it accepts must keep its promises (the tables
// it copied are whole, every constant lies inside the data section, the data section inside
// the blob), which the entry checks by reading those bytes from an exact-size copy (ASan
// sees one byte past). A blob whose values hold at most kMaxInitElements floats in all then
// goes through CpuBackend::init (stage plan, weight buffers, one worker thread) and, when its
// weight sources are all f32, prepare with zero-filled arguments of the dims the blob gives
// (the recipes, the XNNPACK subgraphs and runtimes) and destroy; init and prepare must succeed
// or fail with a message.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "backends/cpu/cpu_blob_format.h"
#include "backends/cpu/runtime/blob_reader.h"
#include "backends/cpu/runtime/register_cpu_backend.h"
#include "runtime/backend/backend.h"
#include "runtime/core/error.h"
#include "runtime/core/evalue.h"
#include "runtime/core/tensor_view.h"
#include "tests/fuzz/fuzz_entries.h"

namespace tern::fuzz {
namespace {

/// Most floats (sum over the blob's values) for which init is tried: keeps XNNPACK's
/// allocations (internal values, workspace) to a few tens of MB.
constexpr uint64_t kMaxInitElements = uint64_t{1} << 20;
/// Most nodes for which init is tried (each is an XNNPACK node definition).
constexpr uint32_t kMaxInitNodes = 256;

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

/// Checks what parse_blob promised about `plan` for the blob [base, base + size); returns the
/// values' total element count (saturating at UINT64_MAX).
uint64_t check_plan(const cpu::BlobPlan& plan, const uint8_t* base, size_t size) {
  const cpu::BlobHeader& h = plan.header;
  if (std::memcmp(h.magic, cpu::kBlobMagic, 4) != 0) fuzz_failure("cpu blob: accepted bad magic");
  if ((h.num_values > 0 && plan.values == nullptr) || (h.num_nodes > 0 && plan.nodes == nullptr)) {
    fuzz_failure("cpu blob: accepted, but the value or node table is missing");
  }
  (void)touch(plan.values, sizeof(cpu::BlobValue) * h.num_values);
  (void)touch(plan.nodes, sizeof(cpu::BlobNode) * h.num_nodes);
  if (h.num_recipes > 0 && plan.recipes == nullptr) {
    fuzz_failure("cpu blob: accepted, but the recipe table is missing");
  }
  (void)touch(plan.recipes, sizeof(cpu::BlobRecipe) * h.num_recipes);
  const uintptr_t begin = reinterpret_cast<uintptr_t>(base);
  const uintptr_t data = reinterpret_cast<uintptr_t>(plan.data);
  if (plan.data_size > 0 &&
      (data < begin || data - begin > size || plan.data_size > size - (data - begin))) {
    fuzz_failure("cpu blob: accepted, but the data section lies outside the blob");
  }
  uint64_t total = 0;
  for (uint32_t i = 0; i < h.num_values; ++i) {
    const cpu::BlobValue& v = plan.values[i];
    const uint64_t n = cpu::value_numel(v);
    total = total > UINT64_MAX - n ? UINT64_MAX : total + n;
    if (v.kind != static_cast<uint32_t>(cpu::ValueKind::Constant)) continue;
    if (v.data_offset > plan.data_size || v.data_bytes > plan.data_size - v.data_offset) {
      fuzz_failure("cpu blob: accepted value " + std::to_string(i) +
                   ", a constant outside the data section");
    }
    (void)touch(plan.data + v.data_offset, static_cast<size_t>(v.data_bytes));
  }
  return total;
}

}  // namespace

int fuzz_cpu_blob(const uint8_t* data, size_t size) {
  fuzz_init();
  // The backend gets blobs at 64-byte aligned segment addresses; an exact-size copy.
  void* raw = nullptr;
  if (posix_memalign(&raw, 64, size == 0 ? 1 : size) != 0) return 0;
  std::unique_ptr<uint8_t, FreeDeleter> copy(static_cast<uint8_t*>(raw));
  if (size > 0) std::memcpy(copy.get(), data, size);
  const Span<const uint8_t> blob(copy.get(), size);

  cpu::BlobPlan plan;
  clear_error_message();
  const Error err = cpu::parse_blob(blob, &plan);
  if (err != Error::Ok) {
    if (last_error_message()[0] == '\0') {
      fuzz_failure(std::string("parse_blob failed without a message: ") + to_string(err));
    }
    cpu::free_blob_plan(&plan);
    return 0;
  }
  const uint64_t elements = check_plan(plan, copy.get(), size);
  const uint32_t nodes = plan.header.num_nodes;
  if (elements > kMaxInitElements || nodes > kMaxInitNodes) {
    // Accepted, but too large to initialize and prepare here (the arguments below would be
    // allocated at the values' sizes: up to 2^40 elements each).
    cpu::free_blob_plan(&plan);
    return 0;
  }
  // The arguments prepare reads, from the blob's own values: one tensor per external or source
  // value (tern sizes: NHWC values are [N, C, H, W]), zero-filled.
  const uint32_t num_args = plan.header.num_args;
  std::vector<std::vector<int64_t>> arg_sizes(num_args);
  std::vector<TensorView> views(num_args);
  std::vector<std::vector<uint8_t>> arg_bytes(num_args);
  bool preparable = true;
  for (uint32_t i = 0; i < plan.header.num_values; ++i) {
    const cpu::BlobValue& v = plan.values[i];
    const cpu::ValueKind k = static_cast<cpu::ValueKind>(v.kind);
    if (k != cpu::ValueKind::ExternalInput && k != cpu::ValueKind::ExternalOutput &&
        k != cpu::ValueKind::Source) {
      continue;
    }
    if (k == cpu::ValueKind::Source && v.source % 256 != static_cast<uint32_t>(cpu::SourceType::F32)) {
      preparable = false;  // a quantized weight needs its scheme's tensors
      continue;
    }
    std::vector<int64_t>& sz = arg_sizes[v.arg];
    for (uint32_t d = 0; d < v.rank; ++d) sz.push_back(static_cast<int64_t>(v.dims[d]));
    if (v.layout == static_cast<uint32_t>(cpu::ValueLayout::Nhwc)) {
      sz = {sz[0], sz[3], sz[1], sz[2]};
    }
    const bool int64 = v.layout == static_cast<uint32_t>(cpu::ValueLayout::Int64Plain);
    TensorView& t = views[v.arg];
    t.dtype = int64 ? DType::I64 : DType::F32;
    t.rank = v.rank;
    t.sizes = sz.data();
    arg_bytes[v.arg].assign(static_cast<size_t>(cpu::value_numel(v) * (int64 ? 8 : 4)), 0);
    t.data = arg_bytes[v.arg].data();
    t.nbytes = arg_bytes[v.arg].size();
  }
  cpu::free_blob_plan(&plan);
  cpu::free_blob_plan(&plan);  // freeing twice (a default plan after the first) is safe

  const BackendInterface& backend = cpu_backend_interface();
  if (!backend.is_available()) return 0;
  BackendInitContext context;
  context.method_name = "forward";
  context.num_threads = 1;
  clear_error_message();
  auto handle = backend.init(context, FreeableBuffer(blob.data(), blob.size(), nullptr),
                              Span<const CompileSpecView>());
  if (handle.ok()) {
    if (preparable) {
      std::vector<EValue> values(num_args);
      std::vector<EValue*> ptrs(num_args);
      for (uint32_t a = 0; a < num_args; ++a) {
        if (views[a].sizes != nullptr) values[a] = EValue::from_tensor(&views[a]);
        ptrs[a] = &values[a];
      }
      clear_error_message();
      const Error e = backend.prepare(*handle, Span<EValue*>(ptrs.data(), ptrs.size()));
      if (e != Error::Ok && last_error_message()[0] == '\0') {
        fuzz_failure(std::string("cpu backend prepare failed without a message: ") +
                     to_string(e));
      }
    }
    backend.destroy(*handle);
  } else if (last_error_message()[0] == '\0') {
    fuzz_failure(std::string("cpu backend init failed without a message: ") +
                 to_string(handle.error()));
  }
  return 0;
}

}  // namespace tern::fuzz
