/* tern.h: the C API of the tern runtime (C99; usable from C++).
 *
 * Load a .pte program (from a file or a caller's buffer), list its methods, ask what a method
 * takes and returns and how much memory it needs, load a method (in memory tern allocates, or in
 * buffers the caller provides), set its inputs, execute it, read its outputs.
 *
 * Conventions (docs/embedding.md has the details):
 * - Every function that can fail returns a tern_status; TERN_STATUS_OK (0) is success. Every
 *   argument is checked (NULL pointers, indices, buffer sizes, kinds); a bad call returns a
 *   status and never crashes. No C++ exception or type crosses this header.
 * - After a failure, tern_last_error_message() (this thread) says what was expected and what
 *   was found; calls on a tern_method also keep the message in the handle
 *   (tern_method_last_error()).
 * - Output parameters are written only on success.
 * - Kernels and backends are registered by tern itself on the first program load (once,
 *   thread-safe); nothing needs whole-archive linking.
 * - A tern_program may be used from several threads at once (queries, tern_method_load); a
 *   tern_method from one thread at a time. Several methods may execute concurrently.
 */
#ifndef TERN_C_API_H_
#define TERN_C_API_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define TERN_C_EXPORT __attribute__((visibility("default")))
#else
#define TERN_C_EXPORT
#endif

/** Version of this header's API; grows when functions or option fields are added. */
#define TERN_C_API_VERSION 1

/** Alignment the caller's method and temp buffers must have (arenas: their own alignment). */
#define TERN_BUFFER_ALIGNMENT 64

/* ---- status ---------------------------------------------------------------------------- */

/** Result of every fallible call. Values below 0x80 are the runtime's error codes (tern::Error,
 * same numbers); 0x80 and above come from this API's own argument checks. */
typedef enum tern_status {
  TERN_STATUS_OK = 0x00,
  TERN_STATUS_INTERNAL = 0x01,         /**< a bug in tern itself */
  TERN_STATUS_NOT_SUPPORTED = 0x02,    /**< a valid request this build cannot serve */
  TERN_STATUS_INVALID_ARGUMENT = 0x10, /**< a bad value (options, alignment, shape) */
  TERN_STATUS_INVALID_STATE = 0x11,    /**< a call at the wrong time (execute before set_input) */
  TERN_STATUS_NOT_FOUND = 0x12,        /**< an unknown method or backend name */
  TERN_STATUS_MEMORY_ALLOCATION_FAILED = 0x20, /**< the heap or a buffer ran out */
  TERN_STATUS_ACCESS_FAILED = 0x21,            /**< a file could not be read */
  TERN_STATUS_INVALID_PROGRAM = 0x30,          /**< the program is malformed */
  TERN_STATUS_CHECKSUM_MISMATCH = 0x31,        /**< a header or segment checksum does not match */
  TERN_STATUS_VERSION_MISMATCH = 0x32,         /**< the file is newer than this runtime */
  TERN_STATUS_NOT_A_TERN_PROGRAM = 0x33,       /**< not a tern program (e.g. an ExecuTorch .pte) */
  TERN_STATUS_DELEGATE_INVALID_COMPATIBILITY = 0x40,
  TERN_STATUS_DELEGATE_MEMORY_ALLOCATION_FAILED = 0x41,
  TERN_STATUS_DELEGATE_INVALID_HANDLE = 0x42,
  TERN_STATUS_DELEGATE_EXECUTION_FAILED = 0x43,
  TERN_STATUS_BACKEND_UNAVAILABLE = 0x44,
  TERN_STATUS_NULL_ARGUMENT = 0x80,      /**< a required pointer (handle, output, data) is NULL */
  TERN_STATUS_INDEX_OUT_OF_RANGE = 0x81, /**< a method, input, output, arena or delegate index */
  TERN_STATUS_SIZE_MISMATCH = 0x82,      /**< a buffer's byte size is not what is needed */
  TERN_STATUS_TYPE_MISMATCH = 0x83       /**< a tensor call on a scalar value, or the reverse */
} tern_status;

/** "TERN_STATUS_INVALID_ARGUMENT", ...; "TERN_STATUS_UNKNOWN" for other values. Never NULL. */
TERN_C_EXPORT const char* tern_status_name(tern_status status);

/** The message of the last failing tern call on this thread: what was expected, what was found,
 * where. Never NULL (empty when none). Valid until the next tern call on this thread: copy it
 * if you need it later. Successful calls may change or clear it. */
