// Seeds of fuzz_cpu_blob: the delegate blobs the cpu backend's compile half writes for the
// sample programs and for a few graphs covering its other ops (built only with the cpu
// backend: TERN_FUZZ_CPU_BLOB).
#pragma once

#include <vector>

#include "tests/fuzz/fuzz_corpus.h"

namespace tern::fuzz {

/// One seed per "cpu" delegate blob of every program compiled with backends {"cpu"}:
/// "<program>_<delegate index>.blob". Registers the cpu backend compiler.
std::vector<Seed> cpu_blob_seeds();

}  // namespace tern::fuzz
