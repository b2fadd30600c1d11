// Fully connected layers with constant, sparse weights: Gemm (transA = 0, B constant,
// optional C) and MatMul with a constant 2-D B. Both become Y[M, N] = X[M, K] * W^T with
// W[N, K] packed sparse (Gemm's alpha folded into it), computed by the rows-form kernels.
#include "ops.h"

#include <algorithm>

namespace minnow {
namespace cpu_sparse {

namespace {

// The weight matrix of a node as the kernels see it.
struct FcWeights {
  const float* data;
  int64_t n, k;     // W is [n, k]
  bool transposed;  // stored as [k, n]
  float alpha;
};

// Validates the node for this backend (throws PluginError with the reason to decline).
FcWeights fc_weights(const Node& node) {
  const bool gemm = node.op() == "Gemm";
  if (node.num_inputs() < 2 || node.num_inputs() > (gemm ? 3 : 2))
    node.fail("expects " + std::string(gemm ? "2 or 3" : "2") + " inputs, got " +
              std::to_string(node.num_inputs()));
  const mn_tensor& a = *node.input(0).t;
  const mn_tensor& b = *node.input(1).t;
  if (a.dtype != MN_F32 || b.dtype != MN_F32) node.fail("only float32 is implemented", MN_ERR_UNSUPPORTED);
  if (!b.is_constant || !b.data) node.fail("weights are not a constant", MN_ERR_UNSUPPORTED);
  if (b.rank != 2) node.fail("weights must be 2-D, got " + shape_str(b), MN_ERR_UNSUPPORTED);
  FcWeights w{static_cast<const float*>(b.data), 0, 0, false, 1.0f};
  if (gemm) {
    if (node.attr_int("transA", 0) != 0) node.fail("transA = 1 is not implemented", MN_ERR_UNSUPPORTED);
    if (a.rank >= 0 && a.rank != 2) node.fail("A must be 2-D, got " + shape_str(a));
    if (node.has_input(2) && node.input(2).dtype() != MN_F32) node.fail("C must be float32", MN_ERR_UNSUPPORTED);
    const bool tb = node.attr_int("transB", 0) != 0;
    w.transposed = !tb;
    w.n = tb ? b.dims[0] : b.dims[1];
    w.k = tb ? b.dims[1] : b.dims[0];
    w.alpha = node.attr_float("alpha", 1.0f);
  } else {
    if (a.rank == 0) node.fail("A must have rank >= 1");
    w.transposed = true;
    w.n = b.dims[1];
    w.k = b.dims[0];
  }
  if (a.rank > 0 && a.dims[a.rank - 1] >= 0 && a.dims[a.rank - 1] != w.k)
    node.fail("inner dims differ: A " + shape_str(a) + ", weights " + shape_str(b));
  if (w.n <= 0 || w.k <= 0) node.fail("empty weights " + shape_str(b), MN_ERR_UNSUPPORTED);
  return w;
}

class FcKernel final : public SparseKernel {
 public:
  FcKernel(const Node& node, const FcWeights& fw, const LayoutChoice& lc)
      : SparseKernel(node, kernel_name(Kind::kFc, lc.shape)),
        gemm_(node.op() == "Gemm"),
        beta_(node.attr_float("beta", 1.0f)),
        w_(fw.transposed ? pack_transposed(fw.data, fw.n, fw.k, fw.n, lc.shape, fw.alpha)
                         : pack(fw.data, fw.n, fw.k, fw.k, lc.shape, fw.alpha)) {
    add_rows_layout(&w_, rows_tile_width());  // batch 1: row panels or tiles (sparse_matrix.h)
    if (w_.tiled) set_name(tiled_fc_kernel_name(w_));
  }

  double flops(const mn_tensor* in, int, const mn_tensor*, int) const override {
    return 2.0 * static_cast<double>(rows_of(in[0])) * static_cast<double>(w_.values.size());
  }