TERN_C_EXPORT const char* tern_last_error_message(void);

/** The runtime's version, e.g. "0.1.0". Never NULL. */
TERN_C_EXPORT const char* tern_version(void);

/* ---- values ---------------------------------------------------------------------------- */

/** Element types (same numbers as the program format's DType). */
typedef enum tern_dtype {
  TERN_DTYPE_F32 = 0,
  TERN_DTYPE_F16 = 1,
  TERN_DTYPE_BF16 = 2,
  TERN_DTYPE_I64 = 3,
  TERN_DTYPE_I32 = 4,
  TERN_DTYPE_I16 = 5,
  TERN_DTYPE_I8 = 6,
  TERN_DTYPE_U8 = 7,
  TERN_DTYPE_BOOL = 8,
  TERN_DTYPE_NF4 = 9,
  TERN_DTYPE_FP8_E4M3 = 10,
  TERN_DTYPE_FP8_E5M2 = 11
} tern_dtype;

/** "f32", "nf4", "fp8_e4m3", ...; "invalid" for other values. Never NULL. */
TERN_C_EXPORT const char* tern_dtype_name(tern_dtype dtype);

/** Kind of a method input or output. */
typedef enum tern_value_kind {
  TERN_VALUE_NONE = 0,
  TERN_VALUE_TENSOR = 1,
  TERN_VALUE_INT = 2, /**< int64_t */
  TERN_VALUE_DOUBLE = 3,
  TERN_VALUE_BOOL = 4,
  TERN_VALUE_INT_LIST = 5,
  TERN_VALUE_DOUBLE_LIST = 6,
  TERN_VALUE_STRING = 7,
  TERN_VALUE_TENSOR_LIST = 8
} tern_value_kind;

/** What a method input or output is. For a tensor: dtype, shape and byte size (contiguous,
 * row-major). For any other kind only `kind` (and `name` if known) is set, the rest is zero. */
typedef struct tern_value_info {
  tern_value_kind kind;
  tern_dtype dtype;
  size_t rank;
  const int64_t* sizes; /**< `rank` entries; owned by the program, valid while it lives */
  uint64_t nbytes;      /**< bytes set_input expects and copy_output writes */
  const char* name;     /**< debug name, may be NULL; owned by the program */
} tern_value_info;

/** A view of an output tensor after execute (tern_method_output). Owned by the method. */
typedef struct tern_tensor_view {
  tern_dtype dtype;
  size_t rank;
  const int64_t* sizes;     /**< `rank` entries */
  const uint8_t* dim_order; /**< `rank` entries, or NULL when contiguous row-major */
  const void* data;         /**< `nbytes` bytes */
  uint64_t nbytes;
} tern_tensor_view;

/* ---- programs ---------------------------------------------------------------------------- */

/** A loaded, verified program file. Opaque. */
typedef struct tern_program tern_program;

/** How tern_program_load_file reads the file. */
typedef enum tern_load_mode {
  TERN_LOAD_MMAP = 0, /**< map the file (weights are used in place, zero copy) */
  TERN_LOAD_FILE = 1  /**< read it with pread into heap buffers */
} tern_load_mode;

/** How much of the file is checked at load. */
typedef enum tern_verification {
  TERN_VERIFY_FULL = 0,     /**< structure plus every segment's checksum */
  TERN_VERIFY_STRUCTURE = 1 /**< header checksum, FlatBuffer and every index; no weight reads */
} tern_verification;

/** One option for a backend at load, e.g. {"vulkan", "device", "1"}: the Vulkan device by
 * index or by part of its name (backends/vulkan/README.md). */
typedef struct tern_backend_option {
  const char* backend; /**< a backend's name */
  const char* key;
  const char* value;
} tern_backend_option;

/** Load options. Initialise with tern_load_options_init(), then change fields; a struct not
 * initialised that way is refused (TERN_STATUS_INVALID_ARGUMENT). The strings and arrays are
 * copied at load: they need not outlive the call. */
