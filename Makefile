# tern: thin wrapper around CMake. `make demo` and `make test` are the two commands.
BUILD_DIR ?= build
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_FLAGS ?=
# CUDA architectures of the cuda backend (CMAKE_CUDA_ARCHITECTURES; default 80;87;89;90). CI
# (CI=true) builds one to save time; `make test TERN_CUDA_ARCHS=86` narrows it too.
TERN_CUDA_ARCHS ?= $(if $(filter true,$(CI)),80,)
CUDA_ARCH_FLAG := $(if $(TERN_CUDA_ARCHS),-DCMAKE_CUDA_ARCHITECTURES=$(TERN_CUDA_ARCHS),)
# TERN_DEBUG_INFO=0 (CI) builds the default RelWithDebInfo type without -g: the same -O2 code,
# compiled in about two thirds of the time (debug info is most of a test file's compile time).
TERN_DEBUG_INFO ?= 1
NO_DEBUG_INFO_FLAGS := $(foreach l,C CXX CUDA,-DCMAKE_$(l)_FLAGS_RELWITHDEBINFO="-O2 -DNDEBUG")
DEBUG_INFO_FLAG := $(if $(filter 0,$(TERN_DEBUG_INFO)),$(NO_DEBUG_INFO_FLAGS),)

.PHONY: all deps configure build test demo clean fuzz fuzz-smoke aarch64-test

all: build

deps:
	bash scripts/install-deps.sh
	bash scripts/setup-venv.sh

configure: deps
	cmake -S . -B $(BUILD_DIR) $(CUDA_ARCH_FLAG) $(DEBUG_INFO_FLAG) $(CMAKE_FLAGS)

build: configure
	cmake --build $(BUILD_DIR) -j $(JOBS)

# Tests run $(JOBS) at a time; PyTorch's OpenMP threads in each Python test (one per core,
# spinning while they wait) would fight over the cores: one OpenMP thread per test process
# (two model tests in parallel on 2 cores: 43 s each with the default, 14 s with one).
test: build
	OMP_NUM_THREADS=1 ctest --test-dir $(BUILD_DIR) --output-on-failure -j $(JOBS)

demo: build
	bash examples/run_demo.sh $(BUILD_DIR)

# Fuzzing (docs/hardening.md): clang + libFuzzer build in build-fuzz/, FUZZ_SECONDS per target.
FUZZ_SECONDS ?= 600
fuzz:
	bash scripts/install-deps.sh
	FUZZ_SECONDS=$(FUZZ_SECONDS) JOBS=$(JOBS) bash scripts/fuzz.sh

fuzz-smoke:
	bash scripts/install-deps.sh
	FUZZ_SECONDS=12 JOBS=$(JOBS) bash scripts/fuzz.sh

# aarch64 (Jetson-style) cross build in build-a64/ with its tests under qemu-aarch64-static
# (scripts/aarch64/run-tests.sh, docs/jetson.md).
A64_BUILD_DIR ?= build-a64
aarch64-test:
	bash scripts/install-deps.sh
	JOBS=$(JOBS) bash scripts/aarch64/run-tests.sh $(A64_BUILD_DIR)

clean:
	rm -rf $(BUILD_DIR)
