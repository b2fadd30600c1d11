// Test harness for the cpu_dense kernels: drives them exactly as the core does, through
// the C ABI — a hand-built mn_node (attribute callbacks over a small store), bid, prepare
// (non-constant inputs without data), scratch_bytes, run with an mn_run_ctx, destroy.
#pragma once

#include <minnow/plugin.h>

#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

namespace cdt {

// A host tensor for tests. Storage is 8-byte aligned (vector<uint64_t>).
struct Tensor {
  int32_t dtype = MN_F32;
  std::vector<int64_t> shape;
  std::vector<uint64_t> storage;
  bool constant = false;  // data visible at bid/prepare time
  bool absent = false;    // an omitted optional input / output

  static Tensor f32(std::vector<int64_t> shape, const std::vector<float>& values = {});
  static Tensor i64(std::vector<int64_t> shape, const std::vector<int64_t>& values = {});
  static Tensor of(int32_t dtype, std::vector<int64_t> shape);  // garbage-filled (0xA5)
  static Tensor none();                                         // omitted optional
  // Output buffer: filled with a NaN pattern, so unwritten elements are caught.
  static Tensor out(std::vector<int64_t> shape, int32_t dtype = MN_F32);
  Tensor& as_constant() {
    constant = true;
    return *this;
  }

  int64_t numel() const;
  size_t bytes() const;
  void* raw() { return storage.data(); }
  const void* raw() const { return storage.data(); }
  float* f() { return reinterpret_cast<float*>(storage.data()); }
  const float* f() const { return reinterpret_cast<const float*>(storage.data()); }
  int64_t* l() { return reinterpret_cast<int64_t*>(storage.data()); }
  const int64_t* l() const { return reinterpret_cast<const int64_t*>(storage.data()); }
  uint8_t* b() { return reinterpret_cast<uint8_t*>(storage.data()); }
  const uint8_t* b() const { return reinterpret_cast<const uint8_t*>(storage.data()); }
  std::vector<float> floats() const { return std::vector<float>(f(), f() + numel()); }

  mn_tensor view(bool with_data, bool hide_dims = false) const;
};

// A node with attribute storage behind the mn_node attr_* callbacks.
class FakeNode {
 public:
  FakeNode(std::string op, int version) : op_(std::move(op)), version_(version) {}
  FakeNode& set(const std::string& k, int64_t v);
  FakeNode& set(const std::string& k, int v) { return set(k, static_cast<int64_t>(v)); }
  FakeNode& set(const std::string& k, float v);
  FakeNode& set(const std::string& k, const std::string& v);
  FakeNode& set(const std::string& k, const char* v) { return set(k, std::string(v)); }
  FakeNode& set(const std::string& k, const std::vector<int64_t>& v);
  FakeNode& set(const std::string& k, const std::vector<float>& v);
  FakeNode& domain(std::string d) {
    domain_ = std::move(d);
    return *this;
  }
  const std::string& op() const { return op_; }

  // The view: valid while this object and the two tensor vectors live.
  mn_node build(const std::vector<mn_tensor>& ins, const std::vector<mn_tensor>& outs) const;

 private:
  struct Attr {
    mn_attr_type type = MN_ATTR_NONE;
    int64_t i = 0;
    float f = 0;
    std::string s;
    std::vector<int64_t> ints;
    std::vector<float> floats;
  };
  static const Attr* find(const void* ctx, const char* name);
  static mn_attr_type cb_type(const void* ctx, const char* name);
  static int cb_int(const void* ctx, const char* name, int64_t* out);
  static int cb_float(const void* ctx, const char* name, float* out);
  static int cb_string(const void* ctx, const char* name, const char** out);
  static int cb_ints(const void* ctx, const char* name, const int64_t** out, size_t* count);
  static int cb_floats(const void* ctx, const char* name, const float** out, size_t* count);
  static int cb_tensor(const void* ctx, const char* name, const mn_tensor** out);
  static const char* cb_name(const void* ctx, int32_t index);