  void run(const RunContext& ctx, const mn_tensor* in, int num_inputs, mn_tensor* out,
           int num_outputs) const override {
    if (num_inputs < 1 || num_outputs < 1) fail("inputs or outputs missing at run time");
    const mn_tensor& a = in[0];
    if (a.dtype != MN_F32) fail("A must be float32");
    if (a.rank < 1 || a.dims[a.rank - 1] != w_.cols)
      fail("A " + shape_str(a) + " does not have " + std::to_string(w_.cols) + " columns");
    if (gemm_ && a.rank != 2) fail("A must be 2-D, got " + shape_str(a));
    const int64_t M = rows_of(a), N = w_.rows;
    const mn_tensor& y = out[0];
    int64_t ynum = 1;
    for (int i = 0; i < y.rank; ++i) ynum *= y.dims[i];
    if (y.dtype != MN_F32 || y.rank < 1 || y.dims[y.rank - 1] != N || ynum != M * N)
      fail("output " + shape_str(y) + " should hold " + std::to_string(M) + "x" + std::to_string(N) +
           " float32 values");
    float* yp = static_cast<float*>(y.data);

    RowsArgs args{static_cast<const float*>(a.data), w_.cols, 0, M, nullptr, 0.0f, yp, N};
    clamp_into(&args);
    if (gemm_ && num_inputs > 2 && in[2].dtype != MN_UNDEFINED && beta_ != 0.0f)
      apply_c(in[2], M, N, yp, &args);
    const SparseMatrix& w = w_;
    ctx.parallel_for(static_cast<size_t>(rows_units(w)), rows_unit_grain(w, double(M)),
                     [&](size_t b0, size_t b1) {
                       rows(w, args, static_cast<int64_t>(b0), static_cast<int64_t>(b1));
                     });
  }

 private:
  static int64_t rows_of(const mn_tensor& a) {
    int64_t m = 1;
    for (int i = 0; i + 1 < a.rank; ++i) m *= a.dims[i];
    return m;
  }

  // Gemm's beta * C: a per-column C with beta 1 is the kernel's bias; anything else that
  // broadcasts to [M, N] is written into Y first and accumulated onto (beta = 1).
  void apply_c(const mn_tensor& c, int64_t M, int64_t N, float* y, RowsArgs* args) const {
    if (c.dtype != MN_F32) fail("C must be float32");
    const float* cp = static_cast<const float*>(c.data);
    int64_t cm = 1, cn = 1;
    if (c.rank == 1) {
      cn = c.dims[0];
    } else if (c.rank == 2) {
      cm = c.dims[0];
      cn = c.dims[1];
    } else if (c.rank != 0) {
      fail("C " + shape_str(c) + " must have rank <= 2");
    }
    if ((cm != 1 && cm != M) || (cn != 1 && cn != N))
      fail("C " + shape_str(c) + " does not broadcast to [" + std::to_string(M) + "," +
           std::to_string(N) + "]");
    if (cm == 1 && cn == N && beta_ == 1.0f) {
      args->bias = cp;
      return;
    }
    const int64_t rs = cm == 1 ? 0 : cn, cs = cn == 1 ? 0 : 1;
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) y[i * N + j] = beta_ * cp[i * rs + j * cs];
    args->beta = 1.0f;
  }

  bool gemm_;
  float beta_;
  SparseMatrix w_;
};

}  // namespace

BidResult fc_bid(const Node& node) {
  const FcWeights w = fc_weights(node);
  const LayoutChoice lc = choose_layout(Kind::kFc, w.data, w.n, w.k, w.transposed);
  if (!lc.ok) throw PluginError(lc.reason, MN_ERR_UNSUPPORTED);
  const mn_tensor& a = *node.input(0).t;
  double m = 1;  // unknown (batch) dims count as 1, as cpu_dense estimates them
  for (int i = 0; i + 1 < a.rank; ++i) m *= a.dims[i] < 0 ? 1.0 : static_cast<double>(a.dims[i]);
  const double dense_flops = 2.0 * m * static_cast<double>(w.n) * static_cast<double>(w.k);
  return {std::max(1.0, dense_flops * kDenseNsPerFlop * lc.ratio), lc.reason};
}

std::unique_ptr<Kernel> fc_make(const Node& node) {
  const FcWeights w = fc_weights(node);
  const LayoutChoice lc = choose_layout(Kind::kFc, w.data, w.n, w.k, w.transposed);
  if (!lc.ok) throw PluginError(node_label(node) + ": " + lc.reason, MN_ERR_UNSUPPORTED);
  return std::make_unique<FcKernel>(node, w, lc);
}

}  // namespace cpu_sparse
}  // namespace minnow
