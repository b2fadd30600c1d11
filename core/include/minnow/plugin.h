/* Minnow plugin ABI: the one boundary between the core and every plugin.
 *
 * Plain C: no C++ types, STL or exceptions cross it, so a plugin built with another
 * compiler (or in C) works. Rules that keep it stable:
 *  - A plugin exports `minnow_plugin_entry` returning a `mn_plugin_info` whose first
 *    fields are the ABI version it was built against. The host accepts it when the majors
 *    are equal and the plugin's minor is not newer than the host's.
 *  - Every struct of function pointers or descriptors begins with `struct_size`; new
 *    fields are appended only, and a reader checks struct_size before touching a field
 *    added in a later minor.
 *  - Registration is explicit: the host calls `register_plugin` once, and the plugin
 *    hands its tables to the registrar. No static initialisers.
 *  - Strings passed in are valid for the duration of the call unless stated; tables
 *    registered must stay valid while the library is loaded (the host keeps it loaded
 *    for as long as anything made by it exists).
 */
#ifndef MINNOW_PLUGIN_H
#define MINNOW_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MINNOW_ABI_MAJOR 1
#define MINNOW_ABI_MINOR 9 /* 1.1: mn_node.attr_strings; 1.2: run-time-sized outputs
                              (mn_shape_ctx.set_output_bound, mn_run_ctx.set_output_dims),
                              mn_op_def.value_inputs; 1.3: mn_kernel.fuse_clamp;
                              1.4: mn_kernel.fuse_add; 1.5: MN_INPLACE_ADDEND;
                              1.6: mn_kernel.fuse_producer;
                              1.7: mn_kernel.scratch_bytes_threads;
                              1.8: mn_kernel.set_producer;
                              1.9: mn_run_ctx.parallel_parts */

#if defined(_WIN32)
#define MINNOW_PLUGIN_EXPORT __declspec(dllexport)
#else
#define MINNOW_PLUGIN_EXPORT __attribute__((visibility("default")))
#endif

/* Name of the exported entry point: const mn_plugin_info* minnow_plugin_entry(void). */
#define MINNOW_PLUGIN_ENTRY_SYMBOL "minnow_plugin_entry"

typedef enum mn_status {
  MN_OK = 0,
  MN_ERR_INVALID_ARGUMENT = 1, /* bad model / attributes / shapes */
  MN_ERR_UNSUPPORTED = 2,      /* valid, but this plugin cannot do it */
  MN_ERR_INTERNAL = 3,         /* a bug or an exception inside the plugin */
  MN_ERR_OUT_OF_MEMORY = 4,
  MN_ERR_IO = 5
} mn_status;

/* Element types; values equal schema/minnow.fbs DataType. */
typedef enum mn_dtype {
  MN_UNDEFINED = 0,
  MN_F32 = 1,
  MN_F16 = 2,
  MN_I8 = 3,
  MN_U8 = 4,
  MN_I32 = 5,
  MN_I64 = 6,
  MN_BOOL = 7,
  MN_I16 = 8,
  MN_U16 = 9,
  MN_U32 = 10,
  MN_U64 = 11,
  MN_F64 = 12,
  MN_BF16 = 13,
  MN_STRING = 14
} mn_dtype;

#define MN_MAX_RANK 8

/* Error sink: a plugin writes one message naming what went wrong. */
typedef struct mn_error {
  char message[1024];
} mn_error;

/* A tensor as a plugin sees it. `dims[i] < 0` means not known yet (symbolic) during
 * bidding; during a run every dim is known. `data` is non-null for constants at bid /
 * prepare time and for every tensor at run time. */
typedef struct mn_tensor {
  size_t struct_size;
  const char* name;
  int32_t dtype; /* mn_dtype */
  int32_t rank;  /* -1: unknown */
  int64_t dims[MN_MAX_RANK];
  void* data;
  int32_t is_constant;
  /* Quantization (may be empty): scale/zero_point arrays of length quant_count,
   * quant_axis = -1 for per tensor. */
  int32_t quant_count;
  int32_t quant_axis;
  const float* quant_scale;
  const int64_t* quant_zero_point;
} mn_tensor;

