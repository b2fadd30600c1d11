#include "test_util.h"


#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>

#include "ops.h"  // cpu_dense::make_backend

namespace cdt {

// ---- Tensor -------------------------------------------------------------------------
int64_t product(const std::vector<int64_t>& v) {
  int64_t n = 1;
  for (int64_t d : v) n *= d;
  return n;
}

std::string shape_str(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s + "]";
}

static size_t esize(int32_t dtype) {
  switch (dtype) {
    case MN_F32:
    case MN_I32:
    case MN_U32: return 4;
    case MN_I64:
    case MN_U64:
    case MN_F64: return 8;
    case MN_F16:
    case MN_BF16:
    case MN_I16:
    case MN_U16: return 2;
    case MN_I8:
    case MN_U8:
    case MN_BOOL: return 1;
    default: return 0;
  }
}

int64_t Tensor::numel() const { return product(shape); }
size_t Tensor::bytes() const { return static_cast<size_t>(numel()) * esize(dtype); }

Tensor Tensor::of(int32_t dtype, std::vector<int64_t> shape) {
  Tensor t;
  t.dtype = dtype;
  t.shape = std::move(shape);
  t.storage.assign((t.bytes() + 7) / 8 + 1, 0xA5A5A5A5A5A5A5A5ull);
  return t;
}

Tensor Tensor::f32(std::vector<int64_t> shape, const std::vector<float>& values) {
  Tensor t = of(MN_F32, std::move(shape));
  if (!values.empty()) {
    if (static_cast<int64_t>(values.size()) != t.numel()) std::abort();
    std::memcpy(t.f(), values.data(), values.size() * sizeof(float));
  }
  return t;
}

Tensor Tensor::i64(std::vector<int64_t> shape, const std::vector<int64_t>& values) {
  Tensor t = of(MN_I64, std::move(shape));
  if (!values.empty()) {
    if (static_cast<int64_t>(values.size()) != t.numel()) std::abort();
    std::memcpy(t.l(), values.data(), values.size() * sizeof(int64_t));
  }
  return t;
}

Tensor Tensor::none() {
  Tensor t;
  t.dtype = MN_UNDEFINED;
  t.absent = true;
  return t;
}

Tensor Tensor::out(std::vector<int64_t> shape, int32_t dtype) {
  Tensor t = of(dtype, std::move(shape));
  if (dtype == MN_F32)
    for (int64_t i = 0; i < t.numel(); ++i) t.f()[i] = std::numeric_limits<float>::quiet_NaN();
  return t;
}

mn_tensor Tensor::view(bool with_data, bool hide_dims) const {
  mn_tensor v;
  std::memset(&v, 0, sizeof(v));
  v.struct_size = sizeof(mn_tensor);
  v.name = "";
  v.quant_axis = -1;
  if (absent) {
    v.dtype = MN_UNDEFINED;
    v.rank = -1;
    return v;
  }
  v.dtype = dtype;
  v.rank = static_cast<int32_t>(shape.size());
  for (size_t i = 0; i < shape.size(); ++i) v.dims[i] = hide_dims ? -1 : shape[i];
  v.is_constant = constant ? 1 : 0;
  v.data = with_data ? const_cast<void*>(raw()) : nullptr;
  return v;
}

std::vector<float> random_floats(std::mt19937& rng, size_t n, float lo, float hi) {
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

Tensor random_f32(std::mt19937& rng, std::vector<int64_t> shape, float lo, float hi) {
  const size_t n = static_cast<size_t>(product(shape));
  return Tensor::f32(std::move(shape), random_floats(rng, n, lo, hi));
}

// ---- FakeNode -----------------------------------------------------------------------
FakeNode& FakeNode::set(const std::string& k, int64_t v) {
  Attr a;
  a.type = MN_ATTR_INT;
  a.i = v;
  attrs_[k] = a;
  return *this;
}
FakeNode& FakeNode::set(const std::string& k, float v) {
  Attr a;
  a.type = MN_ATTR_FLOAT;
  a.f = v;
  attrs_[k] = a;
  return *this;
}
FakeNode& FakeNode::set(const std::string& k, const std::string& v) {
  Attr a;
  a.type = MN_ATTR_STRING;
  a.s = v;
  attrs_[k] = a;
  return *this;
}
FakeNode& FakeNode::set(const std::string& k, const std::vector<int64_t>& v) {
  Attr a;
  a.type = MN_ATTR_INTS;
  a.ints = v;
  attrs_[k] = a;
  return *this;
}
FakeNode& FakeNode::set(const std::string& k, const std::vector<float>& v) {
  Attr a;
  a.type = MN_ATTR_FLOATS;
  a.floats = v;
  attrs_[k] = a;
  return *this;
}

const FakeNode::Attr* FakeNode::find(const void* ctx, const char* name) {
  const auto* self = static_cast<const FakeNode*>(ctx);
  auto it = self->attrs_.find(name);
  return it == self->attrs_.end() ? nullptr : &it->second;
}
mn_attr_type FakeNode::cb_type(const void* ctx, const char* name) {
  const Attr* a = find(ctx, name);
  return a ? a->type : MN_ATTR_NONE;
}
int FakeNode::cb_int(const void* ctx, const char* name, int64_t* out) {
  const Attr* a = find(ctx, name);
  if (!a || a->type != MN_ATTR_INT) return 0;
  if (out) *out = a->i;
  return 1;
}
int FakeNode::cb_float(const void* ctx, const char* name, float* out) {
  const Attr* a = find(ctx, name);
  if (!a || a->type != MN_ATTR_FLOAT) return 0;
  if (out) *out = a->f;
  return 1;
}
int FakeNode::cb_string(const void* ctx, const char* name, const char** out) {
  const Attr* a = find(ctx, name);
  if (!a || a->type != MN_ATTR_STRING) return 0;
  if (out) *out = a->s.c_str();
  return 1;
}
int FakeNode::cb_ints(const void* ctx, const char* name, const int64_t** out, size_t* count) {
  const Attr* a = find(ctx, name);
  if (!a || a->type != MN_ATTR_INTS) return 0;
  if (out) *out = a->ints.data();
  if (count) *count = a->ints.size();
  return 1;
}
int FakeNode::cb_floats(const void* ctx, const char* name, const float** out, size_t* count) {
  const Attr* a = find(ctx, name);
  if (!a || a->type != MN_ATTR_FLOATS) return 0;
  if (out) *out = a->floats.data();
  if (count) *count = a->floats.size();
  return 1;
}
int FakeNode::cb_tensor(const void*, const char*, const mn_tensor**) { return 0; }
const char* FakeNode::cb_name(const void* ctx, int32_t index) {
  const auto* self = static_cast<const FakeNode*>(ctx);
  int32_t i = 0;
  for (const auto& kv : self->attrs_)
    if (i++ == index) return kv.first.c_str();
  return nullptr;
}

mn_node FakeNode::build(const std::vector<mn_tensor>& ins,
                        const std::vector<mn_tensor>& outs) const {
  mn_node n;
  std::memset(&n, 0, sizeof(n));
  n.struct_size = sizeof(mn_node);
  n.name = name_.c_str();
  n.domain = domain_.c_str();
  n.op = op_.c_str();
  n.op_version = version_;
  n.num_inputs = static_cast<int32_t>(ins.size());
  n.inputs = ins.data();
  n.num_outputs = static_cast<int32_t>(outs.size());
  n.outputs = outs.data();
  n.attr_ctx = this;
  n.attr_type = cb_type;
  n.attr_int = cb_int;
  n.attr_float = cb_float;
  n.attr_string = cb_string;
  n.attr_ints = cb_ints;
  n.attr_floats = cb_floats;
  n.attr_tensor = cb_tensor;
  n.num_attrs = static_cast<int32_t>(attrs_.size());
  n.attr_name = cb_name;
  return n;
}

// ---- Contexts -----------------------------------------------------------------------
namespace {

struct ChunkyHost {
  size_t chunks = 0;
};

// Splits [0, n) into chunks of 1, 2, ... 7, 1, 2 ... elements and runs them last first,
// ignoring the grain: every kernel must be right for any split of its range.
void chunky_parallel_for(void* host, size_t n, size_t /*grain*/, mn_range_fn fn, void* user) {
  std::vector<std::pair<size_t, size_t>> ranges;
  size_t b = 0, k = 0;
  while (b < n) {
    size_t len = 1 + (k++ % 7);
    size_t e = std::min(n, b + len);
    ranges.emplace_back(b, e);
    b = e;
  }
  for (auto it = ranges.rbegin(); it != ranges.rend(); ++it) fn(user, it->first, it->second);
  static_cast<ChunkyHost*>(host)->chunks += ranges.size();
}

void serial_parallel_for(void*, size_t n, size_t, mn_range_fn fn, void* user) { fn(user, 0, n); }

// mn_run_ctx.parallel_parts as skewed as the ABI allows: part `big` holds the most items a
// part may (RunContext::max_part_items), the others share the rest evenly, each bound but
// the last on the grain. A kernel must size each part's scratch for that.
std::vector<size_t> skewed_bounds(size_t n, size_t grain, size_t parts, size_t big) {
  grain = std::max<size_t>(grain, 1);
  // In whole grains (the last may be short): part `big` takes the most, the others the
  // rest evenly.
  const size_t units = (n + grain - 1) / grain;
  const size_t most = std::max<size_t>(1, minnow::plugin::RunContext::max_part_items(n, grain, parts) / grain);
  std::vector<size_t> len(parts, 0);
  len[big] = std::min(units, most);
  const size_t rest = units - len[big];
  for (size_t j = 0, k = 0; j < parts; ++j)
    if (j != big) {
      len[j] = rest * (k + 1) / (parts - 1) - rest * k / (parts - 1);
      ++k;
    }
  std::vector<size_t> bounds(parts + 1, 0);
  for (size_t j = 0; j < parts; ++j) bounds[j + 1] = std::min(n, bounds[j] + len[j] * grain);
  bounds[parts] = n;
  return bounds;
}

// Chunky: the first part skewed, the parts run last first.
void chunky_parallel_parts(void* host, size_t n, size_t grain, size_t parts, mn_part_fn fn, void* user) {
  const std::vector<size_t> b = skewed_bounds(n, grain, parts, 0);
  for (size_t j = parts; j-- > 0;)
    if (b[j] < b[j + 1]) fn(user, j, b[j], b[j + 1]);
  static_cast<ChunkyHost*>(host)->chunks += parts;
}

tbb::task_arena& arena() {
  // As many threads as the machine has (at least 2, so work really is shared).
  static tbb::task_arena a(std::max(2, tbb::this_task_arena::max_concurrency()));
  return a;
}

void tbb_parallel_for(void*, size_t n, size_t grain, mn_range_fn fn, void* user) {
  arena().execute([&] {
    tbb::parallel_for(tbb::blocked_range<size_t>(0, n, grain),
                      [&](const tbb::blocked_range<size_t>& r) { fn(user, r.begin(), r.end()); });
  });
}

// TBB: the last part skewed, the parts on the arena's threads at once.
void tbb_parallel_parts(void*, size_t n, size_t grain, size_t parts, mn_part_fn fn, void* user) {
  const std::vector<size_t> b = skewed_bounds(n, grain, parts, parts - 1);
  arena().execute([&] {
    tbb::parallel_for(tbb::blocked_range<size_t>(0, parts, 1), [&](const tbb::blocked_range<size_t>& r) {
      for (size_t j = r.begin(); j < r.end(); ++j)
        if (b[j] < b[j + 1]) fn(user, j, b[j], b[j + 1]);
    });
  });
}

// Scratch handed to a kernel: 64-byte aligned, garbage-filled.
struct Scratch {
  void* p = nullptr;
  explicit Scratch(size_t bytes) {
    if (bytes) {
      p = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
      std::memset(p, 0xCD, bytes);
    }
  }
  ~Scratch() { std::free(p); }
};

}  // namespace

const char* ctx_name(Ctx c) {
  switch (c) {
    case Ctx::kSerial: return "serial";
    case Ctx::kChunky: return "chunky";
    default: return "tbb";
  }
}

const mn_backend& backend() {
  static const mn_backend b = [] {
    mn_backend t;
    minnow::plugin::export_backend(minnow::cpu_dense::make_backend(), &t);
    return t;
  }();
  return b;
}

static std::vector<mn_tensor> views(const std::vector<Tensor>& ts, bool data, bool hide) {
  std::vector<mn_tensor> v;
  for (const Tensor& t : ts) v.push_back(t.view(data || t.constant, hide && !t.constant));
  return v;
}

mn_bid bid(const FakeNode& node, const std::vector<Tensor>& inputs,
           const std::vector<Tensor>& outputs) {
  std::vector<mn_tensor> in = views(inputs, false, false), out = views(outputs, false, false);
  mn_node n = node.build(in, out);
  mn_bid b;
  std::memset(&b, 0, sizeof(b));
  b.struct_size = sizeof(b);
  backend().bid(backend().user, &n, &b);
  return b;
}

RunResult run(const FakeNode& node, std::vector<Tensor>& inputs, std::vector<Tensor>& outputs,
              RunOptions opt) {
  RunResult r;
  const mn_backend& be = backend();
  {
    mn_bid b = bid(node, inputs, outputs);
    r.bid_cost = b.cost;
    r.bid_ok = b.cost >= 0;
    r.bid_reason = b.reason;
    if (!r.bid_ok && !opt.skip_bid) {
      r.status = MN_ERR_UNSUPPORTED;
      r.error = b.reason;
      return r;
    }
  }
  // Prepare: constants carry data, the rest do not; dims optionally unknown.
  mn_kernel k;
  std::memset(&k, 0, sizeof(k));
  mn_error err;
  err.message[0] = 0;
  {
    std::vector<mn_tensor> in = views(inputs, false, opt.hide_dims_at_prepare);
    std::vector<mn_tensor> out = views(outputs, false, opt.hide_dims_at_prepare);
    mn_node n = node.build(in, out);
    r.status = be.prepare(be.user, &n, &k, &err);
    if (r.status != MN_OK) {
      r.error = err.message;
      return r;
    }
  }
  r.kernel_name = k.name ? k.name : "";
  r.inplace_input = k.inplace_input;

  // Runs the prepared kernel on these tensors in context c; returns the run's status.
  auto run_once = [&](std::vector<Tensor>& ins, std::vector<Tensor>& outs, Ctx c, bool in_place,
                      std::string* error, size_t* chunks) {
    std::vector<mn_tensor> in = views(ins, true, false);
    std::vector<mn_tensor> out = views(outs, true, false);
    if (in_place) {
      // Output 0 takes input 0's buffer, which holds the input: what the planner does.
      out[0].data = in[0].data;
    }
    // What a session of this many threads would ask (ABI 1.7), else the any-count size.
    const int32_t threads = c == Ctx::kSerial ? 1 : c == Ctx::kChunky ? 8 : 4;
    const size_t sb = k.scratch_bytes_threads
                          ? k.scratch_bytes_threads(k.state, in.data(), static_cast<int32_t>(in.size()),
                                                    out.data(), static_cast<int32_t>(out.size()), threads)
                          : k.scratch_bytes
                          ? k.scratch_bytes(k.state, in.data(), static_cast<int32_t>(in.size()),
                                            out.data(), static_cast<int32_t>(out.size()))
                          : 0;
    Scratch scratch(sb);
    ChunkyHost host;
    mn_run_ctx ctx;
    std::memset(&ctx, 0, sizeof(ctx));
    ctx.struct_size = sizeof(ctx);
    ctx.host = &host;
    ctx.scratch = scratch.p;
    ctx.scratch_size = sb;
    switch (c) {
      case Ctx::kSerial:
        ctx.num_threads = 1;
        ctx.parallel_for = serial_parallel_for;
        break;
      case Ctx::kChunky:
        ctx.num_threads = 8;
        ctx.parallel_for = chunky_parallel_for;
        ctx.parallel_parts = chunky_parallel_parts;
        break;
      case Ctx::kTbb:
        ctx.num_threads = 4;
        ctx.parallel_for = tbb_parallel_for;
        ctx.parallel_parts = tbb_parallel_parts;
        break;
    }
    const mn_status st = k.run(k.state, &ctx, in.data(), static_cast<int32_t>(in.size()), out.data(),
                               static_cast<int32_t>(out.size()), &err);
    if (st != MN_OK) *error = err.message;
    if (chunks) *chunks = host.chunks;
    if (in_place) {
      // The result lives in the shared buffer: give it back to the output tensor.
      std::memcpy(outs[0].raw(), in[0].data, outs[0].bytes());
    }
    return st;
  };
  r.status = run_once(inputs, outputs, opt.ctx, opt.in_place, &r.error, &r.chunks);
  if (opt.reruns)
    for (Rerun& again : *opt.reruns) again.status = run_once(*again.inputs, *again.outputs, again.ctx, false, &again.error, nullptr);
  k.destroy(k.state);
  return r;
}

// ---- Comparison ---------------------------------------------------------------------
Compare compare(const float* got, const std::vector<double>& want) {
  Compare c;
  for (size_t i = 0; i < want.size(); ++i) {
    const double g = got[i], w = want[i];
    double e;
    if (std::isnan(g) || std::isnan(w))
      e = (std::isnan(g) && std::isnan(w)) ? 0 : std::numeric_limits<double>::infinity();
    else if (std::isinf(g) || std::isinf(w))
      e = g == w ? 0 : std::numeric_limits<double>::infinity();
    else
      e = std::fabs(g - w) / std::max(1.0, std::fabs(w));
    if (e > c.worst || c.at < 0) {
      c.worst = e;
      c.at = static_cast<int64_t>(i);
      c.got = g;
      c.want = w;
    }
  }
  return c;
}

Compare compare(const float* got, const std::vector<float>& want) {
  return compare(got, std::vector<double>(want.begin(), want.end()));
}

}  // namespace cdt