typedef struct tern_load_options {
  size_t struct_size;             /**< set by tern_load_options_init; do not change */
  tern_load_mode mode;            /**< default TERN_LOAD_MMAP (file loads only) */
  tern_verification verification; /**< default TERN_VERIFY_FULL */
  uint32_t num_threads;           /**< worker threads for backends; 0 (default): backend's own */
  /** Allow-list of backend names ("cpu", "cuda", "vulkan"): delegates of every other backend
   * run their portable fallback. NULL (default): every backend this build has. A name this
   * build does not have is TERN_STATUS_NOT_FOUND. */
  const char* const* backends;
  size_t num_backends;
  /** Backends not to use (their delegates run the portable fallback); unknown names are
   * ignored. NULL (default): none. */
  const char* const* disabled_backends;
  size_t num_disabled_backends;
  /** Nonzero: use no backend at all (every delegate runs its portable fallback). Default 0. */
  int portable_only;
  /** Options for backends, given to their delegates at each method's load. NULL (default):
   * none. A key a backend does not know fails tern_method_load with
   * TERN_STATUS_INVALID_ARGUMENT naming the keys it takes; a Vulkan device that is not there
   * makes the vulkan delegates run their portable fallback (one log line says why). */
  const tern_backend_option* backend_options;
  size_t num_backend_options;
} tern_load_options;

/** Fills `options` with the defaults above. Does nothing when `options` is NULL. */
TERN_C_EXPORT void tern_load_options_init(tern_load_options* options);

/** Opens, reads and verifies the program at `path`. `options` may be NULL (defaults). On
 * success *out is a new program that the caller frees with tern_program_free. */
TERN_C_EXPORT tern_status tern_program_load_file(const char* path, const tern_load_options* options,
                                                 tern_program** out);

/** Verifies and loads the program in the caller's buffer [data, data + size). The caller keeps
 * the buffer alive and unchanged until the program (and every method loaded from it) is freed.
 * A 64-byte aligned buffer is used in place (zero copy); otherwise the parts tern needs are
 * copied into aligned heap memory at load. `options` may be NULL; its `mode` is ignored. */
TERN_C_EXPORT tern_status tern_program_load_buffer(const void* data, size_t size,
                                                   const tern_load_options* options,
                                                   tern_program** out);

/** Releases the caller's reference to `program`. Methods loaded from it stay valid: the
 * program is destroyed when its last method is freed. NULL is ignored. */
TERN_C_EXPORT void tern_program_free(tern_program* program);

/** Bytes of the program's shared state (state its methods share, such as the KV cache of a
 * prefill and a decode method): the program allocates and initialises it at load and gives it
 * to every method loaded from it. *out is 0 when the program has none. */
TERN_C_EXPORT tern_status tern_program_shared_state_bytes(const tern_program* program,
                                                          size_t* out);

/** Re-initialises the program's shared state (zeros or its initial values), e.g. to start a
 * new conversation; every method loaded from the program sees it. */
TERN_C_EXPORT tern_status tern_program_reset_shared_state(tern_program* program);

/** Number of methods. */
TERN_C_EXPORT tern_status tern_program_num_methods(const tern_program* program, size_t* out);

/** Name of method `index` (owned by the program, valid while it lives). */
TERN_C_EXPORT tern_status tern_program_method_name(const tern_program* program, size_t index,
                                                   const char** out);

/** Numbers of inputs and outputs of `method`; either output pointer may be NULL, not both. */
TERN_C_EXPORT tern_status tern_program_method_io(const tern_program* program, const char* method,
                                                 size_t* num_inputs, size_t* num_outputs);

/** What input / output `index` of `method` is. */
TERN_C_EXPORT tern_status tern_program_input_info(const tern_program* program, const char* method,
                                                  size_t index, tern_value_info* out);
TERN_C_EXPORT tern_status tern_program_output_info(const tern_program* program, const char* method,
                                                   size_t index, tern_value_info* out);

/** A bounded-dynamic dimension of a method (docs/dynamic-shapes.md): every dim tagged with it
 * takes one size in [min, max] per execution; tensors are planned at max. */
typedef struct tern_symbol_info {
  const char* name; /**< owned by the program, valid while it lives */
  int64_t min;
  int64_t max;
} tern_symbol_info;

/** Number of dynamic-dimension symbols of `method` (0 for a method of static shapes). */
TERN_C_EXPORT tern_status tern_program_num_symbols(const tern_program* program, const char* method,
                                                   size_t* out);
/** Symbol `index` of `method`. */
TERN_C_EXPORT tern_status tern_program_symbol_info(const tern_program* program, const char* method,
                                                   size_t index, tern_symbol_info* out);
/** Which dims of tensor input (`is_input` non-zero) or output `index` of `method` vary: out[d]
 * is -1 for a static dim, else the index of its symbol (tern_program_symbol_info), whose max is
 * the size tern_value_info gives for that dim. `capacity`: entries of `out`, at least the
 * tensor's rank (else TERN_STATUS_SIZE_MISMATCH; a value that is no tensor:
 * TERN_STATUS_TYPE_MISMATCH). tern_method_set_input takes any size within the symbols' bounds. */