typedef enum mn_attr_type {
  MN_ATTR_NONE = 0,
  MN_ATTR_INT = 1,
  MN_ATTR_FLOAT = 2,
  MN_ATTR_STRING = 3,
  MN_ATTR_INTS = 4,
  MN_ATTR_FLOATS = 5,
  MN_ATTR_STRINGS = 6,
  MN_ATTR_TENSOR = 7
} mn_attr_type;

/* Read-only view of one node, given to shape functions, bids and prepare. */
typedef struct mn_node {
  size_t struct_size;
  const char* name;
  const char* domain;
  const char* op;
  int32_t op_version;
  int32_t num_inputs;
  const mn_tensor* inputs; /* an omitted optional input has dtype MN_UNDEFINED, rank -1 */
  int32_t num_outputs;
  const mn_tensor* outputs; /* shapes as inferred (may hold unknown dims while bidding) */

  /* Attribute access; `ctx` is attr_ctx. Each returns the type (MN_ATTR_NONE if absent)
   * and fills what it is asked for (any pointer may be null). Arrays stay valid for the
   * lifetime of the node view. */
  const void* attr_ctx;
  mn_attr_type (*attr_type)(const void* ctx, const char* name);
  int (*attr_int)(const void* ctx, const char* name, int64_t* out);
  int (*attr_float)(const void* ctx, const char* name, float* out);
  int (*attr_string)(const void* ctx, const char* name, const char** out);
  int (*attr_ints)(const void* ctx, const char* name, const int64_t** out, size_t* count);
  int (*attr_floats)(const void* ctx, const char* name, const float** out, size_t* count);
  /* For TENSOR attributes: the constant tensor. */
  int (*attr_tensor)(const void* ctx, const char* name, const mn_tensor** out);
  int32_t num_attrs;
  const char* (*attr_name)(const void* ctx, int32_t index);
  /* ABI 1.1: STRINGS attributes (e.g. an RNN's activations). Check struct_size first. */
  int (*attr_strings)(const void* ctx, const char* name, const char* const** out, size_t* count);
} mn_node;

/* ---- Shape inference (op plugins, and the core's built-in ops) ---------------------- */
typedef struct mn_shape_ctx {
  size_t struct_size;
  void* host;
  /* Declare output i's type and shape. Dims may be negative (unknown) while planning a
   * model with symbolic inputs. */
  mn_status (*set_output)(void* host, int32_t index, int32_t dtype, int32_t rank,
                          const int64_t* dims);
  /* Optionally give output i's value (small integer tensors such as Shape's result), so
   * data-dependent shapes downstream can be resolved at plan time. Data is copied. */
  mn_status (*set_output_value)(void* host, int32_t index, const void* data, size_t bytes);
  /* ABI 1.2: output i's dims, as given to set_output, are an upper bound: its actual dims
   * depend on the data (NonMaxSuppression's selected rows) and the kernel reports them at
   * run time with mn_run_ctx.set_output_dims. The planner reserves memory for the bound;
   * consumers and graph outputs see the reported dims. Call after set_output. Check
   * struct_size first. */
  mn_status (*set_output_bound)(void* host, int32_t index);
} mn_shape_ctx;

typedef mn_status (*mn_shape_fn)(void* user, const mn_node* node, const mn_shape_ctx* ctx,
                                 mn_error* err);

/* An op definition: a new operator with its shape function. Kernels for it come from a
 * backend (the op plugin usually registers one too). */
