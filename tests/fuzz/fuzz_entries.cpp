// The fuzz targets' entry functions (see fuzz_entries.h).
#include "tests/fuzz/fuzz_entries.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "runtime/core/log.h"
#include "runtime/executor/file_header.h"
#include "runtime/executor/flatbuffer_verifier.h"
#include "runtime/executor/method.h"
#include "runtime/executor/program.h"
#include "runtime/extension/method_memory.h"
#include "runtime/loader/buffer_data_loader.h"
#include "schema/program_generated.h"
#include "tests/fuzz/sample_programs.h"
#include "tools/cli/npy.h"
#include "tools/compiler/compile.h"
#include "tools/compiler/graph_json.h"
#include "tools/compiler/safetensors.h"

namespace tern::fuzz {

const char kGraphJsonSeparator[] = "\n#SAFETENSORS#\n";

namespace {

using Buffer = HeapBlock;

/// Exactly `size` bytes (ASan sees one past the end) aligned to `alignment`; null on failure.
Buffer aligned_buffer(size_t size, size_t alignment) {
  return allocate_heap_block(size, alignment, /*exact=*/true);
}

/// Reads every byte of `bytes` (so ASan checks the range) and returns a value the compiler
/// cannot drop.
uint8_t touch(const void* bytes, size_t size) {
  const volatile uint8_t* p = static_cast<const volatile uint8_t*>(bytes);
  uint8_t x = 0;
  for (size_t i = 0; i < size; ++i) x ^= p[i];
  return x;
}

void touch_string(const char* s) {
  if (s != nullptr) (void)touch(s, std::strlen(s));
}

/// The input copied into 64-byte aligned memory (as a file or mmap would be).
struct InputCopy {
  Buffer bytes;
  size_t size = 0;
  InputCopy(const uint8_t* data, size_t n) : bytes(aligned_buffer(n, 64)), size(n) {
    if (n > 0) std::memcpy(bytes.get(), data, n);
  }
};

void exercise_tensor_info(Result<TensorInfo> info) {
  if (!info.ok()) return;
  (void)touch(info->sizes.data(), info->sizes.size() * sizeof(int64_t));
  touch_string(info->name);
}

/// Reads everything MethodMeta offers, including its error paths.
void exercise_meta(const MethodMeta& meta) {
  touch_string(meta.name());
  for (size_t i = 0; i <= meta.num_inputs(); ++i) {
    (void)meta.input_tag(i);
    exercise_tensor_info(meta.input_tensor_info(i));
  }
  for (size_t i = 0; i <= meta.num_outputs(); ++i) {
    (void)meta.output_tag(i);
    exercise_tensor_info(meta.output_tensor_info(i));
  }
  for (size_t i = 0; i <= meta.num_arenas(); ++i) {
    (void)meta.arena_size(i);
    (void)meta.arena_alignment(i);
    (void)meta.arena_lower_bound(i);
  }
  (void)meta.temp_allocator_bytes();
  (void)meta.num_instructions();
  (void)meta.num_delegates();
  (void)meta.method_allocator_bytes();
}

void exercise_program(const Program& program) {
  for (size_t i = 0; i <= program.num_methods(); ++i) {
    auto name = program.method_name(i);
    if (!name.ok()) continue;
    touch_string(*name);
    auto meta = program.method_meta(*name);
    if (!meta.ok())
      fuzz_failure(std::string("method_meta of listed method failed: ") + last_error_message());
    exercise_meta(*meta);
  }
  (void)program.method_meta("no such method");
  for (uint32_t s = 0; s <= program.num_segments(); ++s) {
    auto bytes = program.segment_data(s);
    if (bytes.ok()) (void)touch(bytes->data(), bytes->size());
  }
  (void)program.verify_segment_checksums();
}

/// Allocates `memory` for one method, each buffer exactly as its MethodMeta plans. False
/// when the method needs more than kMaxMethodMemory (or an odd alignment).
bool allocate_method_memory(const MethodMeta& meta, MethodMemory* memory) {
  auto sizes = MethodMemorySizes::planned(meta);
  if (!sizes.ok()) return false;
  uint64_t total = sizes->method_bytes;
  if (total > kMaxMethodMemory || sizes->temp_bytes > kMaxMethodMemory - total) return false;
  total += sizes->temp_bytes;
  for (size_t a = 0; a < sizes->arenas.size(); ++a) {
    if (sizes->arenas[a] > kMaxMethodMemory - total || sizes->alignments[a] > 4096) return false;
    total += sizes->arenas[a];
  }
  MethodMemoryOptions options;
  options.exact = true;
  return memory->allocate(*sizes, options) == Error::Ok;
}

/// A fresh shared state buffer for `program` (format 1.2), initialised; empty when the program
/// has none or when it is larger than a fuzzed program may ask for (false then).
bool shared_state_buffer(const Program& program, Buffer* buffer, Span<uint8_t>* span) {
  const size_t bytes = program.shared_state_bytes();
  *span = Span<uint8_t>();
  if (bytes == 0) return true;
  if (bytes > kMaxMethodMemory) return false;
  *buffer = aligned_buffer(bytes, 64);
  *span = Span<uint8_t>(buffer->get(), bytes);
  if (program.init_shared_state(*span) != Error::Ok) {
    fuzz_failure(std::string("init_shared_state: ") + last_error_message());
  }
  return true;
}

void load_methods(const Program& program) {
  static const char* const kDisabled[] = {kSampleBackendName};
  Buffer shared_block;
  Span<uint8_t> shared;
  if (!shared_state_buffer(program, &shared_block, &shared)) return;
  for (size_t i = 0; i < program.num_methods(); ++i) {
    auto name = program.method_name(i);
    if (!name.ok()) continue;
    auto meta = program.method_meta(*name);
    if (!meta.ok()) continue;
    for (int pass = 0; pass < 2; ++pass) {
      MethodMemory memory;
      if (!allocate_method_memory(*meta, &memory)) break;
      MethodLoadOptions options;
      if (pass == 1) options.disabled_backends = Span<const char* const>(kDisabled, 1);
      memory.manager()->shared_state = shared;
      auto method = program.load_method(*name, memory.manager(), options);
      if (!method.ok()) {
        if (last_error_message()[0] == '\0') {
          fuzz_failure(std::string("load_method failed without a message: ") +
                       to_string(method.error()));
        }
        continue;
      }
      // Reading an output before execute is a clean InvalidState, never a crash.
      if (method->num_outputs() > 0 && method->output(0).ok()) {
        fuzz_failure("output(0) succeeded before execute()");
      }
      (void)method->delegate_path(method->num_delegate_calls());
    }
  }
}

// ---- fuzz_execute -------------------------------------------------------------------------

/// Bytes of every output tensor of `method`, in order.
std::vector<uint8_t> output_bytes(Method& method) {
  std::vector<uint8_t> all;
  for (size_t i = 0; i < method.num_outputs(); ++i) {
    auto out = method.output(i);
    if (!out.ok())
      fuzz_failure(std::string("output() failed after execute: ") + last_error_message());
    const uint8_t* p = static_cast<const uint8_t*>((*out)->data);
    all.insert(all.end(), p, p + (*out)->nbytes);
  }
  return all;
}

struct LoadedSample {
  Buffer bytes;
  std::unique_ptr<BufferDataLoader> loader;
  std::unique_ptr<Program> program;
};

const LoadedSample& loaded_sample(size_t index) {
  static std::vector<std::unique_ptr<LoadedSample>> cache(sample_programs().size());
  std::unique_ptr<LoadedSample>& slot = cache.at(index);
  if (!slot) {
    const std::vector<uint8_t>& bytes = sample_program_bytes(index);
    slot = std::make_unique<LoadedSample>();
    slot->bytes = aligned_buffer(bytes.size(), 64);
    std::memcpy(slot->bytes.get(), bytes.data(), bytes.size());
    slot->loader = std::make_unique<BufferDataLoader>(slot->bytes.get(), bytes.size());
    auto program = Program::load(slot->loader.get());
    if (!program.ok())
      fuzz_failure(std::string("sample program does not load: ") + last_error_message());
    slot->program = std::make_unique<Program>(std::move(*program));
  }
  return *slot;
}

/// Runs method `name` of `program` on tensor data taken from `data` (zero-filled past its end)
/// and returns the outputs of `runs` executions, concatenated.
std::vector<uint8_t> run_sample(const Program& program, const char* name, bool fallback,
                                const uint8_t* data, size_t size, int runs) {
  static const char* const kDisabled[] = {kSampleBackendName};
  auto meta = program.method_meta(name);
  if (!meta.ok()) fuzz_failure(last_error_message());
  MethodMemory memory;
  if (!allocate_method_memory(*meta, &memory)) fuzz_failure("sample program memory");
  MethodLoadOptions options;
  if (fallback) options.disabled_backends = Span<const char* const>(kDisabled, 1);
  // Each run starts from the program's initial shared state, so that the backend and the
  // fallback runs see the same state.
  Buffer shared_block;
  Span<uint8_t> shared;
  if (!shared_state_buffer(program, &shared_block, &shared)) fuzz_failure("shared state size");
  memory.manager()->shared_state = shared;
  auto method = program.load_method(name, memory.manager(), options);
  if (!method.ok()) fuzz_failure(std::string("sample load_method: ") + last_error_message());
  std::vector<std::vector<uint8_t>> inputs(method->num_inputs());
  std::vector<std::vector<int64_t>> shapes(method->num_inputs());
  size_t used = 0;
  for (size_t i = 0; i < method->num_inputs(); ++i) {
    auto info = meta->input_tensor_info(i);
    if (!info.ok()) fuzz_failure(last_error_message());
    inputs[i].assign(static_cast<size_t>(info->nbytes), 0);
    const size_t n = std::min(inputs[i].size(), size - used);
    if (n > 0) std::memcpy(inputs[i].data(), data + used, n);
    used += n;
    shapes[i].assign(info->sizes.begin(), info->sizes.end());
  }
  std::vector<uint8_t> outputs;
  for (int run = 0; run < runs; ++run) {
    for (size_t i = 0; i < method->num_inputs(); ++i) {
      auto info = meta->input_tensor_info(i);
      TensorView view;
      view.dtype = info->dtype;
      view.rank = static_cast<uint32_t>(shapes[i].size());
      view.sizes = shapes[i].data();
      view.data = inputs[i].data();
      view.nbytes = inputs[i].size();
      if (method->set_input(i, view) != Error::Ok) {
        fuzz_failure(std::string("sample set_input: ") + last_error_message());
      }
    }
    if (method->execute() != Error::Ok) {
      fuzz_failure(std::string("sample execute: ") + last_error_message());
    }
    const std::vector<uint8_t> out = output_bytes(*method);
    outputs.insert(outputs.end(), out.begin(), out.end());
  }
  return outputs;
}

/// A folder of this process for the weights file, removed at exit. (Never destroyed: the exit
/// handler runs after static destructors may have run.)
const std::string& graph_json_dir() {
  static const std::string* dir = [] {
    const std::filesystem::path path = std::filesystem::temp_directory_path() /
                                       ("tern_fuzz_graph_json_" + std::to_string(::getpid()));
    std::filesystem::create_directories(path);
    auto* leaked = new std::string(path.string());
    std::atexit([] {
      std::error_code ignored;
      std::filesystem::remove_all(graph_json_dir(), ignored);
    });
    return leaked;
  }();
  return *dir;
}

}  // namespace

bool fix_header_checksum(uint8_t* bytes, size_t size) {
  if (size < kFileHeaderSize) return false;
  auto header = decode_file_header(Span<const uint8_t>(bytes, kFileHeaderSize), size);
  if (!header.ok()) return false;
  const uint64_t offset = header->flatbuffer_offset;
  const uint64_t length = header->flatbuffer_size;
  if (offset > size || length > size - offset) return false;
  const uint64_t checksum =
      compute_header_checksum(bytes, Span<const uint8_t>(bytes + offset, length));
  uint8_t encoded[8];
  for (int i = 0; i < 8; ++i) encoded[i] = static_cast<uint8_t>(checksum >> (8 * i));
  if (std::memcmp(bytes + kChecksumFieldOffset, encoded, 8) == 0) return false;
  std::memcpy(bytes + kChecksumFieldOffset, encoded, 8);
  return true;
}

namespace {

/// Oracle: tern's table-driven FlatBuffer verifier (runtime/executor/flatbuffer_verifier.h)
/// and the verifier flatc generates accept exactly the same FlatBuffers.
void check_flatbuffer_verifiers(const uint8_t* bytes, size_t size) {
  if (size < kFileHeaderSize) return;
  auto header = decode_file_header(Span<const uint8_t>(bytes, kFileHeaderSize), size);
  if (!header.ok()) return;
  const uint64_t offset = header->flatbuffer_offset;
  const uint64_t length = header->flatbuffer_size;
  if (offset > size || length > size - offset || offset % 8 != 0 ||
      length >= FLATBUFFERS_MAX_BUFFER_SIZE) {
    return;
  }
  const uint8_t* fb_bytes = bytes + offset;
  flatbuffers::Verifier::Options options;
  options.max_depth = internal::kFlatbufferMaxDepth;
  options.max_tables = internal::kFlatbufferMaxTables;
  options.check_alignment = true;
  flatbuffers::Verifier verifier(fb_bytes, length, options);
  const bool generated = length >= 8 && fb::VerifyProgramBuffer(verifier);
  const bool compact = internal::verify_program_flatbuffer(fb_bytes, length);
  if (generated != compact) {
    fuzz_failure(std::string("FlatBuffer verifiers disagree: generated ") +
                 (generated ? "accepts" : "rejects") + ", table-driven " +
                 (compact ? "accepts" : "rejects"));
  }
}

}  // namespace

void fuzz_failure(const std::string& what) {
  std::fprintf(stderr, "fuzz finding: %s\n", what.c_str());
  std::fflush(stderr);
  std::abort();
}

const char* target_name(Target target) {
  switch (target) {
    case Target::ProgramLoad:
      return "fuzz_program_load";
    case Target::MethodLoad:
      return "fuzz_method_load";
    case Target::Execute:
      return "fuzz_execute";
    case Target::GraphJson:
      return "fuzz_graph_json";
    case Target::Npy:
      return "fuzz_npy";
    case Target::CpuBlob:
      return "fuzz_cpu_blob";
    case Target::VulkanBlob:
      return "fuzz_vulkan_blob";
    case Target::CudaBlob:
      return "fuzz_cuda_blob";
  }
  return "?";
}

void fuzz_init() {
  static bool done = false;
  if (done) return;
  done = true;
  set_log_level(LogLevel::Error);
  if (!register_sample_kernels_and_backend()) fuzz_failure("registration failed");
}

int fuzz_program_load(const uint8_t* data, size_t size) {
  fuzz_init();
  InputCopy input(data, size);
  {
    BufferDataLoader loader(input.bytes.get(), input.size);
    Program::LoadOptions options;
    options.verification = Program::Verification::Full;
    auto program = Program::load(&loader, options);
    if (program.ok()) {
      exercise_program(*program);
    } else if (last_error_message()[0] == '\0') {
      fuzz_failure(std::string("Program::load failed without a message: ") +
                   to_string(program.error()));
    }
  }
  // Past a wrong header checksum, to reach the FlatBuffer verifier with mutated structure.
  const bool fixed = fix_header_checksum(input.bytes.get(), input.size);
  check_flatbuffer_verifiers(input.bytes.get(), input.size);
  if (fixed) {
    BufferDataLoader loader(input.bytes.get(), input.size);
    Program::LoadOptions options;
    options.verification = Program::Verification::Structure;
    auto program = Program::load(&loader, options);
    if (program.ok()) exercise_program(*program);
  }
  return 0;
}

int fuzz_method_load(const uint8_t* data, size_t size) {
  fuzz_init();
  InputCopy input(data, size);
  fix_header_checksum(input.bytes.get(), input.size);
  BufferDataLoader loader(input.bytes.get(), input.size);
  Program::LoadOptions options;
  options.verification = Program::Verification::Structure;
  auto program = Program::load(&loader, options);
  if (program.ok()) load_methods(*program);
  return 0;
}

int fuzz_execute(const uint8_t* data, size_t size) {
  fuzz_init();
  if (size < 2) return 0;
  const size_t index = data[0] % sample_programs().size();
  const uint8_t flags = data[1];
  const LoadedSample& sample = loaded_sample(index);
  const Program& program = *sample.program;
  const int runs = 1 + (flags & 1);
  for (size_t m = 0; m < program.num_methods(); ++m) {
    const char* name = program.method_name(m).get();
    const std::vector<uint8_t> backend =
        run_sample(program, name, /*fallback=*/false, data + 2, size - 2, runs);
    const std::vector<uint8_t> fallback =
        run_sample(program, name, /*fallback=*/true, data + 2, size - 2, runs);
    if (backend != fallback) {
      fuzz_failure(std::string("program '") + sample_programs()[index].name + "' method '" + name +
                   "': backend and portable fallback outputs differ");
    }
  }
  return 0;
}

int fuzz_graph_json(const uint8_t* data, size_t size) {
  fuzz_init();
  const std::string input(reinterpret_cast<const char*>(data), size);
  const size_t sep = input.find(kGraphJsonSeparator);
  const std::string json_text = input.substr(0, sep);
  const std::string weights = sep == std::string::npos
                                  ? std::string()
                                  : input.substr(sep + std::strlen(kGraphJsonSeparator));
  // The document may name any file as its weights; only ours is read (never /dev/stdin).
  try {
    const nlohmann::json doc = nlohmann::json::parse(json_text);
    if (doc.is_object() && doc.contains("weights") &&
        !(doc["weights"].is_string() && doc["weights"] == "weights.safetensors")) {
      return 0;
    }
  } catch (const std::exception&) {
    // Not JSON: parse_graph_json must say so itself below.
  }
  const std::vector<uint8_t> weight_bytes(weights.begin(), weights.end());
  try {
    (void)compiler::parse_safetensors(weight_bytes);
  } catch (const std::runtime_error&) {
  }
  const std::string& dir = graph_json_dir();
  {
    std::ofstream out(dir + "/weights.safetensors", std::ios::binary | std::ios::trunc);
    out.write(weights.data(), static_cast<std::streamsize>(weights.size()));
  }
  std::vector<uint8_t> bytes;
  try {
    const compiler::ProgramGraph graph = compiler::parse_graph_json(json_text, dir);
    bytes = compiler::compile_program(graph).bytes;
  } catch (const std::exception&) {
    return 0;
  }
  // What the compiler accepted and wrote, the runtime must accept.
  Buffer copy = aligned_buffer(bytes.size(), 64);
  std::memcpy(copy.get(), bytes.data(), bytes.size());
  BufferDataLoader loader(copy.get(), bytes.size());
  auto program = Program::load(&loader);
  if (!program.ok()) {
    fuzz_failure(std::string("compile_program wrote a program that Program::load refuses: ") +
                 to_string(program.error()) + ": " + last_error_message());
  }
  exercise_program(*program);
  load_methods(*program);
  return 0;
}

int fuzz_npy(const uint8_t* data, size_t size) {
  NpyArray array;
  try {
    array = parse_npy(data, size, "fuzz.npy");
  } catch (const std::runtime_error&) {
    return 0;
  }
  uint64_t element_bytes = 0;
  if (!dtype_nbytes(array.dtype, array.numel(), &element_bytes) ||
      element_bytes != array.data.size()) {
    fuzz_failure("parse_npy: data size does not match dtype x shape");
  }
  const std::vector<uint8_t> encoded = encode_npy(array);
  const NpyArray again = parse_npy(encoded.data(), encoded.size(), "re-encoded");
  if (again.dtype != array.dtype || again.shape != array.shape || again.data != array.data) {
    fuzz_failure("parse_npy(encode_npy(a)) != a");
  }
  return 0;
}

int run_target(Target target, const uint8_t* data, size_t size) {
  switch (target) {
    case Target::ProgramLoad:
      return fuzz_program_load(data, size);
    case Target::MethodLoad:
      return fuzz_method_load(data, size);
    case Target::Execute:
      return fuzz_execute(data, size);
    case Target::GraphJson:
      return fuzz_graph_json(data, size);
    case Target::Npy:
      return fuzz_npy(data, size);
    case Target::CpuBlob:
#if TERN_FUZZ_CPU_BLOB
      return fuzz_cpu_blob(data, size);
#else
      return 0;
#endif
    case Target::VulkanBlob:
#if TERN_FUZZ_VULKAN_BLOB
      return fuzz_vulkan_blob(data, size);
#else
      return 0;
#endif
    case Target::CudaBlob:
#if TERN_FUZZ_CUDA_BLOB
      return fuzz_cuda_blob(data, size);
#else
      return 0;
#endif
  }
  return 0;
}

}  // namespace tern::fuzz
