// Header-only C++ wrapper over the C plugin ABI (plugin.h), for plugin authors.
//
// Derive from Backend (and Kernel), or write a shape function, throw PluginError (or any
// std::exception) on bad input: the trampolines here turn exceptions into status codes
// and messages, so nothing C++ crosses the boundary. Nothing here depends on libminnow.
#pragma once

#include <minnow/plugin.h>

#include <algorithm>
#include <cstddef>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace minnow {
namespace plugin {

// Thrown by plugin code; `status` is reported to the host.
class PluginError : public std::runtime_error {
 public:
  explicit PluginError(const std::string& msg, mn_status status = MN_ERR_INVALID_ARGUMENT)
      : std::runtime_error(msg), status_(status) {}
  mn_status status() const { return status_; }

 private:
  mn_status status_;
};

inline void set_error(mn_error* err, const std::string& msg) {
  if (!err) return;
  std::snprintf(err->message, sizeof(err->message), "%s", msg.c_str());
}

// Runs `fn`, converting exceptions into a status and an error message.
template <class Fn>
mn_status guarded(mn_error* err, Fn&& fn) noexcept {
  try {
    return fn();
  } catch (const PluginError& e) {
    set_error(err, e.what());
    return e.status();
  } catch (const std::bad_alloc&) {
    set_error(err, "out of memory");
    return MN_ERR_OUT_OF_MEMORY;
  } catch (const std::exception& e) {
    set_error(err, std::string("exception: ") + e.what());
    return MN_ERR_INTERNAL;
  } catch (...) {
    set_error(err, "unknown exception");
    return MN_ERR_INTERNAL;
  }
}

inline size_t dtype_size(int32_t dtype) {
  switch (dtype) {
    case MN_F32: case MN_I32: case MN_U32: return 4;
    case MN_F16: case MN_I16: case MN_U16: case MN_BF16: return 2;
    case MN_I8: case MN_U8: case MN_BOOL: return 1;
    case MN_I64: case MN_U64: case MN_F64: return 8;
    default: return 0;
  }
}

// Thin read-only helpers over mn_tensor.
struct TensorRef {
  const mn_tensor* t;
  bool present() const { return t && t->dtype != MN_UNDEFINED; }
  int rank() const { return t->rank; }
  int64_t dim(int i) const { return t->dims[i < 0 ? i + t->rank : i]; }
  std::vector<int64_t> shape() const {
    return t->rank < 0 ? std::vector<int64_t>{} : std::vector<int64_t>(t->dims, t->dims + t->rank);
  }
  bool shape_known() const {
    if (t->rank < 0) return false;
    for (int i = 0; i < t->rank; ++i)
      if (t->dims[i] < 0) return false;
    return true;
  }
  int64_t elements() const {
    int64_t n = 1;
    for (int i = 0; i < t->rank; ++i) n *= t->dims[i];
    return n;
  }
  int32_t dtype() const { return t->dtype; }
  bool is_constant() const { return t->is_constant != 0; }
  template <class T>
  const T* data() const { return static_cast<const T*>(t->data); }
  template <class T>
  T* mutable_data() const { return static_cast<T*>(t->data); }
};

// Convenience accessors over mn_node.
class Node {
 public:
  explicit Node(const mn_node* n) : n_(n) {}
  const mn_node* raw() const { return n_; }
  std::string name() const { return n_->name ? n_->name : ""; }
  std::string op() const { return n_->op; }
  std::string domain() const { return n_->domain ? n_->domain : ""; }
  int op_version() const { return n_->op_version; }
  int num_inputs() const { return n_->num_inputs; }
  int num_outputs() const { return n_->num_outputs; }
  TensorRef input(int i) const {
    static const mn_tensor absent = {sizeof(mn_tensor), "", MN_UNDEFINED, -1, {0}, nullptr,
                                     0, 0, -1, nullptr, nullptr};
    return TensorRef{i < n_->num_inputs ? &n_->inputs[i] : &absent};
  }
  TensorRef output(int i) const { return TensorRef{&n_->outputs[i]}; }
  bool has_input(int i) const { return input(i).present(); }

