// `tern verify`: full structural and checksum verification of a program.
#include <cinttypes>
#include <cstdio>

#include "runtime/executor/method_meta.h"
#include "tools/cli/commands.h"

namespace tern::cli {

int cmd_verify(const std::string& model) {
  LoadedProgram loaded = load_program(model, Program::Verification::Full);
  const Program& program = *loaded.program;
  for (size_t i = 0; i < program.num_methods(); ++i) {
    clear_error_message();
    Result<const char*> name = program.method_name(i);
    if (!name.ok()) throw_if_error(name.error(), model + ": method " + std::to_string(i));
    Result<MethodMeta> meta = program.method_meta(*name);
    if (!meta.ok()) throw_if_error(meta.error(), model + ": method '" + *name + "'");
    for (size_t k = 0; k < meta->num_inputs(); ++k) {
      Result<EValue::Tag> tag = meta->input_tag(k);
      if (!tag.ok()) throw_if_error(tag.error(), model + ": method '" + *name + "' input " + std::to_string(k));
    }
    for (size_t k = 0; k < meta->num_outputs(); ++k) {
      Result<EValue::Tag> tag = meta->output_tag(k);
      if (!tag.ok()) throw_if_error(tag.error(), model + ": method '" + *name + "' output " + std::to_string(k));
    }
  }
  Result<size_t> size = loaded.loader->size();
  const uint64_t bytes = size.ok() ? *size : 0;
  std::printf("OK: %zu methods, %zu segments, %" PRIu64 " bytes verified\n", program.num_methods(),
              program.num_segments(), bytes);
  return 0;
}

}  // namespace tern::cli
