/* The tern C API end to end (C99): load a program, list its methods, run `forward` in buffers
 * this program allocates itself and `leaky` in memory tern allocates, print the outputs.
 *
 *   tern_c_example MODEL.pte
 *
 * MODEL.pte is examples/tiny_model (make_tiny_model.py, then `tern compile`); its docstring
 * works out the expected outputs by hand. Exit status 0 on success, 1 on any error. */
#define _POSIX_C_SOURCE 200112L /* posix_memalign */
#include <stdio.h>
#include <stdlib.h>

#include "tern.h"

/* Prints the failed call, its status and tern's message, and returns 1 from main. */
#define CHECK(call)                                                                            \
  do {                                                                                         \
    tern_status status_ = (call);                                                              \
    if (status_ != TERN_STATUS_OK) {                                                           \
      fprintf(stderr, "tern_c_example: error: %s: %s: %s\n", #call, tern_status_name(status_), \
              tern_last_error_message());                                                      \
      return 1;                                                                                \
    }                                                                                          \
  } while (0)

static void print_floats(const char* name, const float* values, size_t count) {
  size_t i;
  printf("%s = [", name);
  for (i = 0; i < count; ++i) printf("%s%g", i ? ", " : "", values[i]);
  printf("]\n");
}

/* Lists every method with the dtype and shape of each input and output. */
static int describe(const tern_program* program) {
  size_t num_methods, m;
  CHECK(tern_program_num_methods(program, &num_methods));
  for (m = 0; m < num_methods; ++m) {
    const char* name;
    size_t num_inputs, num_outputs, i, d;
    CHECK(tern_program_method_name(program, m, &name));
    CHECK(tern_program_method_io(program, name, &num_inputs, &num_outputs));
    printf("method '%s': %zu inputs, %zu outputs\n", name, num_inputs, num_outputs);
    for (i = 0; i < num_inputs + num_outputs; ++i) {
      tern_value_info info;
      const int is_input = i < num_inputs;
      const size_t index = is_input ? i : i - num_inputs;
      if (is_input) {
        CHECK(tern_program_input_info(program, name, index, &info));
      } else {
        CHECK(tern_program_output_info(program, name, index, &info));
      }
      printf("  %s %zu (%s): ", is_input ? "input" : "output", index, info.name ? info.name : "");
      if (info.kind != TERN_VALUE_TENSOR) {
        printf("%s\n", info.kind == TERN_VALUE_INT      ? "int"
                       : info.kind == TERN_VALUE_DOUBLE ? "double"
                       : info.kind == TERN_VALUE_BOOL   ? "bool"
                                                        : "other value");
        continue;
      }
      printf("%s [", tern_dtype_name(info.dtype));
      for (d = 0; d < info.rank; ++d) printf("%s%lld", d ? ", " : "", (long long)info.sizes[d]);
      printf("], %llu bytes\n", (unsigned long long)info.nbytes);
    }
  }
  return 0;
}

/* `size` bytes aligned to `alignment` (a power of two, at least sizeof(void*)), or NULL. */
static void* aligned_buffer(size_t alignment, size_t size) {
  void* p = NULL;
  return posix_memalign(&p, alignment, size ? size : 1) == 0 ? p : NULL;
}