  bool has_attr(const char* k) const { return n_->attr_type(n_->attr_ctx, k) != MN_ATTR_NONE; }
  int64_t attr_int(const char* k, int64_t def) const {
    int64_t v = def;
    n_->attr_int(n_->attr_ctx, k, &v);
    return v;
  }
  float attr_float(const char* k, float def) const {
    float v = def;
    n_->attr_float(n_->attr_ctx, k, &v);
    return v;
  }
  std::string attr_string(const char* k, const std::string& def) const {
    const char* s = nullptr;
    return n_->attr_string(n_->attr_ctx, k, &s) && s ? std::string(s) : def;
  }
  std::vector<int64_t> attr_ints(const char* k, std::vector<int64_t> def = {}) const {
    const int64_t* p = nullptr;
    size_t c = 0;
    if (!n_->attr_ints(n_->attr_ctx, k, &p, &c)) return def;
    return std::vector<int64_t>(p, p + c);
  }
  std::vector<float> attr_floats(const char* k, std::vector<float> def = {}) const {
    const float* p = nullptr;
    size_t c = 0;
    if (!n_->attr_floats(n_->attr_ctx, k, &p, &c)) return def;
    return std::vector<float>(p, p + c);
  }
  // STRINGS attribute; `def` when absent or when the host predates ABI 1.1.
  std::vector<std::string> attr_strings(const char* k, std::vector<std::string> def = {}) const {
    if (n_->struct_size < offsetof(mn_node, attr_strings) + sizeof(n_->attr_strings) ||
        !n_->attr_strings)
      return def;
    const char* const* p = nullptr;
    size_t c = 0;
    if (!n_->attr_strings(n_->attr_ctx, k, &p, &c)) return def;
    std::vector<std::string> v;
    for (size_t i = 0; i < c; ++i) v.emplace_back(p[i] ? p[i] : "");
    return v;
  }
  const mn_tensor* attr_tensor(const char* k) const {
    const mn_tensor* t = nullptr;
    return n_->attr_tensor(n_->attr_ctx, k, &t) ? t : nullptr;
  }

  [[noreturn]] void fail(const std::string& what,
                         mn_status status = MN_ERR_INVALID_ARGUMENT) const {
    throw PluginError("node '" + name() + "' (" + op() + "): " + what, status);
  }

