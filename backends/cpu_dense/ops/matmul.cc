// MatMul: numpy.matmul. A 1-D operand is a row (A) or column (B) vector whose extra dim is
// dropped from the result; leading (batch) dims broadcast.
//
// A constant 2-D B (a Linear layer's weights) is packed at prepare time; all of A's rows
// (batch dims flattened) then run through the SIMD packed GEMM (gemm_packed.h).
#include "../broadcast.h"
#include "../gemm_packed.h"
#include "../gemm_ref.h"
#include "../ops.h"

namespace minnow {
namespace cpu_dense {

namespace {

struct MatMulShape {
  int64_t M, N, K;
  Dims batch_a, batch_b, batch;  // batch dims of A, B and their broadcast
  Dims out;
};

class MatMulKernel final : public OpKernel {
 public:
  explicit MatMulKernel(const Node& node) : OpKernel(node, "f32_matmul_ref") {}

  const char* name() const override { return fast_ ? "f32_gemm_6x2v_packed" : OpKernel::name(); }

  void try_pack(const Node& node) {
    const mn_tensor& b = *node.input(1).t;
    if (!node.input(1).is_constant() || !b.data || b.rank != 2 || b.dims[0] < 0 || b.dims[1] < 0)
      return;
    packed_ = kernels::pack_b(static_cast<const float*>(b.data), b.dims[0], b.dims[1], b.dims[1],
                              1, 1.0f, nullptr);
    fast_ = true;
  }

  MatMulShape shape(const mn_tensor* in) const {
    const Dims a = Dims::of(in[0]), b = Dims::of(in[1]);
    if (a.rank < 1 || b.rank < 1)
      fail("operands must have rank >= 1, got " + shape_str(in[0]) + " and " + shape_str(in[1]));
    MatMulShape s;
    s.M = a.rank == 1 ? 1 : a[a.rank - 2];
    s.K = a[a.rank - 1];
    const int64_t kb = b.rank == 1 ? b[0] : b[b.rank - 2];
    s.N = b.rank == 1 ? 1 : b[b.rank - 1];
    if (kb != s.K) fail("inner dims differ: A " + shape_str(in[0]) + ", B " + shape_str(in[1]));
    s.batch_a.rank = std::max(0, a.rank - 2);
    for (int i = 0; i < s.batch_a.rank; ++i) s.batch_a[i] = a[i];
    s.batch_b.rank = std::max(0, b.rank - 2);
    for (int i = 0; i < s.batch_b.rank; ++i) s.batch_b[i] = b[i];
    if (!broadcast_dims(s.batch_a, s.batch_b, &s.batch))
      fail("batch dims of " + shape_str(in[0]) + " and " + shape_str(in[1]) +
           " are not broadcastable");
    s.out = s.batch;
    if (a.rank > 1) s.out[s.out.rank++] = s.M;
    if (b.rank > 1) s.out[s.out.rank++] = s.N;
    return s;
  }

  double flops(const mn_tensor* in, int, const mn_tensor*, int) const override {
    MatMulShape s = shape(in);
    return 2.0 * s.batch.numel() * s.M * s.N * s.K;
  }

  void run(const RunContext& ctx, const mn_tensor* in, int num_inputs, mn_tensor* out,
           int num_outputs) const override {
    if (num_inputs < 2) fail("inputs missing at run time");
    check_dtype(in[0], MN_F32, "A");
    check_dtype(in[1], MN_F32, "B");
    const MatMulShape s = shape(in);
    check_output(out, num_outputs, 0, MN_F32, s.out);
    if (fast_ && in[1].rank == 2) {
      if (s.K != packed_.K || s.N != packed_.N) fail("B changed shape after packing");
      // B is not batched: A's rows (all batches) form one [rows, K] matrix, Y [rows, N].
      run_packed_b(ctx.raw(), packed_, s.batch.numel() * s.M, static_cast<const float*>(in[0].data),
                   s.K, 1, static_cast<float*>(out[0].data), s.N, 0.0f);
      return;
    }

    // Per output batch dim, how far A and B move (in elements); 0 where broadcast.
    const int br = s.batch.rank;
    int64_t sa[MN_MAX_RANK], sb[MN_MAX_RANK];
    broadcast_strides(s.batch_a, s.batch, sa);
    broadcast_strides(s.batch_b, s.batch, sb);
    for (int i = 0; i < br; ++i) {
      sa[i] *= s.M * s.K;
      sb[i] *= s.K * s.N;
    }
    const float* a = static_cast<const float*>(in[0].data);
    const float* b = static_cast<const float*>(in[1].data);
    float* y = static_cast<float*>(out[0].data);
    const int64_t M = s.M, N = s.N, K = s.K;
    const int64_t rows = s.batch.numel() * M;
    const Dims batch = s.batch;
    // One work item is one row of the output (over all batches), so a single big matrix
    // and many small ones both split well.
    auto body = [&](size_t r0, size_t r1) {
      int64_t r = static_cast<int64_t>(r0);
      while (r < static_cast<int64_t>(r1)) {
        const int64_t bi = r / M, i0 = r % M;
        const int64_t i1 = std::min<int64_t>(M, i0 + (static_cast<int64_t>(r1) - r));
        int64_t oa = 0, ob = 0, rem = bi;
        for (int d = br - 1; d >= 0; --d) {
          const int64_t idx = rem % batch[d];
          rem /= batch[d];
          oa += idx * sa[d];
          ob += idx * sb[d];
        }
        float* yb = y + bi * M * N;
        for (int64_t i = i0; i < i1; ++i)
          for (int64_t j = 0; j < N; ++j) yb[i * N + j] = 0.0f;
        gemm_rows_ref(i0, i1, N, K, 1.0f, a + oa, K, 1, b + ob, N, 1, yb, N);
        r += i1 - i0;
      }
    };
    ctx.parallel_for(static_cast<size_t>(rows), grain_for(2.0 * N * K + N), std::move(body));
  }

 private:
  bool fast_ = false;
  kernels::PackedB packed_;
};

}  // namespace

double matmul_bid(const Node& node) {
  require_inputs(node, 2, 2);
  require_input_dtype(node, 0, {MN_F32});
  require_input_dtype(node, 1, {MN_F32});
  const mn_tensor& a = *node.input(0).t;
  const mn_tensor& b = *node.input(1).t;
  if ((rank_known(a) && a.rank < 1) || (rank_known(b) && b.rank < 1))
    node.fail("operands must have rank >= 1, got " + shape_str(a) + " and " + shape_str(b));
  if (rank_known(a) && rank_known(b)) {
    const int ka = a.rank - 1, kb = b.rank == 1 ? 0 : b.rank - 2;
    if (dim_known(a, ka) && dim_known(b, kb) && a.dims[ka] != b.dims[kb])
      node.fail("inner dims differ: A " + shape_str(a) + ", B " + shape_str(b));
  }
  // flops = 2 * (output elements) * K
  return 2.0 * numel_estimate(*node.output(0).t) *
         (rank_known(a) ? dim_estimate(a, a.rank - 1) : 1.0);
}

std::unique_ptr<Kernel> matmul_make(const Node& node) {
  matmul_bid(node);
  auto k = std::make_unique<MatMulKernel>(node);
  k->try_pack(node);
  return k;
}

}  // namespace cpu_dense
}  // namespace minnow
