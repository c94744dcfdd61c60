// tern::Module end to end (C++17): register the kernels and backends explicitly, load a
// program, run `forward`, print its outputs and where each delegate call ran.
//
//   tern_cpp_example MODEL.pte
//
// MODEL.pte is examples/tiny_model (see make_tiny_model.py for the hand-worked outputs).
#include <cstdint>
#include <cstdio>

#include "runtime/backend/register_all_backends.h"
#include "runtime/core/error.h"
#include "runtime/core/tensor_view.h"
#include "runtime/extension/module.h"
#include "runtime/kernels/portable/register_portable_kernels.h"

namespace {

int fail(const char* what, tern::Error error) {
  std::fprintf(stderr, "tern_cpp_example: error: %s: %s: %s\n", what, tern::to_string(error),
               tern::last_error_message());
  return 1;
}

void print_floats(const char* name, const tern::TensorView& t) {
  std::printf("%s = [", name);
  const float* v = t.data_as<const float>();
  for (uint64_t i = 0; i < t.numel(); ++i) std::printf("%s%g", i ? ", " : "", v[i]);
  std::printf("]\n");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s MODEL.pte\n", argv[0]);
    return 2;
  }
  // Explicit registration: no static initialisers, so static archives need no whole-archive.
  tern::Error e = tern::register_portable_kernels();
  if (e != tern::Error::Ok) return fail("register_portable_kernels", e);
  e = tern::register_all_backends();
  if (e != tern::Error::Ok) return fail("register_all_backends", e);

  tern::Module module;
  tern::Module::Options options;
  options.method.num_threads = 1;
  e = module.load(argv[1], options);
  if (e != tern::Error::Ok) return fail("load", e);
  tern::Result<tern::Method*> method = module.method("forward");
  if (!method.ok()) return fail("method", method.error());

  float x[6] = {1, 2, 3, 4, 5, 6};
  float s[2] = {1, 2};
  const int64_t x_sizes[2] = {2, 3};
  const int64_t s_sizes[1] = {2};
  tern::TensorView xv;
  xv.rank = 2;
  xv.sizes = x_sizes;
  xv.data = x;
  xv.nbytes = sizeof(x);
  tern::TensorView sv;
  sv.rank = 1;
  sv.sizes = s_sizes;
  sv.data = s;
  sv.nbytes = sizeof(s);
  if ((e = (*method)->set_input(0, xv)) != tern::Error::Ok) return fail("set_input 0", e);
  if ((e = (*method)->set_input(1, sv)) != tern::Error::Ok) return fail("set_input 1", e);
  if ((e = (*method)->execute()) != tern::Error::Ok) return fail("execute", e);

  const char* names[2] = {"r", "z"};
  for (size_t i = 0; i < 2; ++i) {
    tern::Result<const tern::TensorView*> out = (*method)->output(i);
    if (!out.ok()) return fail("output", out.error());
    print_floats(names[i], **out);
  }
  for (size_t i = 0; i < (*method)->num_delegate_calls(); ++i) {
    tern::Result<tern::DelegatePath> path = (*method)->delegate_path(i);
    if (!path.ok()) return fail("delegate_path", path.error());
    std::printf("delegate call %zu: %s\n", i,
                *path == tern::DelegatePath::Backend ? "backend" : "portable fallback");
  }
  return 0;
}