 private:
  const mn_node* n_;
};

// A parallel call's function and the first exception any of its chunks threw, kept
// under a lock (chunks run on several threads) and rethrown by the caller; later chunks
// are skipped.
template <class Fn>
struct GuardedCall {
  explicit GuardedCall(Fn* f) : fn(f) {}
  Fn* fn;
  std::atomic<bool> failed{false};
  std::mutex mutex;
  std::exception_ptr error;
  template <class... Args>
  void operator()(Args... args) {
    if (failed.load(std::memory_order_relaxed)) return;
    try {
      (*fn)(args...);
    } catch (...) {
      std::lock_guard<std::mutex> lock(mutex);
      if (!error) error = std::current_exception();
      failed.store(true);
    }
  }
  void rethrow() const {
    if (error) std::rethrow_exception(error);
  }
};

// Run-time context passed to kernels.
class RunContext {
 public:
  explicit RunContext(const mn_run_ctx* c) : c_(c) {}
  // The C context, for services that take one (mn_matmul_service::multiply).
  const mn_run_ctx* raw() const { return c_; }
  int num_threads() const { return c_->num_threads; }
  void* scratch() const { return c_->scratch; }
  size_t scratch_size() const { return c_->scratch_size; }
  // Reports the actual dims of a run-time-sized output (its shape function called
  // set_output_bound): same rank as the bound, no dim above it. Throws if the host
  // refuses them or predates ABI 1.2.
  void set_output_dims(int index, const std::vector<int64_t>& dims) const {
    if (c_->struct_size < offsetof(mn_run_ctx, set_output_dims) + sizeof(c_->set_output_dims) ||
        !c_->set_output_dims)
      throw PluginError("the host predates plugin ABI 1.2: it cannot take run-time output dims", MN_ERR_UNSUPPORTED);
    if (dims.size() > MN_MAX_RANK) throw PluginError("rank above MN_MAX_RANK", MN_ERR_INTERNAL);
    mn_status s = c_->set_output_dims(c_->host, index, static_cast<int32_t>(dims.size()), dims.data());
    if (s != MN_OK)
      throw PluginError("the host refused run-time dims for output " + std::to_string(index) +
                            " (not declared with set_output_bound, other rank, or above the bound)",
                        MN_ERR_INTERNAL);
  }
  // Runs fn(begin, end) over [0, n) in chunks of at least `grain` on the session's arena.
  // Exceptions inside fn are captured and rethrown on the calling thread.
  template <class Fn>
  void parallel_for(size_t n, size_t grain, Fn&& fn) const {
    if (n == 0) return;
    if (c_->num_threads <= 1 || n <= grain || !c_->parallel_for) {
      fn(size_t(0), n);
      return;
    }
    GuardedCall<std::remove_reference_t<Fn>> call(&fn);
    c_->parallel_for(
        c_->host, n, grain == 0 ? 1 : grain,
        [](void* u, size_t b, size_t e) { (*static_cast<GuardedCall<std::remove_reference_t<Fn>>*>(u))(b, e); }, &call);
    call.rethrow();
  }
  // fn(part, begin, end) for `parts` contiguous parts of [0, n), each but the last ending
  // on a multiple of `grain`; empty parts are not called. Where the host sizes parts by its
  // threads' measured speeds (ABI 1.9, mn_run_ctx.parallel_parts) a part may hold up to
  // max_part_items; otherwise the parts are even, through parallel_for. For a few parts of
  // fixed cost each (one per thread): size scratch per part for max_part_items.
  template <class Fn>
  void parallel_parts(size_t n, size_t grain, size_t parts, Fn&& fn) const {
    if (n == 0 || parts == 0) return;
    grain = grain == 0 ? 1 : grain;
    if (c_->num_threads > 1 && c_->struct_size >= offsetof(mn_run_ctx, parallel_parts) + sizeof(c_->parallel_parts) &&
        c_->parallel_parts) {
      GuardedCall<std::remove_reference_t<Fn>> call(&fn);
      c_->parallel_parts(
          c_->host, n, grain, parts,
          [](void* u, size_t j, size_t b, size_t e) {
            (*static_cast<GuardedCall<std::remove_reference_t<Fn>>*>(u))(j, b, e);
          },
          &call);
      call.rethrow();
      return;
    }
    auto bound = [&](size_t j) { return j >= parts ? n : std::min(n, (n * j / parts + grain - 1) / grain * grain); };
    parallel_for(parts, 1, [&](size_t j0, size_t j1) {
      for (size_t j = j0; j < j1; ++j)
        if (bound(j) < bound(j + 1)) fn(j, bound(j), bound(j + 1));
    });
  }
  // The most items parallel_parts gives one part (MN_PARTS_MAX_SKEW).
  static size_t max_part_items(size_t n, size_t grain, size_t parts) {
    grain = grain == 0 ? 1 : grain;
    parts = parts == 0 ? 1 : parts;
    const size_t skewed = static_cast<size_t>(MN_PARTS_MAX_SKEW * static_cast<double>(n) / static_cast<double>(parts)) + 1;
    return std::min(n, (skewed + grain - 1) / grain * grain + grain);
  }

