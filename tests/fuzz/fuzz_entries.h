// The fuzz targets' entry functions, shared by the libFuzzer binaries (TERN_FUZZ builds) and
// the regression test that replays tests/fuzz/regressions/ in every build.
//
// Contract of every entry: any input returns 0. Documented errors (an Error from the runtime,
// a std::exception from the tools) are the expected outcome for bad input. A crash, a
// sanitizer report, a leak or a broken oracle (fuzz_failure() aborts with a message) is a
// finding.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace tern::fuzz {

enum class Target : uint8_t { ProgramLoad, MethodLoad, Execute, GraphJson, Npy, CpuBlob, VulkanBlob,
                           CudaBlob };
/// The targets of this build: CpuBlob only when the cpu backend is built (tests/fuzz/
/// CMakeLists.txt then defines TERN_FUZZ_CPU_BLOB=1 for everything linking tern_fuzz_support).
constexpr Target kAllTargets[] = {Target::ProgramLoad, Target::MethodLoad, Target::Execute,
                                  Target::GraphJson,   Target::Npy,
#if TERN_FUZZ_CPU_BLOB
                                  Target::CpuBlob,
#endif
#if TERN_FUZZ_VULKAN_BLOB
                                  Target::VulkanBlob,
#endif
#if TERN_FUZZ_CUDA_BLOB
                                  Target::CudaBlob,
#endif
};

/// "fuzz_program_load", "fuzz_method_load", "fuzz_execute", "fuzz_graph_json", "fuzz_npy",
/// "fuzz_cpu_blob", "fuzz_vulkan_blob", "fuzz_cuda_blob".
const char* target_name(Target target);

/// One-time set-up: registers kernels and the sample backend, quiets Info/Warning logs.
void fuzz_init();

/// Program::load (Full verification) from a BufferDataLoader over the input, then every
/// method's MethodMeta, every segment and the checksums.
int fuzz_program_load(const uint8_t* data, size_t size);
/// After a successful Program::load, loads every method (with and without the sample
/// backend) into memory sized by its own MethodMeta; skips a method needing more than
/// kMaxMethodMemory bytes in all.
int fuzz_method_load(const uint8_t* data, size_t size);
/// Byte 0 picks a sample program, byte 1 flags, the rest is tensor input data; executes
/// (twice, the second time on the portable fallback) and checks that execute succeeds and
/// that both runs give bit-identical outputs.
int fuzz_execute(const uint8_t* data, size_t size);
/// Input: graph JSON text, kGraphJsonSeparator, safetensors bytes. Parses both, compiles and
/// checks that the compiled program passes Program::load.
int fuzz_graph_json(const uint8_t* data, size_t size);
/// parse_npy on the input; a parsed array must re-encode and re-parse to itself.
int fuzz_npy(const uint8_t* data, size_t size);

/// parse_blob of the cpu backend on the input (64-byte aligned copy); what it accepts must lie
/// inside the blob; small accepted blobs then go through the backend's init and destroy.
/// Defined in fuzz_cpu_blob.cpp, built only with TERN_FUZZ_CPU_BLOB.
int fuzz_cpu_blob(const uint8_t* data, size_t size);

/// parse_blob of the vulkan backend on the input (64-byte aligned copy); what it accepts must
/// lie inside the blob. Defined in fuzz_vulkan_blob.cpp, built only with TERN_FUZZ_VULKAN_BLOB
/// ("fuzz_vulkan_blob").
int fuzz_vulkan_blob(const uint8_t* data, size_t size);

/// parse_blob of the cuda backend on the input (64-byte aligned copy); what it accepts must
/// lie inside its device buffers and reference only values of its table. Defined in
/// fuzz_cuda_blob.cpp, built only with TERN_FUZZ_CUDA_BLOB ("fuzz_cuda_blob"; host code, no
/// nvcc needed).
int fuzz_cuda_blob(const uint8_t* data, size_t size);

/// Dispatches to the entry of `target` (a target this build lacks returns 0).
int run_target(Target target, const uint8_t* data, size_t size);

/// Separates graph.json text from safetensors bytes in fuzz_graph_json inputs.
extern const char kGraphJsonSeparator[];  // "\n#SAFETENSORS#\n"

/// Largest total of method allocator + arenas + temp memory fuzz_method_load allocates.
constexpr uint64_t kMaxMethodMemory = 64ull << 20;

/// When `bytes` has a decodable header whose checksum does not match, rewrites the checksum
/// so that mutations of the FlatBuffer reach the verifier. Returns whether it changed anything.
bool fix_header_checksum(uint8_t* bytes, size_t size);

/// Prints "fuzz finding: <what>" to stderr and aborts (libFuzzer records the input).
[[noreturn]] void fuzz_failure(const std::string& what);

}  // namespace tern::fuzz
