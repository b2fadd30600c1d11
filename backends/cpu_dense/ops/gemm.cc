// Gemm: Y = alpha * A' * B' + beta * C, A' = transA ? A^T : A, B' likewise; C (optional
// since opset 11) broadcasts unidirectionally to (M, N).
//
// With a constant B (weights) and C absent or a constant row/scalar (bias), B' is packed
// at prepare time with alpha folded in, beta * C becomes the packed column bias, and the
// run is the SIMD packed GEMM (gemm_packed.h); or, for an A of a few rows and B given
// transposed (a Linear / fc layer at batch 1), dot products with B read in place (see
// try_pack). Otherwise the reference rows below.
#include "../broadcast.h"
#include "../gemm_packed.h"
#include "../gemm_ref.h"
#include "../ops.h"

namespace minnow {
namespace cpu_dense {

namespace {

struct GemmShape {
  int64_t M, N, K;
};

class GemmKernel final : public OpKernel {
 public:
  explicit GemmKernel(const Node& node)
      : OpKernel(node, "f32_gemm_ref"),
        alpha_(node.attr_float("alpha", 1.0f)),
        beta_(node.attr_float("beta", 1.0f)),
        trans_a_(node.attr_int("transA", 0) != 0),
        trans_b_(node.attr_int("transB", 0) != 0) {}

  const char* name() const override {
    switch (mode_) {
      case Mode::kPacked: return "f32_gemm_6x2v_packed";
      case Mode::kDots: return "f32_gemv_8x1v__wrows";
      default: return OpKernel::name();
    }
  }

  // A following Relu / Clip, clamped in the packed GEMM's or the dot tiles' epilogue (the reference rows for
  // weights computed at run time decline).
  bool fuse_clamp(float lo, float hi) override {
    if (mode_ == Mode::kRef) return false;
    lo_ = lo;
    hi_ = hi;
    return true;
  }

  void try_pack(const Node& node) {
    const mn_tensor& b = *node.input(1).t;
    if (!node.input(1).is_constant() || !b.data || b.rank != 2 || b.dims[0] < 0 || b.dims[1] < 0)
      return;
    const int64_t K = trans_b_ ? b.dims[1] : b.dims[0], N = trans_b_ ? b.dims[0] : b.dims[1];
    std::vector<float> bias;
    if (node.has_input(2) && beta_ != 0.0f) {
      const mn_tensor& c = *node.input(2).t;
      if (!node.input(2).is_constant() || !c.data || c.rank > 2) return;
      // Only C that is the same for every row: [], [1], [N], [1, 1], [1, N].
      for (int i = 0; i + 1 < c.rank; ++i)
        if (c.dims[i] != 1) return;
      const int64_t cn = c.rank == 0 ? 1 : c.dims[c.rank - 1];
      if (cn != 1 && cn != N) return;
      const float* cv = static_cast<const float*>(c.data);
      bias.resize(size_t(N));
      for (int64_t j = 0; j < N; ++j) bias[size_t(j)] = cv[cn == 1 ? 0 : j];
    }
    // An A of at most kDotMaxA rows known now (batch-1 inference), B given transposed (N x
    // K: each output's K weights contiguous, as a Linear layer is exported) and alpha 1:
    // each output is a dot product of an A row with a row of B, B read in place, eight
    // outputs a tile (gemm_dot_tile). Packing copied B into fresh memory for a product
    // that reads each weight once either way (resnet50's fc: 8 MB more at prepare and in
    // the model's peak, mobilenet_v2's 5 MB).
    const mn_tensor& a = *node.input(0).t;
    if (trans_b_ && !trans_a_ && alpha_ == 1.0f && a.rank == 2 && a.dims[0] >= 1 && a.dims[0] <= kDotMaxA) {
      mode_ = Mode::kDots;
      dot_K_ = K;
      dot_N_ = N;
      dot_bias_ = std::move(bias);
      for (float& v : dot_bias_) v *= beta_;
      return;
    }
    packed_ = kernels::pack_b(static_cast<const float*>(b.data), K, N, trans_b_ ? 1 : N,
                              trans_b_ ? K : 1, alpha_, bias.empty() ? nullptr : bias.data(),
                              beta_);
    mode_ = Mode::kPacked;
  }