 private:
  const mn_run_ctx* c_;
};

// Base class of a prepared kernel. run() must be const: a prepared kernel is shared by
// every session of a model and may run concurrently.
class Kernel {
 public:
  virtual ~Kernel() = default;
  virtual const char* name() const = 0;
  virtual void run(const RunContext& ctx, const mn_tensor* inputs, int num_inputs,
                   mn_tensor* outputs, int num_outputs) const = 0;
  virtual size_t scratch_bytes(const mn_tensor*, int, const mn_tensor*, int) const { return 0; }
  // The scratch of runs on `threads` threads (mn_kernel.scratch_bytes_threads); by default
  // scratch_bytes, the same for any thread count.
  virtual size_t scratch_bytes_for_threads(const mn_tensor* in, int num_inputs, const mn_tensor* out,
                                           int num_outputs, int /*threads*/) const {
    return scratch_bytes(in, num_inputs, out, num_outputs);
  }
  virtual double flops(const mn_tensor*, int, const mn_tensor*, int) const { return 0.0; }
  virtual int inplace_input() const { return -1; }
  // Clamp output 0 to [lo, hi] on every later run (mn_kernel.fuse_clamp); false: cannot.
  // Called while the model is prepared, before any run.
  virtual bool fuse_clamp(float /*lo*/, float /*hi*/) { return false; }
  // Add inputs[input_index] (output 0's shape) to output 0 on every later run, before the
  // clamp (mn_kernel.fuse_add); false: cannot. Called while the model is prepared.
  virtual bool fuse_add(int /*input_index*/) { return false; }
  // Compute inputs[input_index] from the producer's inputs, passed from inputs[first_extra]
  // on, on every later run (mn_kernel.fuse_producer): `producer` is a kernel of the same
  // backend; false: cannot. Called while the model is prepared; name() may change.
  virtual bool fuse_producer(int /*input_index*/, Kernel& /*producer*/, int /*first_extra*/) { return false; }
  // `producer` (a kernel of the same backend) writes inputs[input_index] at run time
  // (mn_kernel.set_producer): advice for splitting work over threads. Called while the
  // model is prepared, after the fusions.
  virtual void set_producer(int /*input_index*/, Kernel& /*producer*/) {}
};

// Wraps a C++ kernel into the C table; the table owns the object.
inline void export_kernel(std::unique_ptr<Kernel> k, mn_kernel* out) {
  std::memset(out, 0, sizeof(*out));
  out->struct_size = sizeof(mn_kernel);
  out->name = k->name();
  out->inplace_input = k->inplace_input();
  out->state = k.release();
  out->run = [](void* s, const mn_run_ctx* ctx, const mn_tensor* in, int32_t nin,
                mn_tensor* outs, int32_t nout, mn_error* err) -> mn_status {
    return guarded(err, [&] {
      static_cast<const Kernel*>(s)->run(RunContext(ctx), in, nin, outs, nout);
      return MN_OK;
    });
  };
  out->scratch_bytes = [](void* s, const mn_tensor* in, int32_t nin, const mn_tensor* outs,
                          int32_t nout) -> size_t {
    try {
      return static_cast<const Kernel*>(s)->scratch_bytes(in, nin, outs, nout);
    } catch (...) {
      return 0;
    }
  };
  out->scratch_bytes_threads = [](void* s, const mn_tensor* in, int32_t nin, const mn_tensor* outs,
                                  int32_t nout, int32_t threads) -> size_t {
    try {
      return static_cast<const Kernel*>(s)->scratch_bytes_for_threads(in, nin, outs, nout, threads);
    } catch (...) {
      return 0;
    }
  };
  out->flops = [](void* s, const mn_tensor* in, int32_t nin, const mn_tensor* outs,
                  int32_t nout) -> double {
    try {
      return static_cast<const Kernel*>(s)->flops(in, nin, outs, nout);
    } catch (...) {
      return 0.0;
    }
  };
  out->fuse_clamp = [](void* s, float lo, float hi) -> mn_status {
    try {
      return static_cast<Kernel*>(s)->fuse_clamp(lo, hi) ? MN_OK : MN_ERR_UNSUPPORTED;
    } catch (...) {
      return MN_ERR_INTERNAL;
    }
  };
  out->fuse_add = [](void* s, int32_t input_index) -> mn_status {
    try {
      return static_cast<Kernel*>(s)->fuse_add(input_index) ? MN_OK : MN_ERR_UNSUPPORTED;
    } catch (...) {
      return MN_ERR_INTERNAL;
    }
  };
  out->fuse_producer = [](void* s, int32_t input_index, void* producer, int32_t first_extra,
                          const char** name) -> mn_status {
    try {
      Kernel* k = static_cast<Kernel*>(s);
      if (!producer || !k->fuse_producer(input_index, *static_cast<Kernel*>(producer), first_extra))
        return MN_ERR_UNSUPPORTED;
      if (name) *name = k->name();
      return MN_OK;
    } catch (...) {
      return MN_ERR_INTERNAL;
    }
  };
  out->set_producer = [](void* s, int32_t input_index, void* producer) {
    try {
      if (producer) static_cast<Kernel*>(s)->set_producer(input_index, *static_cast<Kernel*>(producer));
    } catch (...) {
    }
  };
  out->destroy = [](void* s) { delete static_cast<Kernel*>(s); };
}

struct Bid {
  double cost = -1.0;  // < 0: cannot run
  std::string reason;
  static Bid no(std::string why) { return Bid{-1.0, std::move(why)}; }
  static Bid yes(double cost, std::string why = {}) { return Bid{cost, std::move(why)}; }
};

// Base class of a backend.
class Backend {
 public:
  virtual ~Backend() = default;
  virtual const char* name() const = 0;
  virtual Bid bid(const Node& node) const = 0;
  virtual std::unique_ptr<Kernel> prepare(const Node& node) const = 0;
};

// Fills a C backend table that owns `b`.
inline void export_backend(std::unique_ptr<Backend> b, mn_backend* out) {
  std::memset(out, 0, sizeof(*out));
  out->struct_size = sizeof(mn_backend);
  out->name = b->name();
  out->user = b.release();
  out->bid = [](void* u, const mn_node* n, mn_bid* bid) {
    Bid r;
    try {
      r = static_cast<const Backend*>(u)->bid(Node(n));
    } catch (const std::exception& e) {
      r = Bid::no(e.what());
    } catch (...) {
      r = Bid::no("unknown exception while bidding");
    }
    bid->cost = r.cost;
    std::snprintf(bid->reason, sizeof(bid->reason), "%s", r.reason.c_str());
  };
  out->prepare = [](void* u, const mn_node* n, mn_kernel* k, mn_error* err) -> mn_status {
    return guarded(err, [&] {
      auto kernel = static_cast<const Backend*>(u)->prepare(Node(n));
      if (!kernel) throw PluginError("backend returned no kernel", MN_ERR_INTERNAL);
      export_kernel(std::move(kernel), k);
      return MN_OK;
    });
  };
  out->destroy = [](void* u) { delete static_cast<Backend*>(u); };
}

// Shape-function helper: declare output i.
inline void set_output(const mn_shape_ctx* ctx, int index, int32_t dtype,
                       const std::vector<int64_t>& dims) {
  if (dims.size() > MN_MAX_RANK) throw PluginError("rank above MN_MAX_RANK");
  mn_status s = ctx->set_output(ctx->host, index, dtype, static_cast<int32_t>(dims.size()),
                                dims.data());
  if (s != MN_OK) throw PluginError("cannot set output " + std::to_string(index), s);
}

// Shape-function helper: output i's dims (already set) are an upper bound, the actual ones
// come from the kernel at run time (RunContext::set_output_dims).
inline void set_output_bound(const mn_shape_ctx* ctx, int index) {
  if (ctx->struct_size < offsetof(mn_shape_ctx, set_output_bound) + sizeof(ctx->set_output_bound) ||
      !ctx->set_output_bound)
    throw PluginError("the host predates plugin ABI 1.2: it cannot plan run-time-sized outputs", MN_ERR_UNSUPPORTED);
  mn_status s = ctx->set_output_bound(ctx->host, index);
  if (s != MN_OK) throw PluginError("cannot mark output " + std::to_string(index) + " run-time sized", s);
}

}  // namespace plugin
}  // namespace minnow

// Defines the entry point of a plugin. Use once per shared object:
//   MINNOW_DEFINE_PLUGIN("my_ops", "1.0.0", "what it does", my_register_fn)
#define MINNOW_DEFINE_PLUGIN(NAME, VERSION, DESCRIPTION, REGISTER_FN)                \
  extern "C" MINNOW_PLUGIN_EXPORT const mn_plugin_info* minnow_plugin_entry(void) {  \
    static const mn_plugin_info info = {MINNOW_ABI_MAJOR, MINNOW_ABI_MINOR, NAME,     \
                                        VERSION, DESCRIPTION, REGISTER_FN};           \
    return &info;                                                                     \
  }
