// Gemm and MatMul against the textbook definitions (double accumulation).
#include <doctest/doctest.h>

#include "test_util.h"

using namespace cdt;

namespace {

// Y = alpha * op(A) op(B) + beta * C, C given with its own shape (right-aligned broadcast).
std::vector<double> naive_gemm(const Tensor& a, const Tensor& b, const Tensor* c, bool ta, bool tb,
                               float alpha, float beta) {
  const int64_t M = ta ? a.shape[1] : a.shape[0], K = ta ? a.shape[0] : a.shape[1];
  const int64_t N = tb ? b.shape[0] : b.shape[1];
  std::vector<double> y(static_cast<size_t>(M * N));
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double s = 0;
      for (int64_t k = 0; k < K; ++k) {
        double av = ta ? a.f()[k * M + i] : a.f()[i * K + k];
        double bv = tb ? b.f()[j * K + k] : b.f()[k * N + j];
        s += av * bv;
      }
      double cv = 0;
      if (c) {
        // C's dims right-aligned against (M, N); a dim of 1 (or missing) repeats.
        const auto& cs = c->shape;
        int64_t ci = 0, cj = 0, cn = 1;
        if (cs.size() == 2) {
          ci = cs[0] == 1 ? 0 : i;
          cj = cs[1] == 1 ? 0 : j;
          cn = cs[1];
        } else if (cs.size() == 1) {
          cj = cs[0] == 1 ? 0 : j;
        }
        cv = c->f()[ci * cn + cj];
      }
      y[static_cast<size_t>(i * N + j)] = alpha * s + beta * cv;
    }
  return y;
}

// numpy.matmul, written from its definition: promote 1-D operands, broadcast batch dims.
std::vector<double> naive_matmul(const Tensor& a, const Tensor& b,
                                 std::vector<int64_t>* out_shape) {
  std::vector<int64_t> as = a.shape, bs = b.shape;
  if (as.size() == 1) as.insert(as.begin(), 1);
  if (bs.size() == 1) bs.push_back(1);
  const int64_t M = as[as.size() - 2], K = as.back(), N = bs.back();
  std::vector<int64_t> ab(as.begin(), as.end() - 2), bb(bs.begin(), bs.end() - 2);
  const size_t r = std::max(ab.size(), bb.size());
  while (ab.size() < r) ab.insert(ab.begin(), 1);
  while (bb.size() < r) bb.insert(bb.begin(), 1);
  std::vector<int64_t> ob(r);
  for (size_t i = 0; i < r; ++i) ob[i] = std::max(ab[i], bb[i]);
  *out_shape = ob;
  if (a.shape.size() > 1) out_shape->push_back(M);
  if (b.shape.size() > 1) out_shape->push_back(N);
  const int64_t nb = product(ob);
  std::vector<double> y(static_cast<size_t>(nb * M * N));
  for (int64_t bi = 0; bi < nb; ++bi) {
    // batch index -> offsets in A and B (a dim of 1 repeats)
    int64_t rem = bi, ia = 0, ib = 0, sa = 1, sbb = 1;
    for (size_t d = r; d-- > 0;) {
      int64_t idx = rem % ob[d];
      rem /= ob[d];
      ia += (ab[d] == 1 ? 0 : idx) * sa;
      ib += (bb[d] == 1 ? 0 : idx) * sbb;
      sa *= ab[d];
      sbb *= bb[d];
    }
    const float* pa = a.f() + ia * M * K;
    const float* pb = b.f() + ib * K * N;
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        double s = 0;
        for (int64_t k = 0; k < K; ++k) s += double(pa[i * K + k]) * pb[k * N + j];
        y[static_cast<size_t>((bi * M + i) * N + j)] = s;
      }
  }
  return y;
}

}  // namespace