  GemmShape shape(const mn_tensor* in) const {
    if (in[0].rank != 2 || in[1].rank != 2)
      fail("A and B must be 2-D, got " + shape_str(in[0]) + " and " + shape_str(in[1]));
    GemmShape s;
    s.M = trans_a_ ? in[0].dims[1] : in[0].dims[0];
    s.K = trans_a_ ? in[0].dims[0] : in[0].dims[1];
    int64_t kb = trans_b_ ? in[1].dims[1] : in[1].dims[0];
    s.N = trans_b_ ? in[1].dims[0] : in[1].dims[1];
    if (kb != s.K)
      fail("inner dims differ: A " + shape_str(in[0]) + (trans_a_ ? " (transposed)" : "") + ", B " +
           shape_str(in[1]) + (trans_b_ ? " (transposed)" : ""));
    return s;
  }

  double flops(const mn_tensor* in, int, const mn_tensor*, int) const override {
    GemmShape s = shape(in);
    return 2.0 * s.M * s.N * s.K;
  }

  void run(const RunContext& ctx, const mn_tensor* in, int num_inputs, mn_tensor* out,
           int num_outputs) const override {
    if (num_inputs < 2) fail("inputs missing at run time");
    check_dtype(in[0], MN_F32, "A");
    check_dtype(in[1], MN_F32, "B");
    const GemmShape s = shape(in);
    Dims od;
    od.rank = 2;
    od.d[0] = s.M;
    od.d[1] = s.N;
    check_output(out, num_outputs, 0, MN_F32, od);
    if (mode_ == Mode::kDots) {
      if (s.K != dot_K_ || s.N != dot_N_) fail("B changed shape after prepare");
      run_dots(ctx, s, static_cast<const float*>(in[0].data), static_cast<const float*>(in[1].data),
               static_cast<float*>(out[0].data));
      return;
    }
    if (mode_ == Mode::kPacked) {
      if (s.K != packed_.K || s.N != packed_.N) fail("B changed shape after packing");
      run_packed_b(ctx.raw(), packed_, s.M, static_cast<const float*>(in[0].data),
                   trans_a_ ? 1 : s.K, trans_a_ ? s.M : 1, static_cast<float*>(out[0].data), s.N,
                   0.0f, lo_, hi_);
      return;
    }

    // C(i,j) = c[i*c_rs + j*c_cs]; a broadcast dim has stride 0.
    const float* c = nullptr;
    int64_t c_rs = 0, c_cs = 0;
    if (num_inputs > 2 && present(in[2]) && beta_ != 0.0f) {
      check_dtype(in[2], MN_F32, "C");
      Dims cd = Dims::of(in[2]);
      if (!broadcasts_to(cd, od))
        fail("C " + shape_str(in[2]) + " does not broadcast to " + od.str());
      int64_t st[2];
      broadcast_strides(cd, od, st);
      c = static_cast<const float*>(in[2].data);
      c_rs = st[0];
      c_cs = st[1];
    }

    const float* a = static_cast<const float*>(in[0].data);
    const float* b = static_cast<const float*>(in[1].data);
    float* y = static_cast<float*>(out[0].data);
    const int64_t a_rs = trans_a_ ? 1 : s.K, a_cs = trans_a_ ? s.M : 1;
    const int64_t b_rs = trans_b_ ? 1 : s.N, b_cs = trans_b_ ? s.K : 1;
    const int64_t N = s.N, K = s.K;
    const float alpha = alpha_, beta = beta_;
    auto body = [&](size_t i0, size_t i1) {
      for (size_t i = i0; i < i1; ++i) {
        float* yr = y + i * N;
        if (c) {
          const float* cr = c + i * c_rs;
          for (int64_t j = 0; j < N; ++j) yr[j] = beta * cr[j * c_cs];
        } else {
          for (int64_t j = 0; j < N; ++j) yr[j] = 0.0f;
        }
      }
      gemm_rows_ref(i0, i1, N, K, alpha, a, a_rs, a_cs, b, b_rs, b_cs, y, N);
    };
    ctx.parallel_for(static_cast<size_t>(s.M), grain_for(2.0 * N * K + N), std::move(body));
  }

