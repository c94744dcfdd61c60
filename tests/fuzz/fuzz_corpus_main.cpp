// tern_fuzz_corpus OUT_DIR: writes the seed corpus of every fuzz target into OUT_DIR/<target>/.
#include <cstdio>
#include <exception>

#include "tests/fuzz/fuzz_corpus.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUT_DIR\n", argv[0]);
    return 2;
  }
  try {
    tern::fuzz::write_seed_corpus(argv[1]);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tern_fuzz_corpus: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