typedef struct mn_op_def {
  size_t struct_size;
  const char* domain;
  const char* name;
  int32_t since_version; /* accepts op_version in [since_version, max_version] */
  int32_t max_version;
  mn_shape_fn infer_shapes;
  void* user;
  /* ABI 1.2: the inputs whose *values* (not only shapes) the shape function reads, bit i
   * for input i (Reshape's shape: 1 << 1). A graph input that reaches one of these (also
   * through nodes the planner can evaluate) is given to shape inference with its value,
   * and a new value there re-plans. 0: shapes depend on input shapes only. */
  uint64_t value_inputs;
} mn_op_def;

/* ---- Kernels --------------------------------------------------------------------- */
typedef void (*mn_range_fn)(void* user, size_t begin, size_t end);
/* One part of a parallel_parts call: items [begin, end) of part `part`. */
typedef void (*mn_part_fn)(void* user, size_t part, size_t begin, size_t end);

/* parallel_parts never gives a part more than MN_PARTS_MAX_SKEW times its even share of
 * the items, plus one grain: a part holds at most ceil(MN_PARTS_MAX_SKEW * n / parts)
 * rounded up to the grain, plus the grain (what a kernel sizes a part's scratch for). */
#define MN_PARTS_MAX_SKEW 1.5

/* Context of one kernel invocation. Kernels never start threads of their own: they split
 * work with parallel_for, which runs on the session's oneTBB arena. */
typedef struct mn_run_ctx {
  size_t struct_size;
  void* host;
  int32_t num_threads;
  void (*parallel_for)(void* host, size_t n, size_t grain, mn_range_fn fn, void* user);
  void* scratch; /* scratch_bytes() bytes, 64-byte aligned, valid for this call */
  size_t scratch_size;
  /* ABI 1.2: the actual dims of output `index`, which the op's shape function declared an
   * upper bound (mn_shape_ctx.set_output_bound): same rank, each dim 0 <= dims[d] <= the
   * bound's; the kernel writes the data row-major for these dims. Without a call the bound
   * stands. Call from the thread that entered run (not inside a parallel_for chunk),
   * before run returns. Check struct_size first. */
  mn_status (*set_output_dims)(void* host, int32_t index, int32_t rank, const int64_t* dims);
  /* ABI 1.9: fn over [0, n) in `parts` contiguous parts, in order, each split at a multiple
   * of `grain` (but the last) and run as one call fn(user, j, begin, end); empty parts are
   * not called. Part j is meant for the thread that parallel_for's static split would give
   * unit j of `parts`; the host sizes the parts by the speeds it measured for those threads
   * in earlier calls (a core the host slowed, a little core of big.LITTLE), so a kernel
   * whose parts each cost the same per item finishes them together. For work that only
   * splits into a few parts of fixed cost (a private transform, a shared panel) where
   * parallel_for's stealing of whole units cannot even out a slower thread. The items of
   * one part must cost about the same wherever they lie. Check struct_size first. */
  void (*parallel_parts)(void* host, size_t n, size_t grain, size_t parts, mn_part_fn fn, void* user);
} mn_run_ctx;

/* mn_kernel.inplace_input (1.5): output 0 may live in a fused Add's addend (fuse_add). */
#define MN_INPLACE_ADDEND (-2)

/* A prepared kernel for one node: made once per model (weights packed there), shared by
 * every session of that model, so `run` must not mutate `state`. */