 private:
  static constexpr int64_t kDotMaxA = 4;  // more rows: packed (each A row re-reads all of B)

  // Y[i, j] = A[i, :] . B[j, :] + bias[j], clamped: tiles of kDotMaxRows outputs (rows of
  // B) over the threads, every A row in each (B's tile stays in L1 for the next row).
  void run_dots(const RunContext& ctx, const GemmShape& s, const float* a, const float* b, float* y) const {
    const int64_t tiles = (s.N + kernels::kDotMaxRows - 1) / kernels::kDotMaxRows;
    const float* bias = dot_bias_.empty() ? nullptr : dot_bias_.data();
    const float lo = lo_, hi = hi_;
    auto body = [&](size_t t0, size_t t1) {
      kernels::DotTile dt;
      dt.K = s.K;
      dt.a_rs = s.K;
      dt.ldbt = s.K;
      dt.ldc = 1;
      dt.cols = 1;
      kernels::Epilogue e;
      e.bias_per_row = true;
      e.lo = lo;
      e.hi = hi;
      for (size_t t = t0; t < t1; ++t) {
        const int64_t j0 = int64_t(t) * kernels::kDotMaxRows;
        dt.rows = static_cast<int>(std::min<int64_t>(kernels::kDotMaxRows, s.N - j0));
        dt.a = b + j0 * s.K;  // the tile's rows of B are its "A" rows
        e.bias = bias ? bias + j0 : nullptr;
        for (int64_t i = 0; i < s.M; ++i) {
          dt.bt = a + i * s.K;
          dt.c = y + i * s.N + j0;
          kernels::gemm_dot_tile(dt, e);
        }
      }
    };
    ctx.parallel_for(size_t(tiles), grain_for(2.0 * double(kernels::kDotMaxRows * s.K * s.M)), std::move(body));
  }

  float alpha_, beta_;
  bool trans_a_, trans_b_;
  // kRef: B computed at run time (or C not a row); kPacked: B packed at prepare;
  // kDots: B read in place by dot tiles (try_pack).
  enum class Mode { kRef, kPacked, kDots } mode_ = Mode::kRef;
  int64_t dot_K_ = 0, dot_N_ = 0;
  std::vector<float> dot_bias_;  // beta * C, or empty
  kernels::PackedB packed_;
  float lo_ = -std::numeric_limits<float>::infinity();
  float hi_ = std::numeric_limits<float>::infinity();
};

}  // namespace

double gemm_bid(const Node& node) {
  require_inputs(node, 2, 3);
  require_input_dtype(node, 0, {MN_F32});
  require_input_dtype(node, 1, {MN_F32});
  if (node.has_input(2)) require_input_dtype(node, 2, {MN_F32});
  const mn_tensor& a = *node.input(0).t;
  const mn_tensor& b = *node.input(1).t;
  if ((rank_known(a) && a.rank != 2) || (rank_known(b) && b.rank != 2))
    node.fail("A and B must be 2-D, got " + shape_str(a) + " and " + shape_str(b));
  const bool ta = node.attr_int("transA", 0) != 0, tb = node.attr_int("transB", 0) != 0;
  const int ka = ta ? 0 : 1, kb = tb ? 1 : 0;
  if (dim_known(a, ka) && dim_known(b, kb) && a.dims[ka] != b.dims[kb])
    node.fail("inner dims differ: A " + shape_str(a) + ", B " + shape_str(b));
  if (node.has_input(2)) {
    const mn_tensor& c = *node.input(2).t;
    if (rank_known(c) && c.rank > 2) node.fail("C must have rank <= 2, got " + shape_str(c));
  }
  return 2.0 * dim_estimate(a, ta ? 1 : 0) * dim_estimate(b, tb ? 0 : 1) * dim_estimate(a, ka);
}

std::unique_ptr<Kernel> gemm_make(const Node& node) {
  gemm_bid(node);
  auto k = std::make_unique<GemmKernel>(node);
  k->try_pack(node);
  return k;
}

}  // namespace cpu_dense
}  // namespace minnow
