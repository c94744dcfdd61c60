# tern: thin wrapper around CMake. `make demo` and `make test` are the two commands.
BUILD_DIR ?= build
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_FLAGS ?=

.PHONY: all deps configure build test demo clean fuzz fuzz-smoke

all: build

deps:
	bash scripts/install-deps.sh
	bash scripts/setup-venv.sh

configure: deps
	cmake -S . -B $(BUILD_DIR) $(CMAKE_FLAGS)

build: configure
	cmake --build $(BUILD_DIR) -j $(JOBS)

test: build
	ctest --test-dir $(BUILD_DIR) --output-on-failure -j $(JOBS)

demo: build
	bash examples/run_demo.sh $(BUILD_DIR)

# Fuzzing (docs/hardening.md): clang + libFuzzer build in build-fuzz/, FUZZ_SECONDS per target.
FUZZ_SECONDS ?= 600
fuzz:
	bash scripts/install-deps.sh
	FUZZ_SECONDS=$(FUZZ_SECONDS) JOBS=$(JOBS) bash scripts/fuzz.sh

fuzz-smoke:
	bash scripts/install-deps.sh
	FUZZ_SECONDS=20 JOBS=$(JOBS) bash scripts/fuzz.sh

clean:
	rm -rf $(BUILD_DIR)
