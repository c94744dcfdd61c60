// Module: an owning convenience wrapper (loader + program + memory + methods).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "runtime/executor/method.h"
#include "runtime/executor/program.h"

namespace tern {

/// Loads a program file and its methods, allocating every buffer itself (at load, never in
/// execute). For callers who do not need to place memory themselves.
class Module {
 public:
  enum class LoadMode : uint8_t { File = 0, Mmap = 1 };
  struct Options {
    LoadMode mode = LoadMode::Mmap;
    Program::LoadOptions program{};
    MethodLoadOptions method{};
  };

  Module();
  ~Module();
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  /// Opens and verifies `path`. Errors as Program::load, plus AccessFailed for the file.
  Error load(const char* path, const Options& options);
  Error load(const char* path);
  /// The loaded program (null before a successful load()).
  const Program* program() const;

  /// Re-initialises the program's shared state (format 1.2: state every method of the program
  /// shares, such as a KV cache; load() initialises it once): zeros or its initial values.
  /// InvalidState before a successful load().
  Error reset_shared_state();

  /// Loads method `name` on first use with buffers sized from its MethodMeta, and returns
  /// it; later calls return the same Method. Valid while the Module lives.
  Result<Method*> method(const char* name);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tern