  std::string op_, domain_, name_ = "n0";
  int version_;
  std::map<std::string, Attr> attrs_;
};

// How run() is threaded: serially; serially in many irregular chunks given out in reverse
// order (proves kernels handle any split of their range); or on a real oneTBB arena.
enum class Ctx { kSerial, kChunky, kTbb };

struct RunResult {
  bool bid_ok = false;
  double bid_cost = -1;
  std::string bid_reason;
  mn_status status = MN_ERR_INTERNAL;  // of prepare, or of run if prepare succeeded
  std::string error;
  std::string kernel_name;
  int inplace_input = -100;  // until prepare reports it (-1, an input index, or MN_INPLACE_ADDEND)
  size_t chunks = 0;  // Ctx::kChunky: how many chunks parallel_for handed out
  bool ok() const { return bid_ok && status == MN_OK; }
};

// A further run of the same prepared kernel (RunOptions::reruns): other tensors of the
// same ranks (shapes may differ when the kernel was prepared with dims hidden), another
// context; status and error are filled in.
struct Rerun {
  std::vector<Tensor>* inputs = nullptr;
  std::vector<Tensor>* outputs = nullptr;
  Ctx ctx = Ctx::kSerial;
  mn_status status = MN_ERR_INTERNAL;
  std::string error;
};

struct RunOptions {
  Ctx ctx = Ctx::kSerial;
  bool hide_dims_at_prepare = false;  // prepare with every dim of non-constant tensors -1
  bool skip_bid = false;              // prepare even when the bid refuses
  bool in_place = false;              // run with output 0 sharing input 0's buffer
  std::vector<Rerun>* reruns = nullptr;  // run after the first one, in order
};

// The cpu_dense backend, exported through plugin::export_backend (as the plugin does).
const mn_backend& backend();

mn_bid bid(const FakeNode& node, const std::vector<Tensor>& inputs,
           const std::vector<Tensor>& outputs);
RunResult run(const FakeNode& node, std::vector<Tensor>& inputs, std::vector<Tensor>& outputs,
              RunOptions opt = {});
inline RunResult run(const FakeNode& node, std::vector<Tensor>& inputs,
                     std::vector<Tensor>& outputs, Ctx ctx) {
  RunOptions o;
  o.ctx = ctx;
  return run(node, inputs, outputs, o);
}

// All three contexts, for loops in tests.
constexpr Ctx kAllCtx[] = {Ctx::kSerial, Ctx::kChunky, Ctx::kTbb};
const char* ctx_name(Ctx c);

// Random floats in [lo, hi) from a fixed-seed generator.
std::vector<float> random_floats(std::mt19937& rng, size_t n, float lo = -1.0f, float hi = 1.0f);
Tensor random_f32(std::mt19937& rng, std::vector<int64_t> shape, float lo = -1.0f, float hi = 1.0f);

int64_t product(const std::vector<int64_t>& v);
std::string shape_str(const std::vector<int64_t>& v);

// Max over elements of |got - want| / max(1, |want|), and where it is reached. NaNs in
// either count as infinite error unless both are NaN.
struct Compare {
  double worst = 0;
  int64_t at = -1;
  double got = 0, want = 0;
  bool size_ok = true;
};
Compare compare(const float* got, const std::vector<double>& want);
Compare compare(const float* got, const std::vector<float>& want);

}  // namespace cdt

// CHECK that `got` (float*) matches `want` within 1e-4 relative (1e-4 absolute near 0),
// printing the worst element otherwise.
#define CDT_CHECK_CLOSE(got_ptr, want_vec)                                               \
  do {                                                                                   \
    const ::cdt::Compare cmp_ = ::cdt::compare((got_ptr), (want_vec));                   \
    INFO("worst element " << cmp_.at << ": got " << cmp_.got << ", want " << cmp_.want); \
    CHECK((cmp_.size_ok && cmp_.worst <= 1e-4));                                         \
  } while (0)