/* `forward` in buffers allocated here, sized from tern_program_memory_requirements. */
static int run_forward(tern_program* program) {
  tern_memory_requirements needs;
  tern_buffer arenas[8];
  tern_method_memory memory;
  tern_method* method = NULL;
  const float x[6] = {1, 2, 3, 4, 5, 6};
  const float s[2] = {1, 2};
  float r[4], z[4];
  size_t a, delegates;
  int failed = 0;

  CHECK(tern_program_memory_requirements(program, "forward", &needs));
  if (needs.num_arenas > sizeof(arenas) / sizeof(arenas[0])) return 1;
  memory.method.size = (size_t)needs.method_bytes;
  memory.method.data = aligned_buffer(TERN_BUFFER_ALIGNMENT, memory.method.size);
  memory.temp.size = (size_t)needs.temp_bytes;
  memory.temp.data = aligned_buffer(TERN_BUFFER_ALIGNMENT, memory.temp.size);
  for (a = 0; a < needs.num_arenas; ++a) {
    uint64_t size;
    uint32_t alignment;
    CHECK(tern_program_arena_requirement(program, "forward", a, &size, &alignment));
    if (alignment < TERN_BUFFER_ALIGNMENT) alignment = TERN_BUFFER_ALIGNMENT;
    arenas[a].size = (size_t)size;
    arenas[a].data = aligned_buffer(alignment, (size_t)size);
  }
  memory.arenas = arenas;
  memory.num_arenas = needs.num_arenas;
  printf("forward needs %llu + %llu bytes and %zu arena(s)\n",
         (unsigned long long)needs.method_bytes, (unsigned long long)needs.temp_bytes,
         needs.num_arenas);

  /* From here on, errors go through `failed` so that the buffers are always freed. */
  if (tern_method_load(program, "forward", &memory, &method) != TERN_STATUS_OK ||
      tern_method_set_input(method, 0, x, sizeof(x)) != TERN_STATUS_OK ||
      tern_method_set_input(method, 1, s, sizeof(s)) != TERN_STATUS_OK ||
      tern_method_execute(method) != TERN_STATUS_OK ||
      tern_method_copy_output(method, 0, r, sizeof(r)) != TERN_STATUS_OK ||
      tern_method_copy_output(method, 1, z, sizeof(z)) != TERN_STATUS_OK ||
      tern_method_num_delegate_calls(method, &delegates) != TERN_STATUS_OK) {
    fprintf(stderr, "tern_c_example: error: forward: %s\n", tern_last_error_message());
    failed = 1;
  } else {
    print_floats("r", r, 4);
    print_floats("z", z, 4);
    for (a = 0; a < delegates; ++a) {
      int on_backend = 0;
      if (tern_method_delegate_uses_backend(method, a, &on_backend) == TERN_STATUS_OK) {
        printf("delegate call %zu: %s\n", a, on_backend ? "backend" : "portable fallback");
      }
    }
  }
  tern_method_free(method); /* before the buffers it runs in */
  for (a = 0; a < needs.num_arenas; ++a) free(arenas[a].data);
  free(memory.method.data);
  free(memory.temp.data);
  return failed;
}

/* `leaky` in memory tern allocates (memory = NULL); a double input and a double output. */
static int run_leaky(tern_program* program) {
  tern_method* method;
  const float x[4] = {-2, -1, 0, 3};
  tern_tensor_view y;
  double slope;
  CHECK(tern_method_load(program, "leaky", NULL, &method));
  CHECK(tern_method_set_input(method, 0, x, sizeof(x)));
  CHECK(tern_method_set_input_double(method, 1, 0.5));
  CHECK(tern_method_execute(method));
  CHECK(tern_method_output(method, 0, &y)); /* valid until the next execute or free */
  CHECK(tern_method_output_double(method, 1, &slope));
  print_floats("y", (const float*)y.data, (size_t)(y.nbytes / sizeof(float)));
  printf("slope = %g\n", slope);
  tern_method_free(method);
  return 0;
}

int main(int argc, char** argv) {
  tern_load_options options;
  tern_program* program;
  int failed;
  if (argc != 2) {
    fprintf(stderr, "usage: %s MODEL.pte\n", argv[0]);
    return 2;
  }
  tern_load_options_init(&options);
  options.num_threads = 1;
  printf("tern %s\n", tern_version());
  CHECK(tern_program_load_file(argv[1], &options, &program));
  failed = describe(program) || run_forward(program) || run_leaky(program);
  tern_program_free(program);
  return failed;
}