TEST_SUITE("gemm") {
  TEST_CASE("Gemm known answers") {
    Tensor a = Tensor::f32({2, 2}, {1, 2, 3, 4});
    Tensor b = Tensor::f32({2, 2}, {5, 6, 7, 8});
    {
      std::vector<Tensor> in{a, b}, out{Tensor::out({2, 2})};
      RunResult r = run(FakeNode("Gemm", 13), in, out);
      REQUIRE_MESSAGE(r.ok(), r.error);
      CHECK(r.kernel_name == "f32_gemm_ref");
      CDT_CHECK_CLOSE(out[0].f(), std::vector<float>({19, 22, 43, 50}));
    }
    {  // alpha, beta, C broadcast along rows
      std::vector<Tensor> in{a, b, Tensor::f32({2}, {1, -1})}, out{Tensor::out({2, 2})};
      RunResult r = run(FakeNode("Gemm", 13).set("alpha", 2.0f).set("beta", 0.5f), in, out);
      REQUIRE_MESSAGE(r.ok(), r.error);
      CDT_CHECK_CLOSE(out[0].f(), std::vector<float>({38.5f, 43.5f, 86.5f, 99.5f}));
    }
    {  // transA: A^T = [[1,3],[2,4]]
      std::vector<Tensor> in{a, b}, out{Tensor::out({2, 2})};
      RunResult r = run(FakeNode("Gemm", 13).set("transA", 1), in, out);
      REQUIRE_MESSAGE(r.ok(), r.error);
      CDT_CHECK_CLOSE(out[0].f(), std::vector<float>({26, 30, 38, 44}));
    }
    {  // transB: B^T = [[5,7],[6,8]]; C (2,1) broadcast along columns
      std::vector<Tensor> in{a, b, Tensor::f32({2, 1}, {10, 20})}, out{Tensor::out({2, 2})};
      RunResult r = run(FakeNode("Gemm", 13).set("transB", 1), in, out);
      REQUIRE_MESSAGE(r.ok(), r.error);
      CDT_CHECK_CLOSE(out[0].f(), std::vector<float>({27, 33, 59, 73}));
    }
  }

  TEST_CASE("Gemm matches the definition over shapes, transposes and C broadcasts") {
    std::mt19937 rng(1234);
    const int64_t sizes[][3] = {{1, 1, 1},    {1, 7, 3},   {5, 1, 9},  {3, 4, 1},
                                {17, 13, 11}, {2, 33, 64}, {31, 3, 5}, {8, 8, 0},
                                {1, 19, 100}, {4, 9, 37}, {5, 17, 40}};
    int n = 0;
    for (const auto& s : sizes)
      for (int ta = 0; ta < 2; ++ta)
        for (int tb = 0; tb < 2; ++tb)
          for (int cform = 0; cform < 7; ++cform) {
            const int64_t M = s[0], N = s[1], K = s[2];
            Tensor a =
                random_f32(rng, ta ? std::vector<int64_t>{K, M} : std::vector<int64_t>{M, K});
            Tensor b =
                random_f32(rng, tb ? std::vector<int64_t>{N, K} : std::vector<int64_t>{K, N});
            std::vector<int64_t> cs[] = {{}, {}, {N}, {1, N}, {M, 1}, {M, N}, {1, 1}};
            const bool has_c = cform != 0;
            Tensor c = random_f32(rng, cs[cform]);
            const float alpha = cform % 2 ? 1.0f : 0.75f, beta = cform % 3 ? 1.0f : -1.5f;
            std::vector<Tensor> in{a, b};
            if (has_c) in.push_back(c);
            std::vector<Tensor> out{Tensor::out({M, N})};
            FakeNode node("Gemm", 11);
            node.set("transA", ta).set("transB", tb).set("alpha", alpha).set("beta", beta);
            const Ctx ctx = kAllCtx[n++ % 3];
            CAPTURE(M);
            CAPTURE(N);
            CAPTURE(K);
            CAPTURE(ta);
            CAPTURE(tb);
            CAPTURE(cform);
            CAPTURE(ctx_name(ctx));
            const std::vector<double> want =
                naive_gemm(a, b, has_c ? &c : nullptr, ta, tb, alpha, beta);
            RunResult r = run(node, in, out, ctx);
            REQUIRE_MESSAGE(r.ok(), r.error);
            CHECK(r.kernel_name == "f32_gemm_ref");
            CDT_CHECK_CLOSE(out[0].f(), want);
            // Constant B and C: packed at prepare time (C of one row: the packed bias).
            in[1].as_constant();
            if (has_c) in[2].as_constant();
            std::vector<Tensor> out2{Tensor::out({M, N})};
            r = run(node, in, out2, ctx);
            REQUIRE_MESSAGE(r.ok(), r.error);
            // Up to 4 rows of A with B transposed and alpha 1: dot products, B in place.
            const bool row_c = (cform != 4 && cform != 5) || M == 1;
            const bool dots = tb && !ta && alpha == 1.0f && M <= 4;
            CHECK(r.kernel_name == std::string(!(row_c || beta == 0) ? "f32_gemm_ref"
                                               : dots              ? "f32_gemv_8x1v__wrows"
                                                                   : "f32_gemm_6x2v_packed"));
            CDT_CHECK_CLOSE(out2[0].f(), want);
          }
  }

  TEST_CASE("Gemm splits rows across chunks") {
    std::mt19937 rng(7);
    for (Ctx ctx : kAllCtx) {
      Tensor a = random_f32(rng, {67, 50}), b = random_f32(rng, {50, 45}),
             c = random_f32(rng, {45});
      std::vector<Tensor> in{a, b, c}, out{Tensor::out({67, 45})};
      RunResult r = run(FakeNode("Gemm", 13), in, out, ctx);
      REQUIRE_MESSAGE(r.ok(), r.error);
      if (ctx == Ctx::kChunky) CHECK(r.chunks > 1);
      CDT_CHECK_CLOSE(out[0].f(), naive_gemm(a, b, &c, false, false, 1, 1));
    }
  }

  TEST_CASE("Gemm refuses what it cannot do, and fails cleanly on bad shapes") {
    std::mt19937 rng(1);
    {  // rank 3 A
      std::vector<Tensor> in{random_f32(rng, {2, 2, 2}), random_f32(rng, {2, 2})};
      std::vector<Tensor> out{Tensor::out({2, 2})};
      mn_bid b = bid(FakeNode("Gemm", 13), in, out);
      CHECK(b.cost < 0);
      CHECK(std::string(b.reason).find("2-D") != std::string::npos);
    }
    {  // inner dims differ
      std::vector<Tensor> in{random_f32(rng, {2, 3}), random_f32(rng, {4, 2})};
      std::vector<Tensor> out{Tensor::out({2, 2})};
      CHECK(bid(FakeNode("Gemm", 13), in, out).cost < 0);
    }
    {  // int64 operands
      std::vector<Tensor> in{Tensor::i64({2, 2}, {1, 2, 3, 4}), Tensor::i64({2, 2}, {1, 2, 3, 4})};
      std::vector<Tensor> out{Tensor::out({2, 2}, MN_I64)};
      mn_bid b = bid(FakeNode("Gemm", 13), in, out);
      CHECK(b.cost < 0);
      CHECK(std::string(b.reason).find("int64") != std::string::npos);
    }
    {  // C that does not broadcast: an error at run time, not a crash
      std::vector<Tensor> in{random_f32(rng, {2, 3}), random_f32(rng, {3, 4}),
                             random_f32(rng, {3})};
      std::vector<Tensor> out{Tensor::out({2, 4})};
      RunResult r = run(FakeNode("Gemm", 13), in, out);
      CHECK(r.status == MN_ERR_INVALID_ARGUMENT);
      CHECK(r.error.find("Gemm") != std::string::npos);
    }
    {  // output shape that disagrees with the inputs
      std::vector<Tensor> in{random_f32(rng, {2, 3}), random_f32(rng, {3, 4})};
      std::vector<Tensor> out{Tensor::out({2, 5})};
      RunResult r = run(FakeNode("Gemm", 13), in, out);
      CHECK(r.status == MN_ERR_INVALID_ARGUMENT);
    }
    {  // bid cost ~ 0.5 ns per flop
      std::vector<Tensor> in{random_f32(rng, {10, 20}), random_f32(rng, {20, 30})};
      std::vector<Tensor> out{Tensor::out({10, 30})};
      CHECK(bid(FakeNode("Gemm", 13), in, out).cost == doctest::Approx(0.5 * 2 * 10 * 20 * 30));
    }
  }

  TEST_CASE("MatMul known answers") {
    {  // (2,3) x (3,) -> (2,)
      std::vector<Tensor> in{Tensor::f32({2, 3}, {1, 2, 3, 4, 5, 6}), Tensor::f32({3}, {1, 0, -1})};
      std::vector<Tensor> out{Tensor::out({2})};
      RunResult r = run(FakeNode("MatMul", 13), in, out);
      REQUIRE_MESSAGE(r.ok(), r.error);
      CHECK(r.kernel_name == "f32_matmul_ref");
      CDT_CHECK_CLOSE(out[0].f(), std::vector<float>({-2, -2}));
    }
    {  // (2,) x (2,2) -> (2,)
      std::vector<Tensor> in{Tensor::f32({2}, {1, 2}), Tensor::f32({2, 2}, {1, 2, 3, 4})};
      std::vector<Tensor> out{Tensor::out({2})};
      RunResult r = run(FakeNode("MatMul", 13), in, out);
      REQUIRE_MESSAGE(r.ok(), r.error);
      CDT_CHECK_CLOSE(out[0].f(), std::vector<float>({7, 10}));
    }
    {  // batch broadcast: (2,1,2) x (2,1) -> (2,1,1)
      std::vector<Tensor> in{Tensor::f32({2, 1, 2}, {1, 2, 3, 4}), Tensor::f32({2, 1}, {10, 1})};
      std::vector<Tensor> out{Tensor::out({2, 1, 1})};
      RunResult r = run(FakeNode("MatMul", 13), in, out);
      REQUIRE_MESSAGE(r.ok(), r.error);
      CDT_CHECK_CLOSE(out[0].f(), std::vector<float>({12, 34}));
    }
  }

  TEST_CASE("MatMul matches numpy.matmul over ranks and batch broadcasts") {
    std::mt19937 rng(99);
    const std::vector<std::vector<int64_t>> cases[] = {
        {{5}, {5}},
        {{7}, {7, 3}},
        {{4, 7}, {7}},
        {{1, 1}, {1, 1}},
        {{3, 4, 5}, {5, 6}},
        {{4, 5}, {3, 5, 6}},
        {{2, 1, 3, 4}, {3, 4, 5}},
        {{1, 3, 2, 4}, {2, 1, 4, 3}},
        {{3}, {2, 3, 4}},
        {{2, 3, 4}, {4}},
        {{6, 1, 7}, {6, 7, 1}},
        {{2, 3, 17, 9}, {2, 3, 9, 13}},
        {{64, 48}, {48, 40}},
        {{5, 3, 0}, {0, 4}},
    };
    int n = 0;
    for (const auto& c : cases)
      for (Ctx ctx : kAllCtx) {
        Tensor a = random_f32(rng, c[0]), b = random_f32(rng, c[1]);
        std::vector<int64_t> os;
        std::vector<double> want = naive_matmul(a, b, &os);
        std::vector<Tensor> in{a, b}, out{Tensor::out(os)};
        CAPTURE(shape_str(c[0]));
        CAPTURE(shape_str(c[1]));
        CAPTURE(ctx_name(ctx));
        FakeNode node("MatMul", 1 + (n++ % 13));
        RunResult r = run(node, in, out, ctx);
        REQUIRE_MESSAGE(r.ok(), r.error);
        CDT_CHECK_CLOSE(out[0].f(), want);
        // A constant 2-D B is packed at prepare time.
        in[1].as_constant();
        std::vector<Tensor> out2{Tensor::out(os)};
        r = run(node, in, out2, ctx);
        REQUIRE_MESSAGE(r.ok(), r.error);
        if (c[1].size() == 2) CHECK(r.kernel_name == "f32_gemm_6x2v_packed");
        CDT_CHECK_CLOSE(out2[0].f(), want);
      }
  }

  TEST_CASE("MatMul errors") {
    std::mt19937 rng(3);
    std::vector<Tensor> in{random_f32(rng, {2, 3}), random_f32(rng, {4, 5})};
    std::vector<Tensor> out{Tensor::out({2, 5})};
    CHECK(bid(FakeNode("MatMul", 13), in, out).cost < 0);
    RunOptions o;
    o.skip_bid = true;
    o.hide_dims_at_prepare = true;  // shapes unknown at prepare: the run must catch it
    RunResult r = run(FakeNode("MatMul", 13), in, out, o);
    CHECK(r.status == MN_ERR_INVALID_ARGUMENT);
    CHECK(r.error.find("MatMul") != std::string::npos);
    // batch dims that do not broadcast
    std::vector<Tensor> in2{random_f32(rng, {2, 2, 3}), random_f32(rng, {3, 3, 4})};
    std::vector<Tensor> out2{Tensor::out({3, 2, 4})};
    RunResult r2 = run(FakeNode("MatMul", 13), in2, out2, o);
    CHECK(r2.status == MN_ERR_INVALID_ARGUMENT);
  }
}
