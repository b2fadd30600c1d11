// The ops_caffe plugin: Caffe layers that have no standard op and no other plugin, as
// ops in domain "caffe" with a shape function and a kernel. Today: caffe::Normalize.
// (PriorBox / DetectionOutput / LSTM come from the ops_ssd / ops_lstm plugins.)
#include "normalize.h"

#include <minnow/plugin.hpp>

#include <algorithm>
#include <cstring>

namespace {

using namespace minnow::plugin;

struct NormalizeAttrs {
  bool across_spatial = true;
  float eps = 1e-10f;
};

// Checks the node and returns its attributes; `x`/`scale` shapes may be partly unknown
// while planning.
NormalizeAttrs check_normalize(const Node& n) {
  if (n.num_inputs() != 2 || n.num_outputs() != 1) n.fail("caffe::Normalize takes (x, scale) and gives one output");
  if (n.input(0).dtype() != MN_F32 || n.input(1).dtype() != MN_F32) n.fail("caffe::Normalize needs float32 x and scale");
  TensorRef x = n.input(0), s = n.input(1);
  if (x.rank() >= 0 && x.rank() < 2) n.fail("caffe::Normalize: x must have rank >= 2 (N, C, ...)");
  if (s.rank() >= 0 && s.rank() != 1) n.fail("caffe::Normalize: scale must be 1-D");
  if (x.rank() >= 2 && s.rank() == 1 && x.dim(1) >= 0 && s.dim(0) >= 0 && s.dim(0) != 1 && s.dim(0) != x.dim(1))
    n.fail("caffe::Normalize: scale has " + std::to_string(s.dim(0)) + " values for " + std::to_string(x.dim(1)) +
           " channels (need 1 or C)");
  NormalizeAttrs a;
  a.across_spatial = n.attr_int("across_spatial", 1) != 0;
  a.eps = n.attr_float("eps", 1e-10f);
  if (!(a.eps >= 0)) n.fail("caffe::Normalize: eps must be >= 0");
  return a;
}

class NormalizeKernel : public Kernel {
 public:
  explicit NormalizeKernel(NormalizeAttrs a) : a_(a) {}
  const char* name() const override { return "f32_caffe_normalize_ref"; }
  void run(const RunContext& ctx, const mn_tensor* in, int, mn_tensor* out, int) const override {
    TensorRef x{&in[0]}, s{&in[1]};
    int64_t n = x.dim(0), c = x.dim(1), spatial = 1;
    for (int i = 2; i < x.rank(); ++i) spatial *= x.dim(i);
    int64_t sc = s.dim(0);
    if (sc != 1 && sc != c) throw PluginError("caffe::Normalize: scale count " + std::to_string(sc) + " for " + std::to_string(c) + " channels");
    const float* xp = x.data<float>();
    const float* sp = s.data<float>();
    float* yp = static_cast<float*>(out[0].data);
    ctx.parallel_for(static_cast<size_t>(n), 1, [&](size_t b, size_t e) {
      minnow::caffe_ops::normalize_f32(xp, yp, static_cast<int64_t>(b), static_cast<int64_t>(e), c, spatial, sp, sc,
                                       a_.across_spatial, a_.eps);
    });
  }
  double flops(const mn_tensor* in, int, const mn_tensor*, int) const override {
    return 3.0 * static_cast<double>(TensorRef{&in[0]}.elements());
  }

 private:
  NormalizeAttrs a_;
};

class CaffeOpsBackend : public Backend {
 public:
  const char* name() const override { return "caffe_ops"; }
  Bid bid(const Node& n) const override {
    if (n.domain() != "caffe" || n.op() != "Normalize") return Bid::no("runs only caffe::Normalize");
    check_normalize(n);
    return Bid::yes(std::max<double>(1.0, 3.0 * static_cast<double>(n.input(0).elements())), "reference kernel");
  }
  std::unique_ptr<Kernel> prepare(const Node& n) const override {
    return std::make_unique<NormalizeKernel>(check_normalize(n));
  }
};

mn_status normalize_shape(void*, const mn_node* node, const mn_shape_ctx* ctx, mn_error* err) {
  return guarded(err, [&] {
    Node n(node);
    check_normalize(n);
    if (n.input(0).rank() < 0) {
      if (ctx->set_output(ctx->host, 0, MN_F32, -1, nullptr) != MN_OK) throw PluginError("cannot set the output");
      return MN_OK;
    }
    set_output(ctx, 0, MN_F32, n.input(0).shape());
    return MN_OK;
  });
}

mn_status register_ops(const mn_host_api*, const mn_registrar* reg, mn_error* err) {
  return guarded(err, [&] {
    static mn_backend backend;
    export_backend(std::make_unique<CaffeOpsBackend>(), &backend);
    if (reg->add_backend(reg->host, &backend) != MN_OK) throw PluginError("cannot register backend caffe_ops");
    mn_op_def def{};
    def.struct_size = sizeof def;
    def.domain = "caffe";
    def.name = "Normalize";
    def.since_version = 1;
    def.max_version = 1;
    def.infer_shapes = normalize_shape;
    if (reg->add_op(reg->host, &def) != MN_OK) throw PluginError("cannot register op caffe::Normalize");
    return MN_OK;
  });
}

}  // namespace

MINNOW_DEFINE_PLUGIN("ops_caffe", "0.1.0", "Caffe-only ops: caffe::Normalize (SSD)", register_ops)
