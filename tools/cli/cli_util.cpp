// Helpers shared by the subcommands: error text, program loading, value formatting.
#include <sys/resource.h>

#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <random>
#include <stdexcept>
#include <utility>
#include <vector>
#include <sstream>

#include "runtime/extension/owned_backend_options.h"
#include "tools/cli/commands.h"
#include "tools/cli/half.h"

namespace tern::cli {

std::string describe_error(Error error) {
  std::string text = to_string(error);
  const char* message = last_error_message();
  if (message != nullptr && message[0] != '\0') text += std::string(": ") + message;
  return text;
}

void throw_if_error(Error error, const std::string& what) {
  if (error != Error::Ok) throw std::runtime_error(what + ": " + describe_error(error));
}

LoadedProgram load_program(const std::string& path, Program::Verification verification) {
  LoadedProgram loaded;
  clear_error_message();
  Result<MmapDataLoader> loader = MmapDataLoader::from(path.c_str());
  if (!loader.ok()) throw_if_error(loader.error(), "cannot open " + path);
  loaded.loader = std::make_unique<MmapDataLoader>(std::move(loader.get()));
  Program::LoadOptions options;
  options.verification = verification;
  clear_error_message();
  Result<Program> program = Program::load(loaded.loader.get(), options);
  if (!program.ok()) throw_if_error(program.error(), "cannot load " + path);
  loaded.program.emplace(std::move(program.get()));
  return loaded;
}

std::string shape_string(Span<const int64_t> sizes) {
  std::string s = "[";
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(sizes[i]);
  }
  return s + "]";
}

std::string element_string(DType dtype, const uint8_t* data, uint64_t i) {
  std::ostringstream out;
  out.precision(6);
  switch (dtype) {
    case DType::F32: {
      float v;
      std::memcpy(&v, data + i * 4, 4);
      out << v;
      break;
    }
    case DType::F16: {
      uint16_t v;
      std::memcpy(&v, data + i * 2, 2);
      out << half_to_float(v);
      break;
    }
    case DType::BF16: {
      uint16_t v;
      std::memcpy(&v, data + i * 2, 2);
      out << bf16_to_float(v);
      break;
    }
    case DType::I64: {
      int64_t v;
      std::memcpy(&v, data + i * 8, 8);
      out << v;
      break;
    }
    case DType::I32: {
      int32_t v;
      std::memcpy(&v, data + i * 4, 4);
      out << v;
      break;
    }
    case DType::I16: {
      int16_t v;
      std::memcpy(&v, data + i * 2, 2);
      out << v;
      break;
    }
    case DType::I8: out << static_cast<int>(static_cast<int8_t>(data[i])); break;
    case DType::U8: out << static_cast<int>(data[i]); break;
    case DType::Bool: out << (data[i] ? "true" : "false"); break;
    default: out << "?"; break;
  }
  return out.str();
}

// Peak resident set size of this process in MiB: VmHWM from /proc/self/status (the high-water
// mark of this program's own memory), else ru_maxrss, which on Linux also carries the parent's
// peak across fork + exec.
double peak_rss_mib() {
  if (FILE* f = std::fopen("/proc/self/status", "r")) {
    char line[256];
    unsigned long long kib = 0;
    bool found = false;
    while (!found && std::fgets(line, sizeof(line), f) != nullptr) {
      found = std::sscanf(line, "VmHWM: %llu kB", &kib) == 1;
    }
    std::fclose(f);
    if (found) return static_cast<double>(kib) / 1024.0;
  }
  struct rusage usage;
  if (getrusage(RUSAGE_SELF, &usage) != 0) return 0;
  return static_cast<double>(usage.ru_maxrss) / 1024.0;  // KiB on Linux
}

