// libFuzzer entry point; TERN_FUZZ_TARGET (a tern::fuzz::Target enumerator) picks the target.
#include <cstddef>
#include <cstdint>

#include "tests/fuzz/fuzz_entries.h"

extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
  tern::fuzz::fuzz_init();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return tern::fuzz::run_target(tern::fuzz::Target::TERN_FUZZ_TARGET, data, size);
}