typedef struct mn_kernel {
  size_t struct_size;
  void* state;
  const char* name; /* micro-kernel name, e.g. "f32_gemm_ref"; static storage */
  mn_status (*run)(void* state, const mn_run_ctx* ctx, const mn_tensor* inputs,
                   int32_t num_inputs, mn_tensor* outputs, int32_t num_outputs, mn_error* err);
  /* Scratch the run needs for these (fully known) shapes; may be null (= 0). */
  size_t (*scratch_bytes)(void* state, const mn_tensor* inputs, int32_t num_inputs,
                          const mn_tensor* outputs, int32_t num_outputs);
  void (*destroy)(void* state);
  /* Output 0 may share the memory of this input (element-wise in place), or -1, or
   * (1.5) MN_INPLACE_ADDEND: output 0 may share the memory of the addend a fused Add
   * passes (fuse_add), and of no other input. */
  int32_t inplace_input;
  /* Estimated floating-point operations for these shapes (profiling); may be null. */
  double (*flops)(void* state, const mn_tensor* inputs, int32_t num_inputs,
                  const mn_tensor* outputs, int32_t num_outputs);
  /* (1.3) Optional, may be null. The host asks, once, while preparing, whether this kernel
   * can clamp its output 0 to [lo, hi] (lo may be -inf, hi +inf) as it writes it: the
   * activation node that consumes it (Relu, Clip) is then not run, and its output is
   * this kernel's. MN_OK: from now on every run clamps; anything else: unchanged. */
  mn_status (*fuse_clamp)(void* state, float lo, float hi);
  /* (1.4) Optional, may be null. The host asks, once, while preparing, whether this kernel
   * can add a second tensor of output 0's type and shape to output 0 as it writes it
   * (before a clamp from fuse_clamp, which the host may ask for afterwards): the Add node
   * that is output 0's only consumer is then not run, and its output is this kernel's.
   * MN_OK: from now on every run passes that tensor as inputs[input_index] (input_index is
   * the node's own input count: it comes after them) and the kernel adds it; anything
   * else: unchanged. The tensor shares memory with output 0 only when inplace_input is
   * MN_INPLACE_ADDEND (1.5), the addend is not read after this node and is not one of its
   * own inputs: inputs[input_index].data == outputs[0].data then, output 0 already holds
   * the addend when run starts, and the kernel must read each element before it writes
   * it (a GEMM accumulating onto output 0 does). Earlier hosts never share it. */
  mn_status (*fuse_add)(void* state, int32_t input_index);
  /* (1.6) Optional, may be null. The host asks, once, while preparing, whether this kernel
   * can compute its input `input_index` itself, from the inputs of the node that writes it
   * (the producer), so that tensor is never stored. The host asks only when the producer's
   * kernel (its state: `producer_state`) was prepared by the same backend, so the backend
   * knows its type; when that tensor is the producer's output 0, or the output of an
   * activation whose clamp the producer's kernel applies (fuse_clamp), read by nothing
   * else; when the producer has no fused Add; and when every shape involved is static.
   * MN_OK: the producer (and that activation) no longer run; every run passes
   * inputs[input_index] with its shape but data NULL, and the producer's own inputs as
   * inputs[first_extra], inputs[first_extra + 1], ... (first_extra: after this node's own
   * inputs and a fused Add's addend); *name may have been set to the kernel's new name
   * (static storage). Anything else: unchanged. */
  mn_status (*fuse_producer)(void* state, int32_t input_index, void* producer_state, int32_t first_extra,
                             const char** name);
  /* (1.7) Optional, may be null. As scratch_bytes, for runs whose mn_run_ctx.num_threads
   * is `threads`: a kernel with per-thread buffers asks for what that many threads use
   * instead of what any thread count might. The host asks this one when it is set. */
  size_t (*scratch_bytes_threads)(void* state, const mn_tensor* inputs, int32_t num_inputs,
                                  const mn_tensor* outputs, int32_t num_outputs, int32_t threads);
  /* (1.8) Optional, may be null. The host tells, once, while preparing (after every
   * fusion, before any run or scratch_bytes call), which kernel writes input `input_index`
   * at run time, when a kernel of the same backend does (its state: producer_state; for a
   * tensor that a fused Add or clamp finishes, the kernel that absorbed them). A backend
   * may then split its work over the threads as the producer's threads wrote the tensor.
   * Advisory: the kernel runs correctly whatever it is told, or if never told. */
  void (*set_producer)(void* state, int32_t input_index, void* producer_state);
} mn_kernel;

/* A bid: can this backend run the node, at what cost (arbitrary units, about
 * nanoseconds), and why. cost < 0 means no. */
typedef struct mn_bid {
  size_t struct_size;
  double cost;
  char reason[256];
} mn_bid;