TERN_C_EXPORT tern_status tern_program_dim_symbols(const tern_program* program, const char* method,
                                                   int is_input, size_t index, int32_t* out,
                                                   size_t capacity);

/** The buffers a method runs in (see tern_method_memory). Sizes in bytes. */
typedef struct tern_memory_requirements {
  uint64_t method_bytes; /**< the method's own structures, plus room for backends' host state */
  uint64_t temp_bytes;   /**< kernels' scratch during execute */
  size_t num_arenas;     /**< planned arenas; sizes from tern_program_arena_requirement */
} tern_memory_requirements;

/** What `method` needs, readable before anything is allocated. */
TERN_C_EXPORT tern_status tern_program_memory_requirements(const tern_program* program,
                                                           const char* method,
                                                           tern_memory_requirements* out);

/** Size in bytes and base alignment of planned arena `arena` of `method`; either output may be
 * NULL, not both. */
TERN_C_EXPORT tern_status tern_program_arena_requirement(const tern_program* program,
                                                         const char* method, size_t arena,
                                                         uint64_t* size, uint32_t* alignment);

/* ---- methods ------------------------------------------------------------------------------- */

/** One loaded method, bound to its memory. Opaque. */
typedef struct tern_method tern_method;

/** A caller's buffer. */
typedef struct tern_buffer {
  void* data;
  size_t size;
} tern_buffer;

/** Buffers the caller provides for a method (tern_method_load). The caller owns them and keeps
 * them alive, unmoved, until tern_method_free. Sizes at least what
 * tern_program_memory_requirements / tern_program_arena_requirement say; `method` and `temp`
 * aligned to TERN_BUFFER_ALIGNMENT, arena i to its own alignment. */
typedef struct tern_method_memory {
  tern_buffer method;
  const tern_buffer* arenas; /**< num_arenas entries; the array itself is copied at load */
  size_t num_arenas;         /**< must equal the requirement's num_arenas */
  tern_buffer temp;
} tern_method_memory;

/** Loads `method` of `program` (kernels resolved, delegates initialised, with the program's load
 * options). `memory` NULL: tern allocates the buffers (heap, at load only) and frees them with
 * the method. On success *out is a new method; free it with tern_method_free. The method keeps
 * the program alive. */
TERN_C_EXPORT tern_status tern_method_load(tern_program* program, const char* method,
                                           const tern_method_memory* memory, tern_method** out);

/** Destroys the method (its delegates, and its buffers when tern allocated them). NULL is
 * ignored. */
TERN_C_EXPORT void tern_method_free(tern_method* method);

/** The message of the last failing call made with this method (never NULL; empty when none).
 * Valid until the next failing call with it, or until it is freed; successes leave it. */
TERN_C_EXPORT const char* tern_method_last_error(const tern_method* method);

/** Sets tensor input `index` from `nbytes` bytes at `data` (the input's dtype and shape, as
 * tern_program_input_info says; nbytes must equal its nbytes). The bytes are copied into the
 * method's memory, except for an input the program declares caller-bound, which is used in
 * place: then `data` must stay valid and unchanged until execute returns. */
TERN_C_EXPORT tern_status tern_method_set_input(tern_method* method, size_t index, const void* data,
                                                size_t nbytes);

/** Sets scalar input `index` (its kind must be TERN_VALUE_INT / DOUBLE / BOOL). */
TERN_C_EXPORT tern_status tern_method_set_input_int(tern_method* method, size_t index,
                                                    int64_t value);
TERN_C_EXPORT tern_status tern_method_set_input_double(tern_method* method, size_t index,
                                                       double value);
TERN_C_EXPORT tern_status tern_method_set_input_bool(tern_method* method, size_t index, int value);

/** Runs the method. Every input must have been set (TERN_STATUS_INVALID_STATE otherwise). An
 * input keeps its value across executes (tern's planner never gives an input's bytes to a later
 * value), so executing again without set_input runs on the same inputs. Never allocates on the
 * heap. */
TERN_C_EXPORT tern_status tern_method_execute(tern_method* method);

/** A view of tensor output `index` after a successful execute. The view points into the
 * method's memory: valid until the next set_input, execute or reset_state of this method, or
 * until it is freed. TERN_STATUS_INVALID_STATE before a successful execute. */