std::string choose_method(const Program& program, const std::string& requested,
                          const char* preferred) {
  if (!requested.empty()) return requested;
  const size_t n = program.num_methods();
  if (n == 0) throw std::runtime_error("the program has no methods");
  std::string first;
  bool has_forward = false;
  for (size_t i = 0; i < n; ++i) {
    Result<const char*> name = program.method_name(i);
    if (!name.ok()) continue;
    if (std::strcmp(*name, preferred) == 0) return preferred;
    has_forward = has_forward || std::strcmp(*name, "forward") == 0;
    if (first.empty()) first = *name;
  }
  if (has_forward) return "forward";
  if (first.empty()) throw std::runtime_error("the program's method names are unreadable");
  return first;
}

namespace {

/// set_backend_options' values (Module copies them again at load).
OwnedBackendOptions& backend_options() {
  static OwnedBackendOptions options;
  return options;
}

}  // namespace

void set_backend_options(const std::vector<std::string>& specs) {
  OwnedBackendOptions parsed;
  for (const std::string& spec : specs) {
    const size_t dot = spec.find('.'), eq = spec.find('=');
    if (dot == std::string::npos || eq == std::string::npos || dot == 0 || eq < dot + 2) {
      throw std::runtime_error("--backend-option '" + spec +
                               "': expected BACKEND.KEY=VALUE, e.g. vulkan.device=1");
    }
    parsed.add(spec.substr(0, dot).c_str(), spec.substr(dot + 1, eq - dot - 1).c_str(),
               spec.substr(eq + 1).c_str());
  }
  backend_options() = std::move(parsed);
}

Method& load_chosen_method(Module& module, const std::string& model, const std::string& requested,
                           std::string* chosen, const Module::Options& given,
                           const char* preferred) {
  clear_error_message();
  Module::Options options = given;
  const Span<const BackendOption> backend = backend_options().span();
  if (backend.size() > 0) options.method.backend_options = backend;
  throw_if_error(module.load(model.c_str(), options), "cannot load " + model);
  *chosen = choose_method(*module.program(), requested, preferred);
  clear_error_message();
  Result<Method*> loaded = module.method(chosen->c_str());
  if (!loaded.ok()) {
    throw_if_error(loaded.error(), "cannot load method '" + *chosen + "' of " + model);
  }
  return **loaded;
}

std::vector<uint8_t> generated_input(DType dtype, uint64_t numel, bool ones, std::mt19937_64& rng,
                                     const std::string& label) {
  uint64_t nbytes = 0;
  if (!dtype_nbytes(dtype, numel, &nbytes)) throw std::runtime_error(label + ": size overflows");
  std::vector<uint8_t> bytes(static_cast<size_t>(nbytes));
  std::uniform_real_distribution<float> real(-1.0f, 1.0f);
  std::uniform_int_distribution<int> small(0, 9);
  auto put = [&](uint64_t i, const void* v, size_t size) {
    std::memcpy(bytes.data() + i * size, v, size);
  };
  for (uint64_t i = 0; i < numel; ++i) {
    const float f = ones ? 1.0f : real(rng);
    const int k = ones ? 1 : small(rng);
    switch (dtype) {
      case DType::F32: put(i, &f, 4); break;
      case DType::F16: { const uint16_t h = float_to_half(f); put(i, &h, 2); break; }
      case DType::BF16: { const uint16_t h = float_to_bf16(f); put(i, &h, 2); break; }
      case DType::I64: { const int64_t v = k; put(i, &v, 8); break; }
      case DType::I32: { const int32_t v = k; put(i, &v, 4); break; }
      case DType::I16: { const int16_t v = static_cast<int16_t>(k); put(i, &v, 2); break; }
      case DType::I8: case DType::U8: { const uint8_t v = static_cast<uint8_t>(k); put(i, &v, 1); break; }
      case DType::Bool: { const uint8_t v = ones ? 1 : static_cast<uint8_t>(k & 1); put(i, &v, 1); break; }
      default:
        throw std::runtime_error(label + ": cannot generate " + std::string(to_string(dtype)) +
                                 " values; give an .npy file with --input");
    }
  }
  return bytes;
}

}  // namespace tern::cli