typedef struct mn_backend {
  size_t struct_size;
  const char* name;
  void* user;
  void (*bid)(void* user, const mn_node* node, mn_bid* out);
  mn_status (*prepare)(void* user, const mn_node* node, mn_kernel* out, mn_error* err);
  void (*destroy)(void* user); /* may be null */
} mn_backend;

/* ---- Model blobs (transforms and frontends) ----------------------------------------- */
/* Bytes owned by whoever allocated them; release with the paired free. */
typedef struct mn_blob {
  uint8_t* data;
  size_t size;
  void (*free_fn)(uint8_t* data, size_t size);
} mn_blob;

/* A key/value option list (command-line `--opt key=value`, JSON-compatible strings). */
typedef struct mn_options {
  size_t struct_size;
  int32_t count;
  const char* const* keys;
  const char* const* values;
} mn_options;

/* A transform rewrites a model: .minnow bytes in, .minnow bytes out. Deterministic for a
 * given seed (an option). `host` gives access to the engine (to run models for
 * calibration or distillation). The report is a short human-readable text. */
typedef struct mn_transform {
  size_t struct_size;
  const char* name;
  const char* description;
  void* user;
  mn_status (*apply)(void* user, const struct mn_host_api* host, const uint8_t* model,
                     size_t model_size, const mn_options* options, mn_blob* out_model,
                     mn_blob* out_report, mn_error* err);
} mn_transform;

/* A frontend turns a foreign file (ONNX, Caffe ...) into .minnow bytes. */
typedef struct mn_frontend {
  size_t struct_size;
  const char* name;
  const char* file_extensions; /* comma separated, e.g. ".onnx" */
  void* user;
  /* Does this file look like ours? (cheap: extension or magic). */
  int (*probe)(void* user, const char* path);
  mn_status (*import_model)(void* user, const struct mn_host_api* host, const char* path,
                            const mn_options* options, mn_blob* out_model, mn_error* err);
} mn_frontend;

/* ---- Host side ------------------------------------------------------------------- */
typedef enum mn_log_level {
  MN_LOG_TRACE = 0,
  MN_LOG_DEBUG = 1,
  MN_LOG_INFO = 2,
  MN_LOG_WARN = 3,
  MN_LOG_ERROR = 4
} mn_log_level;

/* What the host offers a plugin, at registration and later. */
typedef struct mn_host_api {
  size_t struct_size;
  uint32_t abi_major;
  uint32_t abi_minor;
  void* host;
  void (*log)(void* host, int32_t level, const char* message);
  /* Named services exported by backends ("f32_gemm", "sparse_gemm" ...): a versioned
   * struct of function pointers whose layout the two sides agree on by name. */
  const void* (*get_service)(void* host, const char* name);
  /* Allocate / free blob memory with the host's allocator. */
  uint8_t* (*blob_alloc)(size_t size);
  void (*blob_free)(uint8_t* data, size_t size);
} mn_host_api;

/* Handed to register_plugin; each call copies what it needs (tables must stay valid). */
typedef struct mn_registrar {
  size_t struct_size;
  void* host;
  mn_status (*add_backend)(void* host, const mn_backend* backend);
  mn_status (*add_op)(void* host, const mn_op_def* op);
  mn_status (*add_transform)(void* host, const mn_transform* transform);
  mn_status (*add_frontend)(void* host, const mn_frontend* frontend);
  mn_status (*add_service)(void* host, const char* name, const void* service);
} mn_registrar;

typedef struct mn_plugin_info {
  uint32_t abi_major;
  uint32_t abi_minor;
  const char* name;
  const char* version;
  const char* description;
  mn_status (*register_plugin)(const mn_host_api* host, const mn_registrar* registrar,
                               mn_error* err);
} mn_plugin_info;

typedef const mn_plugin_info* (*mn_plugin_entry_fn)(void);

#ifdef __cplusplus
}
#endif

#endif /* MINNOW_PLUGIN_H */
