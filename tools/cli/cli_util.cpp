// Helpers shared by the subcommands: error text, program loading, value formatting.
#include <cinttypes>
#include <cstring>
#include <sstream>

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

}  // namespace tern::cli
