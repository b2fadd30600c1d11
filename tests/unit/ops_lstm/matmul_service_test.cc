// The dense matmul service (backends/cpu_dense/matmul_service.cc) as an op plugin sees
// it through the host: Y = X W^T + beta Y against a naive loop, odd shapes and strides,
// serial and split over a parallel_for.
#include "registry.h"
#include "test_util.h"

#include <minnow/services.h>

#include <doctest/doctest.h>

#include <random>
#include <thread>

using namespace minnow;

namespace {

// A parallel_for that really runs chunks on several threads.
void threaded_for(void*, size_t n, size_t grain, mn_range_fn fn, void* user) {
  const size_t parts = std::min<size_t>(4, (n + grain - 1) / grain);
  std::vector<std::thread> ts;
  for (size_t p = 0; p < parts; ++p) {
    size_t b = n * p / parts, e = n * (p + 1) / parts;
    ts.emplace_back([=] { fn(user, b, e); });
  }
  for (auto& t : ts) t.join();
}

}  // namespace

TEST_CASE("dense matmul service matches a naive product") {
  auto engine = test::make_engine();
  const auto* svc = static_cast<const mn_matmul_service*>(engine->registry()->service(MN_SERVICE_MATMUL_DENSE));
  REQUIRE(svc != nullptr);
  CHECK(std::string(svc->provider) == "cpu_dense");
  std::mt19937 g(3);
  std::uniform_real_distribution<float> d(-1, 1);
  const int64_t shapes[][3] = {{1, 1, 1}, {3, 17, 5}, {7, 16, 16}, {13, 33, 70}, {64, 65, 31}, {130, 200, 67}, {5, 1, 300}};
  for (const auto& s : shapes) {
    for (int variant = 0; variant < 4; ++variant) {
      const int64_t M = s[0], N = s[1], K = s[2];
      const int64_t ldx = K + (variant & 1) * 3, ldy = N + (variant & 2) * 2;
      const float beta = variant == 3 ? 1.f : variant == 2 ? 0.5f : 0.f;
      std::vector<float> w(size_t(N * K)), x(size_t(M * ldx)), y(size_t(M * ldy));
      for (float& v : w) v = d(g);
      for (float& v : x) v = d(g);
      for (float& v : y) v = d(g);
      std::vector<float> want = y;
      for (int64_t i = 0; i < M; ++i)
        for (int64_t j = 0; j < N; ++j) {
          double acc = 0;
          for (int64_t k = 0; k < K; ++k) acc += double(x[size_t(i * ldx + k)]) * w[size_t(j * K + k)];
          want[size_t(i * ldy + j)] = float(acc + double(beta) * y[size_t(i * ldy + j)]);
        }
      double cost = -1;
      void* h = svc->prepare_weights(w.data(), N, K, &cost);
      REQUIRE(h != nullptr);
      CHECK(cost > 0);
      for (int threads : {1, 4}) {
        std::vector<float> got = y;
        mn_run_ctx ctx{};
        ctx.struct_size = sizeof ctx;
        ctx.num_threads = threads;
        ctx.parallel_for = threads > 1 ? threaded_for : nullptr;
        REQUIRE(svc->multiply(h, &ctx, M, x.data(), ldx, beta, got.data(), ldy) == MN_OK);
        float m = 0;
        for (size_t i = 0; i < got.size(); ++i) m = std::max(m, std::fabs(got[i] - want[i]));
        CAPTURE(M); CAPTURE(N); CAPTURE(K); CAPTURE(variant); CAPTURE(threads);
        CHECK(m < 1e-4f);
      }
      svc->release(h);
    }
  }
  // Bad arguments are refused, not crashed on.
  std::vector<float> w(6, 1.f);
  void* h = svc->prepare_weights(w.data(), 2, 3, nullptr);
  float x[3] = {1, 2, 3}, y[2];
  CHECK(svc->multiply(h, nullptr, 1, x, 2 /* < K */, 0.f, y, 2) == MN_ERR_INVALID_ARGUMENT);
  CHECK(svc->multiply(h, nullptr, 1, x, 3, 0.f, y, 2) == MN_OK);
  CHECK(y[0] == 6.f);
  svc->release(h);
  CHECK(svc->prepare_weights(nullptr, 2, 3, nullptr) == nullptr);
}