TERN_C_EXPORT tern_status tern_method_output(const tern_method* method, size_t index,
                                             tern_tensor_view* out);

/** Copies tensor output `index` into the caller's buffer of `size` bytes (at least the output's
 * nbytes, TERN_STATUS_SIZE_MISMATCH otherwise); writes exactly nbytes. */
TERN_C_EXPORT tern_status tern_method_copy_output(const tern_method* method, size_t index,
                                                  void* dst, size_t size);

/** Scalar output `index` (its kind must be TERN_VALUE_INT / DOUBLE / BOOL). */
TERN_C_EXPORT tern_status tern_method_output_int(const tern_method* method, size_t index,
                                                 int64_t* out);
TERN_C_EXPORT tern_status tern_method_output_double(const tern_method* method, size_t index,
                                                    double* out);
TERN_C_EXPORT tern_status tern_method_output_bool(const tern_method* method, size_t index,
                                                  int* out);

/** Token generation (docs/llm-decoding.md "Generating") with a language model's step method:
 * (token int [1, 1], position int [1]) -> logits f32 [1, 1, vocab], its KV cache in state.
 * Initialise with tern_generate_options_init(), then change fields; a struct not initialised
 * that way is refused (TERN_STATUS_INVALID_ARGUMENT). */
typedef struct tern_generate_options {
  size_t struct_size;      /**< set by tern_generate_options_init; do not change */
  uint32_t max_new_tokens; /**< default 32 */
  int64_t stop_token;      /**< generation ends after this token (included); -1 (default): none */
  float temperature;       /**< 0 (default): greedy; else softmax(logits / temperature) sampled */
  uint32_t top_k;          /**< sample among the k likeliest; 0 (default): all */
  float top_p;             /**< sample among the likeliest reaching this probability; default 1 */
  uint64_t seed;           /**< of the sampler; default 0 */
  /** Optional (default NULL): a prefill method of the same program, (tokens int [1, seq],
   * positions int [seq]) -> logits f32 [1, seq, vocab] or [1, 1, vocab] (the last
   * position's) with seq dynamic or static, sharing the step
   * method's KV cache (tern_export.export_llm): the prompt then goes through it in chunks of
   * up to seq's bound instead of token by token (a static seq: whole chunks of exactly seq
   * tokens, the rest of the prompt token by token). */
  tern_method* prefill;
} tern_generate_options;

/** Timings of one tern_method_generate call, in seconds from its start. */
typedef struct tern_generate_stats {
  uint32_t prompt_tokens;
  uint32_t generated_tokens;
  double prompt_seconds;      /**< feeding the prompt */
  double first_token_seconds; /**< until the first new token was chosen */
  double decode_seconds;      /**< the steps after it */
} tern_generate_stats;

/** Fills `options` with the defaults above. Does nothing when `options` is NULL. */
TERN_C_EXPORT void tern_generate_options_init(tern_generate_options* options);

/** Feeds the `prompt_length` token ids of `prompt` at positions 0, 1, ... to the step method
 * (or to options->prefill in chunks), then generates up to options->max_new_tokens tokens into `out` (room for `out_capacity`,
 * which must be at least max_new_tokens); *out_length says how many. `options` may be NULL
 * (defaults); `stats` may be NULL. A prompt id outside the vocabulary, a method that is not a
 * step, or a position past its cache is an error with a message naming it. Allocates only the
 * sampler's scratch (vocab entries) per call, nothing per token. */
TERN_C_EXPORT tern_status tern_method_generate(tern_method* method, const int64_t* prompt,
                                               size_t prompt_length,
                                               const tern_generate_options* options,
                                               int64_t* out, size_t out_capacity,
                                               size_t* out_length, tern_generate_stats* stats);

/** Re-initialises the method's own state tensors: zeros or their initial values. State the
 * program's methods share (a KV cache of a prefill and a decode method) is the program's:
 * tern_program_reset_shared_state resets it. */
TERN_C_EXPORT tern_status tern_method_reset_state(tern_method* method);

/** Number of delegate calls (subgraphs handed to a backend) of the method. */
TERN_C_EXPORT tern_status tern_method_num_delegate_calls(const tern_method* method, size_t* out);

/** *out = 1 when delegate call `index` runs on its backend, 0 when it runs its portable
 * fallback (backend absent, unavailable or not chosen in the load options). */
TERN_C_EXPORT tern_status tern_method_delegate_uses_backend(const tern_method* method, size_t index,
                                                            int* out);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TERN_C_API_H_ */
