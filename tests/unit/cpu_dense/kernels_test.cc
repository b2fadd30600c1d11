// The cpu_dense SIMD kernels (packed GEMM, GEMM convolution, direct depthwise) against
// their references over odd shapes: sizes that are not multiples of the tile or vector
// width, M/N/K = 1, tiny and large maps, strides 1-3, asymmetric pads, dilation, groups,
// depthwise multipliers, epilogue bias / beta / clamp; the element-wise kernels (activations,
// binary ops, global average) over lengths around the vector widths, in place and not.
// Built for the host and, by scripts/arm64/test_kernels.sh, for aarch64 under qemu.
#include <doctest/doctest.h>

#include "kernels/conv.h"
#include "kernels/conv_hwc.h"
#include "kernels/eltwise.h"
#include "kernels/gemm.h"
#include "kernels/winograd.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

using namespace minnow::cpu_dense::kernels;

namespace {

const float kNaN = std::numeric_limits<float>::quiet_NaN();
const float kInf = std::numeric_limits<float>::infinity();

std::vector<float> randn(std::mt19937& rng, size_t n) {
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng);
  return v;
}

// max |a - b| / (1 + |b|); NaN anywhere fails.
void expect_close(const std::vector<float>& got, const std::vector<float>& want,
                  const std::string& what) {
  REQUIRE(got.size() == want.size());
  double worst = 0;
  size_t at = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double e = std::fabs(double(got[i]) - double(want[i])) / (1.0 + std::fabs(want[i]));
    if (!(e <= worst)) {
      worst = std::isnan(e) ? 1e30 : e;
      at = i;
      if (std::isnan(e)) break;
    }
  }
  INFO(what << ": worst error " << worst << " at " << at << " (got " << got[at] << ", want "
            << want[at] << ")");
  CHECK(worst < 1e-4);
}

}  // namespace

TEST_CASE("SIMD target") {
  std::printf("cpu_dense kernels: SIMD target %s, GEMM tile %dx%d\n", simd_target_name(),
              kGemmMR, gemm_nr());
  CHECK(gemm_nr() >= 2);
  CHECK(gemm_nr() % 2 == 0);
}

TEST_CASE("packed-B GEMM matches the reference (odd M/N/K, transposes, epilogue)") {
  std::mt19937 rng(7);
  const int64_t sizes[] = {1, 3, 5, 17, 65};
  int cases = 0;
  for (int64_t M : {int64_t(1), int64_t(2), int64_t(3), int64_t(4), int64_t(5), int64_t(17), int64_t(65)})  // 2, 4: short tiles
    for (int64_t N : {int64_t(1), int64_t(7), int64_t(8), int64_t(16), int64_t(24), int64_t(33),
                      int64_t(65)})  // tails of at most one vector (8, 16) and of two
      for (int64_t K : sizes)
        for (int variant = 0; variant < 4; ++variant) {
          const bool ta = variant & 1, tb = variant & 2;
          const std::vector<float> a = randn(rng, size_t(M * K)), b = randn(rng, size_t(K * N));
          const std::vector<float> bias = randn(rng, size_t(N));
          const int64_t a_rs = ta ? 1 : K, a_cs = ta ? M : 1;
          const int64_t b_rs = tb ? 1 : N, b_cs = tb ? K : 1;
          const float beta = (variant == 3) ? 0.5f : 0.0f;
          const float lo = variant == 1 ? 0.0f : -kInf, hi = variant == 2 ? 0.25f : kInf;
          const float scale = variant == 2 ? 2.0f : 1.0f;
          // The reference sees B already scaled.
          std::vector<float> bs(b);
          for (float& v : bs) v *= scale;
          std::vector<float> init = randn(rng, size_t(M * N));
          std::vector<float> want(init), got(init);
          if (beta == 0.0f)
            for (float& v : got) v = kNaN;  // beta 0 must not read C
          Epilogue e;
          e.bias = variant == 0 ? nullptr : bias.data();
          e.bias_per_row = false;
          e.beta = beta;
          e.lo = lo;
          e.hi = hi;
          gemm_ref(M, N, K, a.data(), a_rs, a_cs, bs.data(), b_rs, b_cs, want.data(), N, e);
          PackedB p = pack_b(b.data(), K, N, b_rs, b_cs, scale, e.bias);
          // Two halves of the panels and rows, as two threads would split them.
          const int64_t qh = p.panels / 2, mh = M / 2;
          gemm_packed_b(p, a.data(), a_rs, a_cs, got.data(), N, 0, mh, 0, p.panels, beta, lo, hi);
          gemm_packed_b(p, a.data(), a_rs, a_cs, got.data(), N, mh, M, 0, qh, beta, lo, hi);
          gemm_packed_b(p, a.data(), a_rs, a_cs, got.data(), N, mh, M, qh, p.panels, beta, lo, hi);
          expect_close(got, want,
                       "M" + std::to_string(M) + " N" + std::to_string(N) + " K" +
                           std::to_string(K) + " variant " + std::to_string(variant));
          ++cases;
        }
  CHECK(cases == 980);
}

namespace {

struct ConvCase {
  int64_t N, C, M, group;
  int64_t in[3], k[3], s[3], d[3], pb[3], pe[3];
};

ConvShape shape_of(const ConvCase& c) {
  ConvShape s;
  s.N = c.N;
  s.C = c.C;
  s.M = c.M;
  s.group = c.group;
  for (int i = 0; i < 3; ++i) {
    s.in[i] = c.in[i];
    s.k[i] = c.k[i];
    s.s[i] = c.s[i];
    s.d[i] = c.d[i];
    s.pb[i] = c.pb[i];
    s.out[i] = (c.in[i] + c.pb[i] + c.pe[i] - (c.k[i] - 1) * c.d[i] - 1) / c.s[i] + 1;
  }
  return s;
}

std::string describe(const ConvShape& s) {
  std::string r = "N" + std::to_string(s.N) + " C" + std::to_string(s.C) + " M" +
                  std::to_string(s.M) + " g" + std::to_string(s.group);
  for (int i = 0; i < 3; ++i)
    r += " [in " + std::to_string(s.in[i]) + " k " + std::to_string(s.k[i]) + " s " +
         std::to_string(s.s[i]) + " d " + std::to_string(s.d[i]) + " pb " +
         std::to_string(s.pb[i]) + " out " + std::to_string(s.out[i]) + "]";
  return r;
}

// The reference convolution with a residual addend added before the clamp.
std::vector<float> conv_ref_with_addend(const ConvShape& s, const std::vector<float>& x, const std::vector<float>& w,
                                        const std::vector<float>& bias, const std::vector<float>& addend, float lo,
                                        float hi) {
  std::vector<float> y(addend.size());
  conv_ref(s, x.data(), w.data(), bias.data(), y.data(), -kInf, kInf);
  for (size_t i = 0; i < y.size(); ++i) y[i] = std::min(std::max(y[i] + addend[i], lo), hi);
  return y;
}

int shared_b_cases = 0;  // check_conv runs that took the plan's shared B
int k_split_cases = 0;   // check_conv runs whose plan split K (ConvPlan::k_parts)

// One case's data and its reference, unclamped (conv_ref, the test's slow part: under
// qemu most of the aarch64 kernel test's time), computed once for every thread count and
// clamp it is checked with.
struct ConvData {
  ConvShape s;
  std::vector<float> x, w, bias, addend, ref;
};
ConvData conv_data(std::mt19937& rng, const ConvCase& c) {
  ConvData d;
  d.s = shape_of(c);
  d.x = randn(rng, size_t(d.s.N * d.s.C * d.s.Pin()));
  d.w = randn(rng, size_t(d.s.M * d.s.K()));
  d.bias = randn(rng, size_t(d.s.M));
  d.ref.resize(size_t(d.s.N * d.s.M * d.s.P()));
  d.addend = randn(rng, d.ref.size());
  conv_ref(d.s, d.x.data(), d.w.data(), d.bias.data(), d.ref.data(), -kInf, kInf);
  return d;
}

// Runs one convolution through conv_gemm (all tasks, slots reused as one worker would)
// or dwconv (when it applies and `depthwise`), and compares with conv_ref.
void check_conv(const ConvData& d, bool depthwise, bool clamp, int threads) {
  const ConvShape& s = d.s;
  const std::vector<float>& x = d.x;
  const std::vector<float>& w = d.w;
  const std::vector<float>& bias = d.bias;
  const float lo = clamp ? 0.0f : -kInf, hi = clamp ? 6.0f : kInf;
  std::vector<float> want(d.ref.size()), got(want.size(), kNaN);
  for (size_t i = 0; i < want.size(); ++i) want[i] = std::min(std::max(d.ref[i], lo), hi);
  if (depthwise) {
    REQUIRE(dwconv_applies(s));
    std::vector<float> slot(size_t(dwconv_slot_floats(s)), kNaN);
    for (int64_t plane = 0; plane < s.N * s.M; ++plane)
      dwconv_plane(s, plane, x.data(), w.data(), bias.data(), got.data(), slot.data(), lo, hi);
    if (dwconv_block_applies(s)) {  // the channel-blocked kernel too, over every block
      expect_close(got, want, "dwconv " + describe(s));
      std::vector<float> bslot(size_t(dwconv_block_slot_floats(s)), kNaN);
      std::fill(got.begin(), got.end(), kNaN);
      const int64_t L = dwconv_block_lanes();
      for (int64_t b = 0; b < s.N * s.M / L; ++b)
        dwconv_block(s, b, x.data(), w.data(), clamp ? bias.data() : nullptr, got.data(), bslot.data(), lo, hi);
      if (!clamp)  // without bias: the kernel's null-bias path, the reference's bias added back
        for (int64_t i = 0; i < s.N * s.M * s.P(); ++i) got[size_t(i)] += bias[size_t(i / s.P() % s.M)];
      expect_close(got, want, "dwconv_block " + describe(s));
      // By row parts, as workers split a plane (ConvPacked: one part per thread), three
      // uneven parts, the last first: the same floats as the whole block.
      if (!clamp) return;
      std::vector<float> parts(got.size(), kNaN);
      const int64_t OH = s.out[1], cut[4] = {0, OH / 4, OH / 4 + (OH + 1) / 2, OH};
      for (int part = 2; part >= 0; --part)
        for (int64_t b = 0; b < s.N * s.M / L; ++b)
          dwconv_block(s, b, cut[part], cut[part + 1], x.data(), w.data(), bias.data(), parts.data(), bslot.data(), lo, hi);
      for (size_t i = 0; i < parts.size(); ++i)
        REQUIRE_MESSAGE(std::memcmp(&parts[i], &got[i], sizeof(float)) == 0, "dwconv_block by rows differs at " << i << ", "
                                                                                 << describe(s));
      return;
    }
  } else {
    // A fused residual addend, given apart from y or as y itself (y's memory reused for
    // the output: y holds the addend when the run starts), added before the clamp.
    const std::vector<float>& addend = d.addend;
    std::vector<float> with_addend(want.size());
    for (size_t i = 0; i < want.size(); ++i) with_addend[i] = std::min(std::max(d.ref[i] + addend[i], lo), hi);
    // W packed into panels and W read in place must both match.
    for (ConvPack how : {ConvPack::kPanels, ConvPack::kInPlace}) {
      const std::string what = std::string(how == ConvPack::kPanels ? "conv_gemm " : "conv_gemm in place ") + describe(s);
      const ConvWeights cw = pack_conv_weights(w.data(), s.M, s.K(), s.group, bias.data(), how, s.taps() == 1);
      const ConvPlan p = plan_conv(s, threads);
      std::vector<float> slot(size_t(p.slot_floats), kNaN);
      // Every task; or with a K split every part (the last first, as another worker might)
      // into partial sums of its own, then their sum with the addend, clamped.
      std::vector<float> partials;
      const auto run_all = [&](float* y, const float* add) {
        if (p.k_parts == 1) {
          for (int64_t t = 0; t < p.tasks; ++t) conv_gemm_task(s, cw, w.data(), p, t, x.data(), y, slot.data(), lo, hi, add);
          return;
        }
        REQUIRE(s.N == 1);
        const int64_t n = s.M * s.P();
        partials.assign(size_t(p.k_parts * n), kNaN);
        std::vector<const float*> parts;
        for (int64_t j = p.k_parts - 1; j >= 0; --j)
          conv_gemm_part(s, cw, w.data(), p, j, x.data(), partials.data() + j * n, slot.data());
        for (int64_t j = 0; j < p.k_parts; ++j) parts.push_back(partials.data() + j * n);
        f32_sum_clamp(parts.data(), p.k_parts, add, y, n, lo, hi);
      };
      if (p.k_parts > 1) ++k_split_cases;
      std::fill(got.begin(), got.end(), kNaN);
      run_all(got.data(), nullptr);
      expect_close(got, want, what);
      std::fill(got.begin(), got.end(), kNaN);
      run_all(got.data(), addend.data());
      expect_close(got, with_addend, what + " + addend");
      got = addend;
      run_all(got.data(), got.data());
      expect_close(got, with_addend, what + " onto the addend in y");
      if (p.shared_b_floats > 0) {
        // One B shared by the row chunks: its k-blocks built first (last one first, as
        // another worker might), then every task reading it, with the addend; the same
        // floats as each task building its own.
        REQUIRE(p.m_chunks > 1);
        std::vector<float> shared(size_t(p.shared_b_floats), kNaN), own(want.size(), kNaN);
        for (int64_t kb = p.k_blocks - 1; kb >= 0; --kb)
          conv_gemm_build_b(s, cw, p, kb, x.data(), shared.data(), slot.data());
        std::fill(slot.begin(), slot.end(), kNaN);
        std::fill(got.begin(), got.end(), kNaN);
        for (int64_t t = 0; t < p.tasks; ++t) {
          conv_gemm_task(s, cw, w.data(), p, t, x.data(), got.data(), slot.data(), lo, hi, addend.data(),
                         shared.data());
          conv_gemm_task(s, cw, w.data(), p, t, x.data(), own.data(), slot.data(), lo, hi, addend.data());
        }
        for (size_t i = 0; i < got.size(); ++i)
          REQUIRE_MESSAGE(std::memcmp(&got[i], &own[i], sizeof(float)) == 0, what << " shared B, element " << i);
        ++shared_b_cases;
      }
    }
    return;
  }
  expect_close(got, want, "dwconv " + describe(s));
}
void check_conv(std::mt19937& rng, const ConvCase& c, bool depthwise, bool clamp, int threads) {
  check_conv(conv_data(rng, c), depthwise, clamp, threads);
}

}  // namespace

TEST_CASE("tall tiles match the reference (1-16 rows, partial vectors, epilogue)") {
  if (!gemm_tall_available()) return;  // AVX-512 only
  std::mt19937 rng(23);
  const int64_t L = gemm_nr() / 2;
  int cases = 0;
  for (int64_t M : {1, 7, 13, 16, 20, 32})
    for (int64_t N : {int64_t(1), L / 2 + 1, L})
      for (int64_t K : {1, 3, 33}) {
        // A as conv weights [M][K], packed k-major; B [K][N] with rows of ldb >= L floats.
        const std::vector<float> a = randn(rng, size_t(M * K));
        const int64_t ldb = L + 3;
        const std::vector<float> b = randn(rng, size_t(K * ldb));
        const std::vector<float> bias = randn(rng, size_t(M));
        const std::vector<float> addend = randn(rng, size_t(M * N));
        const FloatBuf tall = pack_tall(a.data(), M, K);
        for (int variant = 0; variant < 2; ++variant) {
          std::vector<float> c = randn(rng, size_t(M * N)), want = c;
          Epilogue e;
          e.bias_per_row = true;
          if (variant == 1) {  // beta 1, addend, clamp
            e.beta = 1.0f;
            e.lo = -0.5f;
            e.hi = 0.7f;
          }
          Epilogue re = e;
          for (int64_t r0 = 0; r0 < M; r0 += kGemmTallRows) {
            const int64_t rows = std::min<int64_t>(kGemmTallRows, M - r0);
            Tile t;
            t.K = K;
            t.a = tall.get() + r0 * K;
            t.a_rs = t.a_cs = 0;  // unused
            t.b = b.data();
            t.ldb = ldb;
            t.c = c.data() + r0 * N;
            t.ldc = N;
            t.mr = static_cast<int>(rows);
            t.nr = static_cast<int>(N);
            e.bias = variant == 0 ? bias.data() + r0 : nullptr;
            e.addend = variant == 1 ? addend.data() + r0 * N : nullptr;
            gemm_tall_tile_fn()(t, e);
            re.bias = e.bias;
            re.addend = e.addend;
            gemm_ref(rows, N, K, a.data() + r0 * K, K, 1, b.data(), ldb, 1, want.data() + r0 * N, N, re);
          }
          expect_close(c, want, "tall tile M " + std::to_string(M) + " N " + std::to_string(N) + " K " +
                                    std::to_string(K) + " variant " + std::to_string(variant));
          ++cases;
        }
      }
  CHECK(cases == 108);
}

TEST_CASE("GEMM convolution matches the reference") {
  std::mt19937 rng(11);
  const ConvCase cases[] = {
      // 1x1 stride 1 (X read in place; widths around the NC block and NR tile edges)
      {1, 24, 144, 1, {1, 7, 9}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}, {0, 0, 0}},
      {2, 3, 5, 1, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}, {0, 0, 0}},
      {1, 17, 13, 1, {1, 16, 16}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}, {0, 0, 0}},
      {1, 300, 7, 1, {1, 5, 13}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}, {0, 0, 0}},
      {1, 8, 8, 1, {1, 1, 257}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}, {0, 0, 0}},
      // few output channels (B panels read from X in place with 32-wide panels): two
      // k-blocks and a partial last panel (81 = 2 * 32 + 17), and groups of 16 channels
      {1, 300, 64, 1, {1, 9, 9}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}, {0, 0, 0}},
      {2, 64, 32, 2, {1, 8, 9}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}, {0, 0, 0}},
      // rows a multiple of 64 bytes apart (8 x 16 = 128 pixels: 8 L1 sets): with 16-wide
      // panels 24 rows are read in place; 40 rows in place too for 10 output channels (K
      // split in two blocks of 20), copied for 40
      {1, 24, 10, 1, {1, 8, 16}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}, {0, 0, 0}},
      {1, 40, 10, 1, {1, 8, 16}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}, {0, 0, 0}},
      {1, 40, 40, 1, {1, 8, 16}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}, {0, 0, 0}},
      // rows 1 KB apart (16x16: 4 L1 set pairs): K in blocks of 16 at NR 16 and 32 (three
      // k-blocks, B in place), two images
      {2, 40, 16, 1, {1, 16, 16}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}, {0, 0, 0}},
      // 96 output channels over spread rows (14x14): in place with AVX2 and AVX-512,
      // copied with 8-wide panels (NEON, SSE4)
      {1, 70, 96, 1, {1, 14, 14}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}, {0, 0, 0}},
      // 1x1 with stride or padding (im2col path)
      {1, 5, 7, 1, {1, 9, 10}, {1, 1, 1}, {1, 2, 2}, {1, 1, 1}, {0, 0, 0}, {0, 0, 0}},
      {1, 4, 3, 1, {1, 5, 5}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {0, 1, 0}, {0, 0, 2}},
      // 1x1 with strides and no padding reached: B gathered from X (subsample_block), 2-D
      // and 3-D, two k-blocks and column blocks with a dot tail (225 = 14 * 16 + 1); an
      // end pad that a pixel reaches goes through the window instead
      {1, 6, 9, 1, {1, 20, 21}, {1, 1, 1}, {1, 2, 2}, {1, 1, 1}, {0, 0, 0}, {0, 0, 0}},
      {1, 4, 5, 1, {5, 6, 7}, {1, 1, 1}, {2, 2, 3}, {1, 1, 1}, {0, 0, 0}, {0, 0, 0}},
      {1, 300, 20, 1, {1, 30, 29}, {1, 1, 1}, {1, 2, 2}, {1, 1, 1}, {0, 0, 0}, {0, 0, 0}},
      {1, 6, 9, 1, {1, 8, 8}, {1, 1, 1}, {1, 2, 2}, {1, 1, 1}, {0, 0, 0}, {0, 1, 1}},
      {1, 3, 16, 1, {1, 23, 21}, {1, 3, 3}, {1, 2, 2}, {1, 1, 1}, {0, 1, 1}, {0, 1, 1}},
      {2, 5, 7, 1, {1, 11, 13}, {1, 3, 3}, {1, 1, 1}, {1, 1, 1}, {0, 1, 0}, {0, 2, 1}},
      {1, 7, 9, 1, {1, 12, 12}, {1, 5, 5}, {1, 1, 2}, {1, 1, 1}, {0, 2, 2}, {0, 2, 2}},
      {1, 4, 6, 1, {1, 15, 14}, {1, 3, 3}, {1, 1, 1}, {1, 2, 3}, {0, 2, 3}, {0, 1, 0}},
      {1, 3, 8, 1, {1, 30, 30}, {1, 7, 7}, {1, 2, 2}, {1, 1, 1}, {0, 3, 3}, {0, 3, 3}},
      {1, 65, 17, 1, {1, 6, 6}, {1, 3, 3}, {1, 1, 1}, {1, 1, 1}, {0, 1, 1}, {0, 1, 1}},
      // output rows wider than a panel at every NR (70, 80 wide): panels that are one
      // whole run of a window row, and panels across two rows
      {1, 3, 8, 1, {1, 5, 70}, {1, 3, 3}, {1, 1, 1}, {1, 1, 1}, {0, 1, 1}, {0, 1, 1}},
      {1, 3, 10, 1, {1, 7, 161}, {1, 3, 3}, {1, 2, 2}, {1, 1, 1}, {0, 1, 0}, {0, 0, 0}},
      // K > KC (several K chunks with beta accumulation), wide M (several row chunks); with
      // AVX2's deeper K blocks (up to 1024) only K > 1024 is split: a dot tail and a 3x3
      {1, 64, 70, 1, {1, 7, 7}, {1, 3, 3}, {1, 1, 1}, {1, 1, 1}, {0, 1, 1}, {0, 1, 1}},
      {1, 1100, 9, 1, {1, 3, 11}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}, {0, 0, 0}},
      {1, 130, 10, 1, {1, 5, 5}, {1, 3, 3}, {1, 1, 1}, {1, 1, 1}, {0, 1, 1}, {0, 1, 1}},
      // a tail of P % NR <= NR / 4 pixels (dot tiles; 33, 34, 66 leave 1-2 past every
      // NR = 8, 16, 32; 3 is all tail for NR >= 16): odd rows, K % lanes, K > KC
      {1, 40, 29, 1, {1, 3, 11}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}, {0, 0, 0}},
      {1, 300, 13, 1, {1, 2, 17}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}, {0, 0, 0}},
      {1, 30, 11, 1, {1, 11, 6}, {1, 3, 3}, {1, 1, 1}, {1, 1, 1}, {0, 1, 1}, {0, 1, 1}},
      {1, 7, 5, 1, {1, 1, 3}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}, {0, 0, 0}},
      // a tail a little over half a panel: a one-vector tile of NR / 2 columns, then dot
      // columns from the middle of the last panel (7x7: 49 = 32 + 16 + 1; 5x5: 25 = 16 +
      // 8 + 1; 1x13: 13 = 8 + 4 + 1), with several k-blocks (1100 > AVX2's deepest KC),
      // B read in place (20 and 70 output channels with 16- and 32-wide panels) and copied
      // (110: more than 96 rows of W)
      {1, 300, 20, 1, {1, 7, 7}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}, {0, 0, 0}},
      {1, 300, 70, 1, {1, 7, 7}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}, {0, 0, 0}},
      {1, 300, 110, 1, {1, 7, 7}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}, {0, 0, 0}},
      {1, 1100, 9, 1, {1, 5, 5}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}, {0, 0, 0}},
      {1, 40, 13, 1, {1, 1, 13}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}, {0, 0, 0}},
      // X's rows on cache lines and spread over L1 (7x16: 448 bytes; 28x28: 3136) with
      // more than 96 rows of W: read in place with 32-wide strips, the half panel copied
      {1, 300, 110, 1, {1, 7, 16}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}, {0, 0, 0}},
      {1, 200, 130, 1, {1, 28, 28}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}, {0, 0, 0}},
      // rows on cache lines in 16 L1 sets (56x56): K blocks of at most 12 rows a set
      {1, 260, 70, 1, {1, 56, 56}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}, {0, 0, 0}},
      // a B block over 64 KB (W blocks of 16 row panels, not one panel at a time), M over
      // one such block, two k-blocks, a dot tail at NR = 16 and 32
      {1, 260, 100, 1, {1, 12, 11}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}, {0, 0, 0}},
      // a small B block (one row panel at a time) with more rows than 16 panels: the dot
      // tiles run per 16 panels and for the rest
      {1, 16, 130, 1, {1, 3, 11}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}, {0, 0, 0}},
      // small K over many pixels: column blocks wider than 8 panels (plan_conv doubles
      // them while B fits 64 KB and 8 blocks per thread remain), a partial last block,
      // a dot tail (4900 = 306 * 16 + 4); 1x1 copied from X and a 3x3 stride-2 window
      {1, 4, 7, 1, {1, 70, 70}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}, {0, 0, 0}},
      {1, 3, 10, 1, {1, 129, 130}, {1, 3, 3}, {1, 2, 2}, {1, 1, 1}, {0, 1, 1}, {0, 1, 0}},
      // one column panel at every NR and 64 output channels: on several threads the plan
      // splits rows, and the row chunks share one B (conv_gemm_build_b)
      {1, 20, 64, 1, {1, 4, 4}, {1, 3, 3}, {1, 1, 1}, {1, 1, 1}, {0, 1, 1}, {0, 1, 1}},
      // padding larger than the kernel's reach: whole zero rows / columns
      {1, 2, 3, 1, {1, 3, 3}, {1, 2, 2}, {1, 1, 1}, {1, 1, 1}, {0, 3, 3}, {0, 3, 3}},
      // groups (not depthwise)
      {1, 8, 12, 4, {1, 9, 7}, {1, 3, 3}, {1, 1, 1}, {1, 1, 1}, {0, 1, 1}, {0, 1, 1}},
      {2, 6, 9, 3, {1, 5, 5}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}, {0, 0, 0}},
      // depthwise through the GEMM path too
      {1, 5, 10, 5, {1, 8, 8}, {1, 3, 3}, {1, 2, 2}, {1, 1, 1}, {0, 1, 1}, {0, 0, 0}},
      // 1-D and 3-D
      {1, 3, 4, 1, {1, 1, 29}, {1, 1, 5}, {1, 1, 2}, {1, 1, 2}, {0, 0, 2}, {0, 0, 1}},
      {1, 2, 3, 1, {5, 6, 7}, {3, 2, 3}, {2, 1, 1}, {1, 2, 1}, {1, 0, 1}, {0, 1, 1}},
  };
  for (const ConvCase& c : cases) {
    const ConvData d = conv_data(rng, c);
    for (int threads : {1, 2, 8})
      for (bool clamp : {false, true}) check_conv(d, false, clamp, threads);
  }
  // 1x1 convs with a W of 512 KB or more over 2-8 panels of pixels (14x14 at NR 32, 7x8
  // at NR 8 and 16), stride 1 and 2: on several threads one column block in row chunks
  // that share B (rows_share_b), with dot tails; 1200 -> 110 at stride 1 splits K instead
  // (K >= 2 M). Large, so on 2 threads only.
  const ConvCase large_w[] = {
      {1, 300, 1200, 1, {1, 14, 14}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}, {0, 0, 0}},
      {1, 1200, 110, 1, {1, 14, 14}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}, {0, 0, 0}},
      {1, 1200, 110, 1, {1, 7, 8}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}, {0, 0, 0}},
      {1, 1200, 110, 1, {1, 27, 27}, {1, 1, 1}, {1, 2, 2}, {1, 1, 1}, {0, 0, 0}, {0, 0, 0}},
      // 12x12: rows on cache lines, read in place with 32-wide strips (no shared B there)
      {1, 110, 1200, 1, {1, 12, 12}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}, {0, 0, 0}},
  };
  for (const ConvCase& c : large_w) check_conv(rng, c, false, true, 2);
  CHECK(shared_b_cases > 0);  // small maps on several threads share B (3x3 at 7x7, 5x5, ...)
  // Pointwise and 3x3 convs with a deep K on small maps split K over 2-4 workers (plan_conv's
  // k_parts): mobilenet_v2's 576 -> 96 at 14x14 (parts of whole k-blocks; two column
  // blocks with 16-wide panels), tall tiles (20 rows) and a half-panel tail at 7x7, a
  // last part shorter than the others and a tail of 9 at 13x13 on 3 workers, 4 parts
  // of one k-block with a single-pixel map, and 1100 -> 9 (several k-blocks a part).
  const struct {
    ConvCase c;
    int threads;
  } k_split[] = {
      {{1, 576, 96, 1, {1, 14, 14}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}, {0, 0, 0}}, 2},
      {{1, 400, 20, 1, {1, 7, 7}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}, {0, 0, 0}}, 2},
      {{1, 700, 9, 1, {1, 13, 13}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}, {0, 0, 0}}, 3},
      {{1, 800, 7, 1, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}, {0, 0, 0}}, 4},
      {{1, 2300, 9, 1, {1, 3, 11}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}, {0, 0, 0}}, 2},
      // 3x3 convs (B built from a window per k-block; parts that split a channel's taps):
      // stride 1 with pads at 9x9, stride 2 to 8x8, dilated on 3 workers
      {{1, 64, 20, 1, {1, 9, 9}, {1, 3, 3}, {1, 1, 1}, {1, 1, 1}, {0, 1, 1}, {0, 1, 1}}, 2},
      {{1, 101, 30, 1, {1, 15, 15}, {1, 3, 3}, {1, 2, 2}, {1, 1, 1}, {0, 1, 1}, {0, 1, 1}}, 2},
      {{1, 70, 13, 1, {1, 11, 12}, {1, 3, 3}, {1, 1, 1}, {1, 2, 2}, {0, 2, 1}, {0, 1, 2}}, 3},
  };
  const int before = k_split_cases;
  for (const auto& k : k_split) {
    const ConvData d = conv_data(rng, k.c);
    for (bool clamp : {false, true}) check_conv(d, false, clamp, k.threads);
  }
  CHECK(k_split_cases - before == 32);  // every one split (2 packings x 2 clamps x 8)
}

TEST_CASE("direct convolution on phase planes matches the reference") {
  // Few input channels, many taps per input float (3x3 stride 1, 5x5 / 7x7 stride 2):
  // output rows around the NR edges (nr, nr + 1, 2 nr - 1, 2 nr + 15 wide), 1-5 rows, pads
  // before and after (left-only, right-only, none), partial row panels of W, two images,
  // clamp and a fused addend (apart, and in y itself), W in panels and in place, tasks
  // planned for 1 and 3 workers.
  std::mt19937 rng(31);
  const int64_t nr = gemm_nr();
  int cases = 0;
  struct Geo {
    int64_t k, st, pb, pe;
  };
  for (const Geo g : {Geo{3, 1, 1, 1}, Geo{3, 1, 0, 0}, Geo{3, 1, 2, 0}, Geo{5, 2, 2, 2}, Geo{7, 2, 3, 3},
                      Geo{7, 2, 0, 5}, Geo{5, 1, 0, 2}})
    for (int64_t ow : {nr, nr + 1, 2 * nr - 1, 2 * nr + 15})
      for (int64_t C : {int64_t(1), int64_t(3), kDirectMaxChannels}) {
        const int64_t M = std::vector<int64_t>{1, 7, 16, 13}[size_t(cases % 4)];
        const int64_t oh = 1 + cases % 5, N = 1 + cases % 2;
        const int64_t iw = (ow - 1) * g.st + g.k - g.pb - g.pe, ih = (oh - 1) * g.st + g.k - g.pb - g.pe;
        if (iw < 1 || ih < 1) continue;
        ConvCase c{N, C, M, 1, {1, ih, iw}, {1, g.k, g.k}, {1, g.st, g.st}, {1, 1, 1}, {0, g.pb, g.pb},
                   {0, g.pe, g.pe}};
        const ConvShape s = shape_of(c);
        REQUIRE(s.out[2] == ow);
        REQUIRE_MESSAGE(conv_direct_applies(s), describe(s));
        const std::vector<float> x = randn(rng, size_t(s.N * s.C * s.Pin()));
        const std::vector<float> w = randn(rng, size_t(s.M * s.K()));
        const std::vector<float> bias = randn(rng, size_t(s.M));
        const std::vector<float> addend = randn(rng, size_t(s.N * s.M * s.P()));
        const bool clamp = cases % 3 == 0;
        const float lo = clamp ? 0.0f : -kInf, hi = clamp ? 6.0f : kInf;
        std::vector<float> want(addend.size());
        conv_ref(s, x.data(), w.data(), bias.data(), want.data(), lo, hi);
        const std::vector<float> with_addend = conv_ref_with_addend(s, x, w, bias, addend, lo, hi);
        const ConvPack how = cases % 2 ? ConvPack::kPanels : ConvPack::kInPlace;
        const ConvWeights cw = pack_conv_weights(w.data(), s.M, s.K(), 1, bias.data(), how);
        const DirectConvPlan p = plan_direct_conv(s, 1 + 2 * (cases % 2));
        std::vector<float> planes(size_t(p.planes_floats), kNaN);
        std::vector<int32_t> off(size_t(s.K()));
        direct_conv_offsets(s, p, off.data());
        auto run = [&](std::vector<float>& y, const float* add, bool into_y) {
          for (int64_t n = 0; n < s.N; ++n) {
            const int64_t yo = n * s.M * s.P();
            std::fill(planes.begin(), planes.end(), kNaN);  // every float a tile reads is written
            direct_conv_planes(s, p, x.data() + n * s.C * s.Pin(), 0, s.C, planes.data());
            for (int64_t t = 0; t < p.tasks; ++t)
              direct_conv_task(s, cw, w.data(), p, t, planes.data(), off.data(), y.data() + yo, lo, hi,
                               into_y ? y.data() + yo : add ? add + yo : nullptr);
          }
        };
        std::vector<float> got(want.size(), kNaN);
        run(got, nullptr, false);
        expect_close(got, want, "direct " + describe(s));
        std::fill(got.begin(), got.end(), kNaN);
        run(got, addend.data(), false);
        expect_close(got, with_addend, "direct + addend " + describe(s));
        got = addend;
        run(got, nullptr, true);
        expect_close(got, with_addend, "direct onto the addend in y " + describe(s));
        ++cases;
      }
  CHECK(cases == 84);
  // Not for few taps per input float (3x3 stride 2), many channels, narrow rows.
  ConvShape s = shape_of(ConvCase{1, 3, 8, 1, {1, 64, 2 * nr + 1}, {1, 3, 3}, {1, 2, 2}, {1, 1, 1}, {0, 1, 1}, {0, 1, 1}});
  CHECK_FALSE(conv_direct_applies(s));
  s = shape_of(ConvCase{1, kDirectMaxChannels + 1, 8, 1, {1, 9, nr + 2}, {1, 3, 3}, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}, {0, 0, 0}});
  CHECK_FALSE(conv_direct_applies(s));
  s = shape_of(ConvCase{1, 3, 8, 1, {1, 9, nr + 1}, {1, 3, 3}, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}, {0, 0, 0}});
  CHECK_FALSE(conv_direct_applies(s));  // nr - 1 outputs a row
  s = shape_of(ConvCase{1, 4, 8, 1, {1, 12, nr + 8}, {1, 9, 9}, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}, {0, 0, 0}});
  CHECK_FALSE(conv_direct_applies(s));  // K = 4 * 81 over kDirectMaxK
}

TEST_CASE("first convs with channels as lanes, and their HWC max pool, match the references") {
  // 1-4 input channels, 2-6 vectors of output channels, kernels 1x1 to 7x7 (non-square),
  // strides 1-3, dilation 2, pads before and after, rows of 1 to 3 x 12 + 3 outputs (every
  // tile width), computed in two calls of rows; a clamp or none; the NaN flag.
  std::mt19937 rng(43);
  const int64_t L = conv_hwc_lanes();
  struct Geo {
    int64_t kh, kw, s, d, pt, pl, pb, pr;
  };
  int cases = 0;
  for (const Geo g : {Geo{3, 3, 2, 1, 1, 1, 1, 1}, Geo{7, 7, 2, 1, 3, 3, 3, 3}, Geo{3, 3, 1, 2, 2, 0, 0, 2},
                      Geo{5, 3, 3, 1, 0, 1, 2, 0}, Geo{1, 1, 1, 1, 0, 0, 0, 0}, Geo{2, 4, 2, 1, 1, 0, 0, 1}})
    for (int64_t C = 1; C <= 4; ++C)
      for (int64_t ow : {int64_t(1), int64_t(2), int64_t(13), int64_t(39)}) {
        const int64_t M = 2 * L * (1 + cases % 3), oh = 1 + cases % 4;
        const int64_t ekh = (g.kh - 1) * g.d + 1, ekw = (g.kw - 1) * g.d + 1;
        const int64_t H = (oh - 1) * g.s + ekh - g.pt - g.pb, W = (ow - 1) * g.s + ekw - g.pl - g.pr;
        if (H < 1 || W < 1) continue;
        const std::vector<float> x = randn(rng, size_t(C * H * W));
        const std::vector<float> w = randn(rng, size_t(M * C * g.kh * g.kw));
        const std::vector<float> bias = randn(rng, size_t(M));
        const bool clamp = cases % 2 == 1;
        HwcConv cv;
        cv.C = C;
        cv.M = M;
        cv.KH = g.kh;
        cv.KW = g.kw;
        cv.sh = cv.sw = g.s;
        cv.dh = cv.dw = g.d;
        cv.hp = (oh - 1) * g.s + ekh;
        cv.wp = std::max(W + g.pl, (ow - 1) * g.s + ekw);
        cv.OW = ow;
        cv.bias = cases % 5 == 4 ? nullptr : bias.data();
        cv.lo = clamp ? 0.0f : -kInf;
        cv.hi = clamp ? 1.5f : kInf;
        std::vector<float> xp(size_t(C * cv.hp * cv.wp), 0.0f), wt(w.size());
        for (int64_t c = 0; c < C; ++c)
          for (int64_t r = 0; r < H; ++r)
            for (int64_t q = 0; q < W; ++q) xp[size_t((c * cv.hp + r + g.pt) * cv.wp + q + g.pl)] = x[size_t((c * H + r) * W + q)];
        const int64_t K = C * g.kh * g.kw;
        for (int64_t m = 0; m < M; ++m)
          for (int64_t k = 0; k < K; ++k) wt[size_t(k * M + m)] = w[size_t(m * K + k)];
        std::vector<float> want(size_t(oh * ow * M)), got(want.size(), kNaN);
        for (int64_t r = 0; r < oh; ++r)
          for (int64_t q = 0; q < ow; ++q)
            for (int64_t m = 0; m < M; ++m) {
              double acc = cv.bias ? cv.bias[m] : 0.0;
              for (int64_t c = 0; c < C; ++c)
                for (int64_t i = 0; i < g.kh; ++i)
                  for (int64_t j = 0; j < g.kw; ++j) {
                    const int64_t ih = r * g.s + i * g.d - g.pt, iw = q * g.s + j * g.d - g.pl;
                    if (ih >= 0 && ih < H && iw >= 0 && iw < W)
                      acc += double(w[size_t(((m * C + c) * g.kh + i) * g.kw + j)]) * x[size_t((c * H + ih) * W + iw)];
                  }
              want[size_t((r * ow + q) * M + m)] = std::min(std::max(float(acc), cv.lo), cv.hi);
            }
        const int64_t split = oh / 2;
        bool nan = conv_hwc_rows(cv, xp.data(), wt.data(), 0, split, got.data());
        nan = conv_hwc_rows(cv, xp.data(), wt.data(), split, oh, got.data()) || nan;
        CHECK_FALSE(nan);
        char what[160];
        std::snprintf(what, sizeof(what), "hwc conv C %ld M %ld %ldx%ld s %ld d %ld, %ld x %ld out", long(C), long(M),
                      long(g.kh), long(g.kw), long(g.s), long(g.d), long(oh), long(ow));
        expect_close(got, want, what);
        ++cases;
      }
  CHECK(cases >= 80);

  // A NaN input: the flag says whether an output is NaN (the clamp's max may drop it on x86).
  {
    HwcConv cv;
    cv.C = 1;
    cv.M = 2 * L;
    cv.hp = cv.wp = 3;
    cv.OW = 3;
    std::vector<float> xp(9, 1.0f), wt(size_t(2 * L), 0.5f), y(size_t(3 * 3 * 2 * L));
    xp[4] = kNaN;
    const bool nan = conv_hwc_rows(cv, xp.data(), wt.data(), 0, 3, y.data());
    CHECK(nan == std::any_of(y.begin(), y.end(), [](float v) { return std::isnan(v); }));
  }

  // The pool: windows 3x3 / 2x2 / 3x2, strides 1-2, pads, ceil_mode windows past the end,
  // all rows and a band (row0 > 0), with NaNs (NaN-propagating) and without.
  struct PoolGeo {
    int64_t kh, kw, s, p, ih, iw;
    bool ceil;
  };
  int pools = 0;
  for (const PoolGeo pg : {PoolGeo{3, 3, 2, 1, 111, 111, false}, PoolGeo{3, 3, 2, 0, 27, 40, true},
                           PoolGeo{2, 2, 2, 0, 9, 7, true}, PoolGeo{3, 2, 1, 1, 5, 18, false}, PoolGeo{3, 3, 2, 1, 2, 1, false}})
    for (int with_nan = 0; with_nan < 2; ++with_nan) {
      const int64_t M = 2 * L * (1 + pools % 2);
      HwcPool p;
      p.M = M;
      p.IH = pg.ih;
      p.IW = pg.iw;
      p.KH = pg.kh;
      p.KW = pg.kw;
      p.sh = p.sw = pg.s;
      p.ph = p.pw = pg.p;
      auto outs = [&](int64_t in, int64_t k) {
        const int64_t span = in + 2 * pg.p - k;
        return (pg.ceil ? (span + pg.s - 1) / pg.s : span / pg.s) + 1;
      };
      p.PH = outs(pg.ih, pg.kh);
      p.PW = outs(pg.iw, pg.kw);
      std::vector<float> in = randn(rng, size_t(pg.ih * pg.iw * M));
      if (with_nan)
        for (size_t i = 7; i < in.size(); i += 97) in[i] = kNaN;
      std::vector<float> want(size_t(M * p.PH * p.PW)), got(want.size(), -7.0f), tmp(size_t(p.PW * M));
      for (int64_t m = 0; m < M; ++m)
        for (int64_t r = 0; r < p.PH; ++r)
          for (int64_t q = 0; q < p.PW; ++q) {
            float v = -kInf;
            for (int64_t i = 0; i < pg.kh; ++i)
              for (int64_t j = 0; j < pg.kw; ++j) {
                const int64_t h = r * pg.s - pg.p + i, c = q * pg.s - pg.p + j;
                if (h < 0 || h >= pg.ih || c < 0 || c >= pg.iw) continue;
                const float e = in[size_t((h * pg.iw + c) * M + m)];
                if (e > v || std::isnan(e)) v = e;
                if (std::isnan(v)) break;
              }
            want[size_t((m * p.PH + r) * p.PW + q)] = v;
          }
      // All rows at once, then the rows from PH / 2 on from a band starting at its first
      // window's first row.
      maxpool_hwc_to_planes(p, in.data(), 0, p.PH, got.data(), tmp.data(), with_nan != 0);
      auto same = [&](const std::vector<float>& a, const std::vector<float>& b) {
        for (size_t i = 0; i < a.size(); ++i)
          if (!(a[i] == b[i] || (std::isnan(a[i]) && std::isnan(b[i])))) return false;
        return true;
      };
      CHECK_MESSAGE(same(got, want), "hwc pool " << pg.kh << "x" << pg.kw << " on " << pg.ih << "x" << pg.iw << ", nan " << with_nan);
      const int64_t r0 = p.PH / 2, row0 = std::max<int64_t>(0, r0 * pg.s - pg.p);
      HwcPool band = p;
      band.row0 = row0;
      std::fill(got.begin(), got.end(), -7.0f);
      maxpool_hwc_to_planes(band, in.data() + row0 * pg.iw * M, r0, p.PH, got.data(), tmp.data(), with_nan != 0);
      bool band_ok = true;
      for (int64_t m = 0; m < M; ++m)
        for (int64_t r = 0; r < p.PH; ++r)
          for (int64_t q = 0; q < p.PW; ++q) {
            const size_t i = size_t((m * p.PH + r) * p.PW + q);
            const float expect = r >= r0 ? want[i] : -7.0f;
            if (!(got[i] == expect || (std::isnan(got[i]) && std::isnan(expect)))) band_ok = false;
          }
      CHECK_MESSAGE(band_ok, "hwc pool band " << pg.kh << "x" << pg.kw << " on " << pg.ih << "x" << pg.iw);
      ++pools;
    }
  CHECK(pools == 10);
}

TEST_CASE("plan_conv widens column blocks for small K only, keeping 8 per thread") {
  const int64_t nr = gemm_nr();
  ConvShape s;  // 1x1, 4 -> 7 channels over 70x70: B is 4 rows
  s.C = 4;
  s.M = 7;
  s.in[1] = s.in[2] = s.out[1] = s.out[2] = 70;
  const ConvPlan one = plan_conv(s, 1);
  CHECK(one.nc > 8 * nr);
  CHECK(one.kc * one.nc * int64_t(sizeof(float)) <= 64 * 1024);
  CHECK(one.col_blocks >= 8);
  const ConvPlan two = plan_conv(s, 2);
  CHECK(two.col_blocks >= 16);
  CHECK(two.nc <= one.nc);
  s.C = 256;  // K = 256: a block of 8 panels is already over 64 KB
  CHECK(plan_conv(s, 1).nc == 8 * nr);
}

TEST_CASE("plan_conv splits K for pointwise convs whose X rows share few L1 sets") {
  const int64_t nr = gemm_nr();
  ConvShape s;  // 1x1, 32 -> 16 channels
  s.C = 32;
  s.M = 16;
  s.in[1] = s.out[1] = 112;
  s.in[2] = s.out[2] = 112;  // rows 49 KB apart: 4 set pairs
  // (tall tiles, AVX-512, read each B strip once: nothing to keep in L1, one k-block)
  CHECK(plan_conv(s, 1).kc == (gemm_tall_pays(16) ? 32 : nr >= 16 ? 16 : 32));
  s.M = 48;  // more output channels: the copy is amortised, one k-block
  CHECK(plan_conv(s, 1).kc == 32);
  s.M = 16;
  s.in[1] = s.out[1] = s.in[2] = s.out[2] = 56;  // 16 set pairs: one k-block
  CHECK(plan_conv(s, 1).kc == 32);
  s.in[1] = s.out[1] = s.in[2] = s.out[2] = 55;  // rows start mid-line: spread
  CHECK(plan_conv(s, 1).kc == 32);
  // 32-wide strips (AVX-512): 256 -> 64 and 256 -> 128 at 56x56 (16 sets) in blocks of at
  // most 12 rows a set, read in place; at 55x55 (rows mid-line) one block of 256.
  for (int64_t M : {64, 128}) {
    s.C = 256;
    s.M = M;
    s.in[1] = s.out[1] = s.in[2] = s.out[2] = 56;
    if (nr >= 32) CHECK(plan_conv(s, 1).kc == 128);
    s.in[1] = s.out[1] = s.in[2] = s.out[2] = 55;
    if (nr >= 32) CHECK(plan_conv(s, 1).kc == 256);
  }
}

TEST_CASE("plan_conv takes deep K blocks on small maps, at least one per worker for a shared B") {
  const int64_t nr = gemm_nr();
  // 3x3 512 -> 512 at 7x7 (K = 4608, 49 pixels: at most 2 panels at NR 32, as AVX2's
  // 16-wide panels take deep blocks on every map): blocks of up to 1024 rows while B stays
  // within 256 KB; NEON / SSE4 (NR 8) keep 256.
  ConvShape s = shape_of({1, 512, 512, 1, {1, 7, 7}, {1, 3, 3}, {1, 1, 1}, {1, 1, 1}, {0, 1, 1}, {0, 1, 1}});
  const ConvPlan one = plan_conv(s, 1);
  if (nr >= 16) {
    CHECK(one.kc > 256);
    CHECK(one.kc <= 1024);
    CHECK(one.kc * s.P() * int64_t(sizeof(float)) <= 256 * 1024);
  } else {
    CHECK(one.kc == 256);
  }
  // 1x1 stride 2, 1024 -> 2048 to 7x7: one k-block on one thread at NR 16 and 32; on
  // several, the row chunks share B, and it comes in as many k-blocks as workers (at most
  // one per 256 rows) so that all of them build it.
  s = shape_of({1, 1024, 2048, 1, {1, 13, 13}, {1, 1, 1}, {1, 2, 2}, {1, 1, 1}, {0, 0, 0}, {0, 0, 0}});
  REQUIRE(s.P() == 49);
  if (nr >= 16) CHECK(plan_conv(s, 1).kc == 1024);
  int shared = 0;
  for (int threads : {2, 3, 4, 8}) {
    ConvPlan p = plan_conv(s, threads);
    CHECK(p.kc * std::min<int64_t>(threads, 4) <= 1024 + 256);
    if (p.m_chunks > 1 && p.col_blocks == 1) {
      CHECK(p.shared_b_floats > 0);
      CHECK(p.k_blocks >= std::min(threads, 4));
      CHECK(conv_shared_b_floats(s) >= p.shared_b_floats);
      ++shared;
    }
  }
  CHECK(shared > 0);
  // Larger maps keep 256 with 32-wide panels (the 3x3 stride-2 256 at 14x14 lost with more).
  s = shape_of({1, 256, 256, 1, {1, 27, 27}, {1, 3, 3}, {1, 2, 2}, {1, 1, 1}, {0, 1, 1}, {0, 1, 1}});
  REQUIRE(s.P() == 196);
  if (nr >= 32) CHECK(plan_conv(s, 1).kc <= 256);
}

TEST_CASE("plan_conv shares B between row chunks for 1x1 convs with a large W on small maps") {
  const int64_t nr = gemm_nr();
  // 2 NR < P <= 8 NR at every NR (NR 32, 16, 8: 196, 100, 49 pixels)
  const int64_t side = nr == 32 ? 14 : nr == 16 ? 10 : 7;
  for (int64_t stride : {1, 2}) {
    const int64_t in = stride == 1 ? side : 2 * side - 1;
    ConvShape s = shape_of({1, 256, 1024, 1, {1, in, in}, {1, 1, 1}, {1, stride, stride}, {1, 1, 1}, {0, 0, 0}, {0, 0, 0}});
    REQUIRE(s.P() == side * side);
    const ConvPlan two = plan_conv(s, 2);
    CHECK(two.col_blocks == 1);
    CHECK(two.m_chunks >= 4);  // two chunks a worker
    CHECK(two.shared_b_floats > 0);
    CHECK(conv_shared_b_floats(s) >= two.shared_b_floats);
    CHECK(plan_conv(s, 1).shared_b_floats == 0);
    // a small W (64 -> 384: 96 KB) keeps the split search's plan, without a shared B
    s = shape_of({1, 64, 384, 1, {1, side, side}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}, {0, 0, 0}});
    CHECK(plan_conv(s, 2).shared_b_floats == 0);
  }
}

TEST_CASE("plan_conv splits K over the workers for deep pointwise convs on small maps") {
  const auto pw = [](int64_t C, int64_t M, int64_t side) {
    return shape_of({1, C, M, 1, {1, side, side}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}, {0, 0, 0}});
  };
  const ConvShape s = pw(576, 96, 14);
  const ConvPlan two = plan_conv(s, 2);
  CHECK(two.k_parts == 2);
  CHECK(two.tasks == 2);
  CHECK(two.part_k % two.kc == 0);                       // whole k-blocks a part
  CHECK(two.part_k < s.K());                              // the last part is not empty
  CHECK(two.part_k * 2 >= s.K());
  CHECK(two.m_chunks == 1);                               // each part: all rows, all pixels
  CHECK(two.col_blocks == plan_conv(s, 1).col_blocks);
  CHECK(plan_conv(pw(700, 9, 13), 3).k_parts == 3);
  CHECK(plan_conv(s, 1).k_parts == 1);                    // one thread
  CHECK(plan_conv(s, 8).k_parts == 1);                    // more workers than parts pay
  CHECK(plan_conv(pw(192, 64, 14), 2).k_parts == 1);      // under 192 rows a part
  CHECK(plan_conv(pw(512, 2048, 7), 2).k_parts == 1);     // K < 2 M: the partials cost more
  CHECK(plan_conv(pw(1024, 512, 7), 2).k_parts == 2);
  CHECK(plan_conv(pw(576, 96, 28), 2).k_parts == 1);      // a larger map splits pixels
  ConvShape strided = shape_of({1, 576, 96, 1, {1, 27, 27}, {1, 1, 1}, {1, 2, 2}, {1, 1, 1}, {0, 0, 0}, {0, 0, 0}});
  CHECK(plan_conv(strided, 2).k_parts == 1);              // a strided 1x1: B gathered
  ConvShape three = shape_of({1, 256, 256, 1, {1, 28, 28}, {1, 3, 3}, {1, 2, 2}, {1, 1, 1}, {0, 1, 1}, {0, 1, 1}});
  CHECK(plan_conv(three, 2).k_parts == 2);                // resnet50's 3x3 stride 2 at 14x14
  CHECK(plan_conv(three, 2).shared_b_floats == 0);
  // Larger maps and shallower parts only with X written by channels (a depthwise before
  // it): mobilenet_v2's projections at 56x56 and 28x28, not resnet50's 256 -> 64 at 56x56
  // (partial sums over 128 Ki floats) nor 3x3 convs.
  CHECK(plan_conv(pw(96, 24, 56), 2).k_parts == 1);
  CHECK(plan_conv(pw(96, 24, 56), 2, true).k_parts == 2);
  CHECK(plan_conv(pw(192, 32, 28), 2, true).k_parts == 2);
  CHECK(plan_conv(pw(192, 64, 14), 2, true).k_parts == 2);
  CHECK(plan_conv(pw(256, 64, 56), 2, true).k_parts == 1);
  CHECK(plan_conv(pw(48, 24, 56), 2, true).k_parts == 1);  // parts of 24 rows
  ConvShape three28 = shape_of({1, 128, 128, 1, {1, 28, 28}, {1, 3, 3}, {1, 1, 1}, {1, 1, 1}, {0, 1, 1}, {0, 1, 1}});
  CHECK(plan_conv(three28, 2, true).k_parts == 1);
}

TEST_CASE("plan_conv gives tails a little over half a panel to a half tile and dots") {
  const int64_t nr = gemm_nr();
  ConvShape s;  // 1x1, 64 -> 64 channels over a P-pixel row
  s.C = s.M = 64;
  for (int64_t P : {nr + nr / 2 + 1, 2 * nr + nr / 2 + nr / 4, nr + nr / 2 + nr / 4 + 1, 16 * nr + nr / 2 + 1,
                    17 * nr + nr / 2 + 1, nr + nr / 4, nr + nr / 2}) {
    s.in[2] = s.out[2] = P;
    const int64_t tail = P % nr;
    const bool half = tail > nr / 2 && tail - nr / 2 <= nr / 4 && P <= 16 * nr;
    const int64_t want = tail <= nr / 4 ? tail : half ? tail - nr / 2 : 0;
    CHECK_MESSAGE(plan_conv(s, 1).dot_cols == want, "P " << P << ", NR " << nr);
  }
}

TEST_CASE("Winograd F(2x2, 3x3) and F(4x4, 3x3) convolutions match the reference") {
  std::mt19937 rng(17);
  // 3x3 stride 1: odd and even output sizes (tiles half outside), 1-pixel maps, pads 0-2
  // (asymmetric), channel counts around the 6-row tile and the k-block (C > 256: two
  // k-blocks), tile counts around the panel width and the block, batches.
  const ConvCase cases[] = {
      {1, 16, 16, 1, {1, 8, 8}, {1, 3, 3}, {1, 1, 1}, {1, 1, 1}, {0, 1, 1}, {0, 1, 1}},
      {2, 5, 7, 1, {1, 11, 13}, {1, 3, 3}, {1, 1, 1}, {1, 1, 1}, {0, 1, 0}, {0, 2, 1}},
      {1, 3, 1, 1, {1, 3, 3}, {1, 3, 3}, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}, {0, 0, 0}},
      {1, 7, 13, 1, {1, 1, 1}, {1, 3, 3}, {1, 1, 1}, {1, 1, 1}, {0, 1, 1}, {0, 1, 1}},
      {1, 64, 70, 1, {1, 7, 7}, {1, 3, 3}, {1, 1, 1}, {1, 1, 1}, {0, 1, 1}, {0, 1, 1}},
      {1, 300, 11, 1, {1, 6, 5}, {1, 3, 3}, {1, 1, 1}, {1, 1, 1}, {0, 1, 1}, {0, 1, 1}},
      {1, 24, 40, 1, {1, 37, 29}, {1, 3, 3}, {1, 1, 1}, {1, 1, 1}, {0, 2, 0}, {0, 1, 2}},
      {1, 9, 6, 1, {1, 70, 66}, {1, 3, 3}, {1, 1, 1}, {1, 1, 1}, {0, 1, 1}, {0, 1, 1}},
      // a last panel a little over half full: the one-vector tile and dot columns (49
      // tiles = 32 + 16 + 1 at NR 32, also over two k-blocks; 56 = 32 + 16 + 8: pairs;
      // 42 = 2 * 16 + 8 + 2 and 9 = 8 + 1 at NR 16)
      {1, 20, 14, 1, {1, 13, 13}, {1, 3, 3}, {1, 1, 1}, {1, 1, 1}, {0, 1, 1}, {0, 1, 1}},
      {1, 300, 7, 1, {1, 13, 13}, {1, 3, 3}, {1, 1, 1}, {1, 1, 1}, {0, 1, 1}, {0, 1, 1}},
      {1, 12, 9, 1, {1, 14, 16}, {1, 3, 3}, {1, 1, 1}, {1, 1, 1}, {0, 1, 1}, {0, 1, 1}},
      {2, 32, 32, 1, {1, 28, 29}, {1, 3, 3}, {1, 1, 1}, {1, 1, 1}, {0, 1, 1}, {0, 1, 1}},
  };
  for (int tile : {2, 4})
  for (const ConvCase& c : cases)
    for (bool clamp : {false, true}) {
      const ConvShape s = shape_of(c);
      REQUIRE(winograd_applies(s));
      CAPTURE(tile);
      const std::vector<float> x = randn(rng, size_t(s.N * s.C * s.Pin()));
      const std::vector<float> w = randn(rng, size_t(s.M * s.K()));
      const std::vector<float> bias = randn(rng, size_t(s.M));
      const float lo = clamp ? 0.0f : -kInf, hi = clamp ? 6.0f : kInf;
      std::vector<float> want(size_t(s.N * s.M * s.P())), got(want.size(), kNaN);
      conv_ref(s, x.data(), w.data(), bias.data(), want.data(), lo, hi);
      const WinogradWeights ww = pack_winograd(w.data(), s.M, s.C, clamp ? bias.data() : nullptr, tile);
      const WinogradPlan p = plan_winograd(s, tile);
      CHECK(p.nt % gemm_nr() == 0);
      CHECK((ww.m == tile && p.m == tile && p.nn == (tile + 2) * (tile + 2)));
      std::vector<float> xp(size_t(p.pad_floats), kNaN), slot(size_t(p.slot_floats), kNaN);
      for (int64_t n = 0; n < s.N; ++n) {
        // Two halves of the channels, as two workers would pad them.
        winograd_pad_input(s, p, x.data() + n * s.C * s.Pin(), 0, s.C / 2, xp.data());
        winograd_pad_input(s, p, x.data() + n * s.C * s.Pin(), s.C / 2, s.C, xp.data());
        // By rows, as workers taking runs of blocks pad them (ConvPacked::run_winograd):
        // three parts split where blocks split, the same padded input.
        {
          std::vector<float> xr(xp.size(), kNaN);
          const int64_t cut[4] = {0, p.blocks / 3, 2 * p.blocks / 3, p.blocks};
          for (int part = 0; part < 3; ++part)
            winograd_pad_input_rows(s, p, x.data() + n * s.C * s.Pin(), winograd_block_pad_row(p, cut[part]),
                                    winograd_block_pad_row(p, cut[part + 1]), xr.data());
          CHECK(winograd_block_pad_row(p, p.blocks) == p.hp);
          CHECK(std::memcmp(xr.data(), xp.data(), size_t(s.C * p.hp * p.wp) * sizeof(float)) == 0);
        }
        for (int64_t b = p.blocks - 1; b >= 0; --b)
          winograd_block(s, ww, p, b, xp.data(), got.data() + n * s.M * s.P(), slot.data(), lo, hi);
        // The same block in phases, as workers sharing one block run it (input channels
        // in two parts, then output channels in two parts split at a row panel): the
        // same arithmetic, the same floats.
        if (p.blocks == 1) {
          std::vector<float> phased(size_t(s.M * s.P()), kNaN), slot2(slot.size(), kNaN);
          const int64_t msplit = std::min(s.M, (s.M / 2 + kGemmMR - 1) / kGemmMR * kGemmMR);
          const int64_t nr = gemm_nr(), vxi = winograd_stride(p.nt * s.C);
          winograd_block_input(s, p, 0, xp.data(), slot2.data(), s.C / 2, s.C);
          // A part leaves the other channels' V alone (workers run parts concurrently).
          for (int64_t e = 0; e < p.nn; ++e)
            for (int64_t q = 0; q < p.nt / nr; ++q)
              for (int64_t c = 0; c < s.C / 2; ++c)
                for (int64_t l = 0; l < nr; ++l)
                  REQUIRE(std::isnan(slot2[size_t(e * vxi + (q * s.C + c) * nr + l)]));
          winograd_block_input(s, p, 0, xp.data(), slot2.data(), 0, s.C / 2);
          winograd_block_rows(s, ww, p, 0, phased.data(), slot2.data(), slot2.data() + p.in_floats, lo, hi, nullptr, msplit, s.M);
          for (int64_t i = 0; i < msplit * s.P(); ++i) REQUIRE(std::isnan(phased[size_t(i)]));
          winograd_block_rows(s, ww, p, 0, phased.data(), slot2.data(), slot2.data() + p.in_floats, lo, hi, nullptr, 0, msplit);
          for (size_t i = 0; i < phased.size(); ++i)
            REQUIRE_MESSAGE(std::memcmp(&phased[i], &got[size_t(n * s.M * s.P()) + i], sizeof(float)) == 0,
                            "phased block differs at " << i << ", " << describe(s));
          // Or each worker transforms every channel into an input part of its own and
          // computes its output channels through one shared M: the same floats again.
          std::vector<float> own(size_t(s.M * s.P()), kNaN), in_a(size_t(p.in_floats), kNaN),
              in_b(in_a), m(size_t(p.m_floats), kNaN);
          winograd_block_input(s, p, 0, xp.data(), in_b.data(), 0, s.C);
          winograd_block_rows(s, ww, p, 0, own.data(), in_b.data(), m.data(), lo, hi, nullptr, msplit, s.M);
          winograd_block_input(s, p, 0, xp.data(), in_a.data(), 0, s.C);
          winograd_block_rows(s, ww, p, 0, own.data(), in_a.data(), m.data(), lo, hi, nullptr, 0, msplit);
          for (size_t i = 0; i < own.size(); ++i)
            REQUIRE_MESSAGE(std::memcmp(&own[i], &got[size_t(n * s.M * s.P()) + i], sizeof(float)) == 0,
                            "block from private input parts differs at " << i << ", " << describe(s));
          // Or each worker also has an M of its own holding only its rows (m_own), sized
          // exactly: the sanitizer build catches a read past it.
          std::vector<float> rows(size_t(s.M * s.P()), kNaN),
              m_a(size_t(winograd_rows_m_floats(p, msplit)), kNaN), m_b(size_t(winograd_rows_m_floats(p, s.M - msplit)), kNaN);
          CHECK(winograd_rows_m_floats(p, s.M) == p.m_floats);
          winograd_block_rows(s, ww, p, 0, rows.data(), in_b.data(), m_b.data(), lo, hi, nullptr, msplit, s.M, true);
          for (int64_t i = 0; i < msplit * s.P(); ++i) REQUIRE(std::isnan(rows[size_t(i)]));
          winograd_block_rows(s, ww, p, 0, rows.data(), in_a.data(), m_a.data(), lo, hi, nullptr, 0, msplit, true);
          for (size_t i = 0; i < rows.size(); ++i)
            REQUIRE_MESSAGE(std::memcmp(&rows[i], &got[size_t(n * s.M * s.P()) + i], sizeof(float)) == 0,
                            "block through per-worker M rows differs at " << i << ", " << describe(s));
        }
      }
      if (!clamp) {  // packed without the bias: add it to the reference's comparison
        for (int64_t n = 0; n < s.N; ++n)
          for (int64_t m = 0; m < s.M; ++m)
            for (int64_t i = 0; i < s.P(); ++i) got[size_t((n * s.M + m) * s.P() + i)] += bias[size_t(m)];
      }
      expect_close(got, want, "winograd " + describe(s));
      // Runs of tiles as workers take them (ConvPacked::run_winograd): three runs cut at
      // multiples of winograd_run_align(), each padding only the rows it reads into a
      // buffer of its own, then its tiles in blocks of nt from the run's start.
      {
        std::vector<float> runs(got.size(), kNaN);
        const int64_t align = winograd_run_align(), items = (p.tiles + align - 1) / align;
        for (int64_t n = 0; n < s.N; ++n)
          for (int part = 0; part < 3; ++part) {
            const int64_t ta = items * part / 3 * align, tb = std::min(p.tiles, items * (part + 1) / 3 * align);
            if (ta >= tb) continue;
            int64_t r0 = 0, r1 = 0;
            winograd_tiles_rows(p, ta, tb, &r0, &r1);
            const WinogradPlan pr = winograd_worker_rows(p, r0, r1);
            std::vector<float> rows(size_t(s.C * pr.hp * pr.wp + kWinogradInputSlackFloats), kNaN);
            winograd_pad_input_rows(s, pr, x.data() + n * s.C * s.Pin(), r0, r1, rows.data());
            std::fill(slot.begin(), slot.end(), kNaN);
            for (int64_t t0 = ta; t0 < tb; t0 += p.nt)
              winograd_tiles(s, ww, pr, t0, std::min(p.nt, tb - t0), rows.data(), runs.data() + n * s.M * s.P(),
                             slot.data(), lo, hi);
          }
        if (!clamp)
          for (int64_t n = 0; n < s.N; ++n)
            for (int64_t m = 0; m < s.M; ++m)
              for (int64_t i = 0; i < s.P(); ++i) runs[size_t((n * s.M + m) * s.P() + i)] += bias[size_t(m)];
        expect_close(runs, want, "winograd in runs of tiles " + describe(s));
      }
      if (!clamp) continue;
      // A fused residual addend in y's own memory (y holds it when the block runs).
      const std::vector<float> addend = randn(rng, want.size());
      got = addend;
      for (int64_t n = 0; n < s.N; ++n) {
        winograd_pad_input(s, p, x.data() + n * s.C * s.Pin(), 0, s.C, xp.data());
        float* yn = got.data() + n * s.M * s.P();
        for (int64_t b = 0; b < p.blocks; ++b) winograd_block(s, ww, p, b, xp.data(), yn, slot.data(), lo, hi, yn);
      }
      expect_close(got, conv_ref_with_addend(s, x, w, bias, addend, lo, hi), "winograd onto the addend in y " + describe(s));
    }
}

TEST_CASE("direct depthwise convolution matches the reference") {
  std::mt19937 rng(13);
  int count = 0;
  for (int64_t k : {1, 3, 5})
    for (int64_t st : {1, 2, 3})
      for (int64_t dil : {1, 2})
        for (int64_t pad : {0, 1, 2})
          for (int64_t w : {1, 7, 17, 34, 43, 53}) {  // row tails of 1-3 vectors
            const int64_t h = 9;
            if ((k - 1) * dil + 1 > w + 2 * pad || (k - 1) * dil + 1 > h + 2 * pad) continue;
            const int64_t C = 3, mult = (w == 17) ? 2 : 1;
            ConvCase c{1, C, C * mult, C, {1, h, w}, {1, k, k}, {1, st, st}, {1, dil, dil},
                       {0, pad, pad + (w % 2)}, {0, pad, pad}};
            check_conv(rng, c, true, count % 2 == 0, 1);
            ++count;
          }
  // mobilenet-like planes: 112x112 / 56x56, stride 1 and 2, more than one image
  const ConvCase big[] = {
      {1, 4, 4, 4, {1, 112, 112}, {1, 3, 3}, {1, 2, 2}, {1, 1, 1}, {0, 0, 0}, {0, 1, 1}},
      {2, 3, 3, 3, {1, 56, 56}, {1, 3, 3}, {1, 1, 1}, {1, 1, 1}, {0, 1, 1}, {0, 1, 1}},
      {1, 2, 2, 2, {1, 14, 14}, {1, 5, 5}, {1, 2, 2}, {1, 1, 1}, {0, 2, 2}, {0, 2, 2}},
      {1, 2, 2, 2, {1, 1, 40}, {1, 1, 3}, {1, 1, 1}, {1, 1, 1}, {0, 0, 1}, {0, 0, 1}},
  };
  for (const ConvCase& c : big) check_conv(rng, c, true, false, 1);
  CHECK(count > 100);
  // Channel-blocked: channels a multiple of the vector width (one and three blocks, two
  // images), the planes where it is used (7x7, 14x14, 28x28) and odd ones, strides 1-3,
  // pads, dilation, 1x1 to 5x5 filters.
  const int64_t L = dwconv_block_lanes();
  int blocked = 0;
  for (int64_t k : {1, 3, 5})
    for (int64_t st : {1, 2, 3})
      for (int64_t dil : {1, 2})
        for (int64_t pad : {0, 1, 2})
          for (int64_t hw : {1, 5, 7, 14, 15, 28}) {
            if ((k - 1) * dil + 1 > hw + 2 * pad) continue;
            const int64_t C = L * (1 + 2 * (blocked % 2)), N = 1 + blocked % 3 % 2;
            ConvCase c{N, C, C, C, {1, hw, hw + blocked % 2}, {1, k, k}, {1, st, st}, {1, dil, dil},
                       {0, pad, pad}, {0, pad, pad + (hw % 2)}};
            if (!dwconv_block_applies(shape_of(c))) continue;
            check_conv(rng, c, true, blocked % 2 == 0, 1);
            ++blocked;
          }
  if (L > 1) CHECK(blocked > 100);
  // Large planes go through the blocks in chunks of output rows (kDwChunkPixels): whole
  // vectors of pixels per chunk (56, 112 wide) and not (55, 31: gathered tails).
  const ConvCase big_blocked[] = {
      {1, L, L, L, {1, 112, 112}, {1, 3, 3}, {1, 2, 2}, {1, 1, 1}, {0, 0, 0}, {0, 1, 1}},
      {2, 2 * L, 2 * L, 2 * L, {1, 56, 56}, {1, 3, 3}, {1, 1, 1}, {1, 1, 1}, {0, 1, 1}, {0, 1, 1}},
      {1, L, L, L, {1, 55, 55}, {1, 3, 3}, {1, 1, 1}, {1, 1, 1}, {0, 1, 1}, {0, 1, 1}},
      {1, L, L, L, {1, 57, 63}, {1, 5, 3}, {1, 2, 2}, {1, 2, 1}, {0, 2, 0}, {0, 1, 1}},
  };
  for (const ConvCase& c : big_blocked)
    if (dwconv_block_applies(shape_of(c))) check_conv(rng, c, true, true, 1);
}

namespace {

// One pointwise expand (K -> C channels, bias b1, clamp [lo1, hi1]) fused into the
// channel-blocked depthwise c (dwconv_expand_block over every block) against the two
// references one after the other. W1 goes in k-major with a row stride past C (wt_stride),
// so the kernel must not assume a dense copy; biases present or not.
void check_expand_dw(std::mt19937& rng, const ConvCase& c, int64_t K, bool clamp1, bool clamp2, bool biases) {
  const ConvShape s = shape_of(c);
  REQUIRE(dwconv_block_applies(s));
  ConvShape pw;  // the expand: 1x1, stride 1, no padding, onto the depthwise's input
  pw.N = s.N, pw.C = K, pw.M = s.C, pw.group = 1;
  for (int i = 0; i < 3; ++i) pw.in[i] = pw.out[i] = s.in[i], pw.k[i] = pw.s[i] = pw.d[i] = 1, pw.pb[i] = 0;
  const std::vector<float> x = randn(rng, size_t(s.N * K * s.Pin()));
  const std::vector<float> w1 = randn(rng, size_t(s.C * K)), b1 = randn(rng, size_t(s.C));
  const std::vector<float> w = randn(rng, size_t(s.M * s.K())), bias = randn(rng, size_t(s.M));
  const float lo1 = clamp1 ? 0.0f : -kInf, hi1 = clamp1 ? 0.5f : kInf;
  const float lo = clamp2 ? -0.25f : -kInf, hi = clamp2 ? 6.0f : kInf;
  std::vector<float> e(size_t(s.N * s.C * s.Pin()));
  conv_ref(pw, x.data(), w1.data(), biases ? b1.data() : nullptr, e.data(), lo1, hi1);
  std::vector<float> want(size_t(s.N * s.M * s.P())), got(want.size(), kNaN);
  conv_ref(s, e.data(), w.data(), biases ? bias.data() : nullptr, want.data(), lo, hi);
  const int64_t L = dwconv_block_lanes(), stride = s.C + L + 3;
  std::vector<float> wt(size_t(K * stride), kNaN);
  for (int64_t k = 0; k < K; ++k)
    for (int64_t ch = 0; ch < s.C; ++ch) wt[size_t(k * stride + ch)] = w1[size_t(ch * K + k)];
  DwExpand ex;
  ex.K = K, ex.wt_stride = stride, ex.wt = wt.data(), ex.bias = biases ? b1.data() : nullptr, ex.lo = lo1, ex.hi = hi1;
  std::vector<float> slot(size_t(dwconv_block_slot_floats(s)), kNaN);
  for (int64_t b = s.N * s.M / L - 1; b >= 0; --b)  // last block first, one slot reused as a worker would
    dwconv_expand_block(s, b, ex, x.data(), w.data(), biases ? bias.data() : nullptr, got.data(), slot.data(), lo, hi);
  expect_close(got, want, "dwconv_expand_block K" + std::to_string(K) + " " + describe(s));
  // By row parts (three, uneven, the last first; each expands the rows its taps read):
  // the same floats as the whole block.
  std::vector<float> parts(got.size(), kNaN);
  const int64_t OH = s.out[1], cut[4] = {0, OH / 3, OH / 3 + (OH + 1) / 2, OH};
  for (int part = 2; part >= 0; --part)
    for (int64_t b = 0; b < s.N * s.M / L; ++b)
      dwconv_expand_block(s, b, cut[part], cut[part + 1], ex, x.data(), w.data(), biases ? bias.data() : nullptr,
                          parts.data(), slot.data(), lo, hi);
  for (size_t i = 0; i < parts.size(); ++i)
    REQUIRE_MESSAGE(std::memcmp(&parts[i], &got[i], sizeof(float)) == 0,
                    "dwconv_expand_block by rows differs at " << i << ", K" << K << " " << describe(s));
}

}  // namespace

TEST_CASE("pointwise expand fused into the channel-blocked depthwise matches the two references") {
  const int64_t L = dwconv_block_lanes();
  if (L <= 1) return;  // no channel blocks on this target
  std::mt19937 rng(29);
  // Maps of 1 to 28 pixels a side (widths that leave 1-7 pixels for the last group of
  // eight, rows of 1), 3x3 and 5x5, strides 1-2, pads 0-2 (asymmetric), dilation, one and
  // three channel blocks, two images, K of 1 to 24.
  int count = 0;
  for (int64_t k : {3, 5})
    for (int64_t st : {1, 2})
      for (int64_t pad : {0, 1, 2})
        for (int64_t hw : {1, 3, 7, 9, 14, 15, 28}) {
          const int64_t dil = 1 + count % 5 / 4;
          if ((k - 1) * dil + 1 > hw + 2 * pad) continue;
          const int64_t C = L * (1 + 2 * (count % 2)), N = 1 + count % 3 % 2;
          const int64_t K = std::vector<int64_t>{1, 3, 8, 17, 24}[size_t(count % 5)];
          const ConvCase c{N, C, C, C, {1, hw, hw + count % 3}, {1, k, k}, {1, st, st}, {1, dil, dil},
                           {0, pad, pad}, {0, pad, pad + (hw % 2)}};
          if (!dwconv_block_applies(shape_of(c))) continue;
          check_expand_dw(rng, c, K, count % 2 == 0, count % 3 != 0, count % 4 != 3);
          ++count;
        }
  CHECK(count > 50);
  // Planes computed in several chunks of output rows, whose last padded rows the next chunk
  // keeps (moved, not computed again): mobilenet_v2's 112x112 stride 2 and 56x56 stride 1,
  // odd sizes, a 1-wide column.
  const ConvCase big[] = {
      {1, L, L, L, {1, 112, 112}, {1, 3, 3}, {1, 2, 2}, {1, 1, 1}, {0, 0, 0}, {0, 1, 1}},
      {2, L, L, L, {1, 56, 56}, {1, 3, 3}, {1, 1, 1}, {1, 1, 1}, {0, 1, 1}, {0, 1, 1}},
      {1, 2 * L, 2 * L, 2 * L, {1, 55, 41}, {1, 5, 3}, {1, 1, 2}, {1, 1, 1}, {0, 2, 1}, {0, 2, 0}},
      {1, L, L, L, {1, 300, 1}, {1, 3, 3}, {1, 1, 1}, {1, 2, 1}, {0, 2, 1}, {0, 2, 1}},
  };
  for (const ConvCase& c : big) check_expand_dw(rng, c, 7, true, true, true);
}

TEST_CASE("depthwise 3x3 rows in bands, each anywhere in memory, match the reference") {
  // dwconv_rows (ConvPacked's depthwise -> 1x1 fusion): bands of 2 or 4 output rows from
  // even rows on, the last one ending on any row, each written ys floats a row apart
  // (nothing between the rows touched); stride 1 and 2, two images.
  std::mt19937 rng(29);
  const int64_t L = dwconv_block_lanes();
  int applied = 0, count = 0;
  for (int64_t st : {1, 2})
    for (int64_t ow : {int64_t(3), L + 1, 4 * L + 1, int64_t(112)})
      for (int64_t h : {1, 5, 8}) {
        const int64_t w = st == 1 ? ow : 2 * ow, hin = st == 1 ? h : 2 * h - 1;
        const ConvCase c{2, 3, 3, 3, {1, hin, w}, {1, 3, 3}, {1, st, st}, {1, 1, 1}, {0, 1, 1}, {0, 1, st == 1 ? 1 : 0}};
        const ConvData d = conv_data(rng, c);
        const ConvShape& s = d.s;
        REQUIRE(dwconv_rows_shape(s));
        REQUIRE(s.out[1] == h);
        REQUIRE(s.out[2] == ow);
        ++count;
        if (!dwconv_rows_applies(s)) continue;
        ++applied;
        const bool clamp = count % 2 == 0;
        const float lo = clamp ? 0.0f : -kInf, hi = clamp ? 0.5f : kInf;
        std::vector<float> want(d.ref.size());
        for (size_t i = 0; i < want.size(); ++i) want[i] = std::min(std::max(d.ref[i], lo), hi);
        for (int64_t band : {2, 4}) {
          const int64_t ys = ow + 3, planes = s.N * s.M;
          std::vector<float> buf(size_t(planes * h * ys), kNaN), got(want.size());
          for (int64_t plane = 0; plane < planes; ++plane)
            for (int64_t oh0 = 0; oh0 < h; oh0 += band)
              dwconv_rows(s, plane, oh0, std::min(h, oh0 + band), d.x.data(), d.w.data(), d.bias.data(),
                          buf.data() + (plane * h + oh0) * ys, ys, lo, hi);
          bool gaps_untouched = true;
          for (int64_t r = 0; r < planes * h; ++r) {
            for (int64_t o = 0; o < ow; ++o) got[size_t(r * ow + o)] = buf[size_t(r * ys + o)];
            for (int64_t o = ow; o < ys; ++o) gaps_untouched = gaps_untouched && std::isnan(buf[size_t(r * ys + o)]);
          }
          expect_close(got, want, "dwconv_rows bands of " + std::to_string(band) + " " + describe(s));
          CHECK_MESSAGE(gaps_untouched, describe(s));
        }
      }
  if (std::string(simd_target_name()).rfind("AVX3", 0) == 0) CHECK(applied == count);
  else CHECK(applied == 0);
}

TEST_CASE("depthwise 3x3 planes read in rows (stride 1 and 2) match the reference") {
  // dwconv_plane computes 3x3 "same" layers (stride 1; stride 2 with padding 0 or 1 after)
  // on X's rows in place (AVX-512): masked loads at both ends of a row, groups of 1-4
  // vectors, two output rows at a time (odd heights end on one). Widths around every
  // vector edge of the output, 1-row maps, two images.
  std::mt19937 rng(17);
  const int64_t L = dwconv_block_lanes();
  int rows_cases = 0, count = 0;
  for (int64_t st : {1, 2})
    for (int64_t ow : {int64_t(1), int64_t(2), L - 1, L, L + 1, 2 * L - 1, 2 * L + 1, 3 * L, 3 * L + 2,
                       4 * L, 4 * L + 1, 5 * L - 3, 7 * L, int64_t(56), int64_t(112)})
      for (int64_t h : {1, 2, 3, 5, 8}) {
        // stride 2: inputs 2 ow (padding 0 or 1 after) or 2 ow - 1 (padding 1 after)
        const int64_t w = st == 1 ? ow : 2 * ow - count % 2, hin = st == 1 ? h : 2 * h - (count / 2) % 2;
        const int64_t pe_w = st == 1 || w % 2 ? 1 : count % 3 % 2, pe_h = st == 1 || hin % 2 ? 1 : 0;
        const int64_t N = 1 + count % 2, C = 3;
        const ConvCase c{N, C, C, C, {1, hin, w}, {1, 3, 3}, {1, st, st}, {1, 1, 1}, {0, 1, 1}, {0, pe_h, pe_w}};
        REQUIRE(dwconv_rows_shape(shape_of(c)));
        rows_cases += dwconv_rows_applies(shape_of(c)) ? 1 : 0;
        check_conv(rng, c, true, count % 2 == 0, 1);
        ++count;
      }
  // The same shapes with rows of at most a vector, as channel blocks (which take them in
  // the model): 1x1 to 33 x L maps, two images, L and 2 L channels.
  for (const auto& hw : std::vector<std::pair<int64_t, int64_t>>{
           {1, 1}, {2, 2}, {3, 5}, {7, 7}, {14, 14}, {5, L}, {L, L}, {2 * L, L}, {2 * L + 1, L}, {9, L - 1}}) {
    const int64_t C = L * (1 + hw.first % 2), N = 1 + hw.second % 2;
    const ConvCase c{N, C, C, C, {1, hw.first, hw.second}, {1, 3, 3}, {1, 1, 1}, {1, 1, 1}, {0, 1, 1}, {0, 1, 1}};
    REQUIRE(dwconv_block_applies(shape_of(c)));
    check_conv(rng, c, true, hw.first % 2 == 0, 1);
  }
  // Not a rows shape: padding 0 or 2, stride 3, stride 2 with two columns of padding
  // after, dilation, 5x5, a channel multiplier.
  const ConvCase other[] = {
      {1, 2, 2, 2, {1, 9, 40}, {1, 3, 3}, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}, {0, 0, 0}},
      {1, 2, 2, 2, {1, 9, 40}, {1, 3, 3}, {1, 1, 1}, {1, 1, 1}, {0, 2, 2}, {0, 2, 2}},
      {1, 2, 2, 2, {1, 9, 40}, {1, 3, 3}, {1, 3, 3}, {1, 1, 1}, {0, 1, 1}, {0, 1, 1}},
      {1, 2, 2, 2, {1, 9, 40}, {1, 3, 3}, {1, 2, 2}, {1, 1, 1}, {0, 1, 1}, {0, 1, 3}},
      {1, 2, 2, 2, {1, 9, 40}, {1, 3, 3}, {1, 1, 1}, {1, 2, 2}, {0, 1, 1}, {0, 1, 1}},
      {1, 2, 2, 2, {1, 9, 40}, {1, 5, 5}, {1, 1, 1}, {1, 1, 1}, {0, 1, 1}, {0, 1, 1}},
      {1, 2, 4, 2, {1, 9, 40}, {1, 3, 3}, {1, 1, 1}, {1, 1, 1}, {0, 1, 1}, {0, 1, 1}},
  };
  for (const ConvCase& c : other) {
    CHECK_FALSE(dwconv_rows_shape(shape_of(c)));
    CHECK_FALSE(dwconv_rows_applies(shape_of(c)));
    check_conv(rng, c, true, true, 1);
  }
  // Reached on the AVX-512 targets (AVX3*), the only ones it runs on.
  if (std::string(simd_target_name()).rfind("AVX3", 0) == 0) CHECK(rows_cases == count);
  else CHECK(rows_cases == 0);
}

namespace {
// maxpool_plane over every plane of x equals the reference, NaN where it has NaN.
bool maxpool_planes_match(const ConvShape& s, const std::vector<float>& x) {
  std::vector<float> want(size_t(s.N * s.C * s.P())), got(want.size(), 1234.0f);
  maxpool_ref(s, x.data(), want.data());
  std::vector<float> slot(size_t(dwconv_slot_floats(s)), kNaN);
  for (int64_t pl = 0; pl < s.N * s.C; ++pl) maxpool_plane(s, pl, x.data(), got.data(), slot.data());
  for (size_t i = 0; i < got.size(); ++i)
    if (!(got[i] == want[i] || (std::isnan(got[i]) && std::isnan(want[i])))) return false;
  return true;
}
}  // namespace

TEST_CASE("direct max pooling matches the reference (pads, strides, dilation, ceil, NaN)") {
  std::mt19937 rng(17);
  int count = 0;
  for (int64_t k : {1, 2, 3, 5})
    for (int64_t st : {1, 2, 3})
      for (int64_t pad : {0, 1, 2})
        for (int64_t w : {1, 6, 17, 56, 140})  // 140: four-vector runs at 16 lanes
          for (int64_t extra : {0, 1}) {  // extra: a ceil_mode-like partial last window
            if (pad >= k) continue;
            ConvCase c{2, 3, 3, 3, {1, 7, w}, {1, k, k}, {1, st, st}, {1, 1, (k > 2 ? 2 : 1)},
                       {0, pad, pad}, {0, pad + extra, pad + extra}};
            ConvShape s = shape_of(c);
            if (s.out[1] < 1 || s.out[2] < 1) continue;
            std::vector<float> x = randn(rng, size_t(s.N * s.C * s.Pin()));
            if (count % 3 == 0) x[size_t(rng() % x.size())] = kNaN;
            CHECK_MESSAGE(maxpool_planes_match(s, x), "maxpool " << describe(s));
            ++count;
          }
  CHECK(count > 100);
  // Stride-2 planes read in place (maxpool_plane_reads_rows) check every float a window
  // reads for NaN, those of the last vector's third tap too: a NaN at each position in
  // turn, 1-3 taps a row, rows of one and two vectors plus a tail; 33 and 34 wide: 16
  // outputs whose last reads column 32, past the first 32 (AVX-512's 3x3 rows).
  for (int64_t kw : {1, 2, 3})
    for (int64_t w : {33, 34, 35, 36, 70, 75}) {
      ConvCase c{1, 1, 1, 1, {1, 3, w}, {1, 3, kw}, {1, 2, 2}, {1, 1, 1}, {0, 0, 0}, {0, 0, 0}};
      ConvShape s = shape_of(c);
      const std::vector<float> base = randn(rng, size_t(s.Pin()));
      std::vector<float> slot(size_t(dwconv_slot_floats(s)), kNaN);
      bool same = true;
      for (size_t pos = 0; pos < base.size(); ++pos) {
        std::vector<float> x = base;
        x[pos] = kNaN;
        std::vector<float> want(size_t(s.P())), got(want.size(), 1234.0f);
        maxpool_ref(s, x.data(), want.data());
        maxpool_plane(s, 0, x.data(), got.data(), slot.data());
        for (size_t i = 0; i < got.size(); ++i)
          same = same && (got[i] == want[i] || (std::isnan(got[i]) && std::isnan(want[i])));
      }
      INFO("maxpool NaN positions " << describe(s));
      CHECK(same);
    }
  // Stride-2 rows (maxpool_plane_reads_rows): 1-3 taps each way, top / left padding, a
  // partial last window, outputs of 8 (one vector) to 56 wide (13, 27, 55: squeezenet1_1's
  // pools; 56 with a padded left column: resnet's; 32 and 33 wide rows: 16 outputs whose
  // last window ends on or past the row end), a NaN or infinities (a false alarm: the
  // general kernel) in some planes.
  int rows_planes = 0;
  for (int64_t kh : {1, 2, 3})
    for (int64_t kw : {1, 2, 3})
      for (int64_t pad : {0, 1})
        for (int64_t w : {16, 17, 27, 28, 32, 33, 55, 111, 112})
          for (int64_t extra : {0, 1}) {
            if (pad >= kw || pad >= kh) continue;
            ConvCase c{1, 2, 2, 2, {1, 5 + w % 4, w}, {1, kh, kw}, {1, 2, 2}, {1, 1, 1},
                       {0, pad, pad}, {0, pad + extra, pad + extra}};
            ConvShape s = shape_of(c);
            if (!maxpool_plane_reads_rows(s)) continue;
            std::vector<float> x = randn(rng, size_t(s.N * s.C * s.Pin()));
            if (rows_planes % 4 == 1) x[size_t(rng() % x.size())] = kNaN;
            if (rows_planes % 4 == 2) x[size_t(rng() % x.size())] = kInf;
            if (rows_planes % 4 == 3) {
              x[size_t(rng() % x.size())] = kInf;
              x[size_t(rng() % x.size())] = -kInf;
            }
            CHECK_MESSAGE(maxpool_planes_match(s, x), "maxpool rows " << describe(s));
            ++rows_planes;
          }
  CHECK(rows_planes > 100);
  // Channel-blocked: channels a multiple of the vector width, the same windows, and planes
  // of the sizes it is used for (13, 27, 55 wide outputs in squeezenet).
  const int64_t L = dwconv_block_lanes();
  int blocked = 0;
  for (int64_t k : {1, 2, 3, 5})
    for (int64_t st : {1, 2, 3})
      for (int64_t pad : {0, 1, 2})
        for (int64_t w : {1, 6, 17, 27, 56})
          for (int64_t extra : {0, 1}) {
            if (pad >= k) continue;
            const int64_t C = L * (1 + blocked % 2 * 2), N = 1 + blocked % 3 % 2;
            ConvCase c{N, C, C, C, {1, 7 + w % 5, w}, {1, k, k}, {1, st, st}, {1, 1, (k > 2 ? 2 : 1)},
                       {0, pad, pad}, {0, pad + extra, pad + extra}};
            ConvShape s = shape_of(c);
            if (s.out[1] < 1 || s.out[2] < 1 || !maxpool_block_applies(s)) continue;
            std::vector<float> x = randn(rng, size_t(s.N * s.C * s.Pin()));
            if (blocked % 3 == 0) x[size_t(rng() % x.size())] = kNaN;
            std::vector<float> want(size_t(s.N * s.C * s.P())), got(want.size(), 1234.0f);
            maxpool_ref(s, x.data(), want.data());
            std::vector<float> slot(size_t(dwconv_block_slot_floats(s)), kNaN);
            for (int64_t b = 0; b < s.N * s.C / L; ++b) maxpool_block(s, b, x.data(), got.data(), slot.data());
            bool same = true;
            for (size_t i = 0; i < got.size(); ++i)
              same = same && (got[i] == want[i] || (std::isnan(got[i]) && std::isnan(want[i])));
            INFO("maxpool_block " << describe(s));
            CHECK(same);
            ++blocked;
          }
  if (L > 1) CHECK(blocked > 100);
}

namespace {

// The element-wise kernels must give the reference's exact values (NaN where it has NaN).
void expect_same(const std::vector<float>& got, const std::vector<float>& want,
                 const std::string& what) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    const bool same = std::isnan(want[i]) ? std::isnan(got[i]) : got[i] == want[i];
    if (!same) {
      FAIL_CHECK(what << ": element " << i << " got " << got[i] << " want " << want[i]);
      return;
    }
  }
}

// Lengths around every vector width (4, 8, 16 floats) and a large one.
const int64_t kLengths[] = {0, 1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 65, 1000, 4099};

// Random values with specials sprinkled in: NaN, +-inf, +-0, exact bounds of Clip.
std::vector<float> eltwise_input(std::mt19937& rng, int64_t n) {
  std::vector<float> v = randn(rng, static_cast<size_t>(n));
  const float specials[] = {kNaN, kInf, -kInf, 0.0f, -0.0f, 0.5f, -0.25f};
  for (size_t i = 0; i < v.size(); i += 5) v[i] = specials[(i / 5) % 7];
  return v;
}

}  // namespace

TEST_CASE("element-wise activations match the reference (odd lengths, NaN, in place)") {
  std::mt19937 rng(11);
  const float bounds[][2] = {{0.0f, 6.0f}, {-0.25f, 0.5f}, {0.5f, -0.25f}, {-kInf, kInf}};
  for (int64_t n : kLengths) {
    const std::vector<float> x = eltwise_input(rng, n);
    const std::string at = " n=" + std::to_string(n);
    std::vector<float> want(x.size()), got(x.size());
    f32_relu_ref(x.data(), want.data(), n);
    f32_relu(x.data(), got.data(), n);
    expect_same(got, want, "relu" + at);
    got = x;
    f32_relu(got.data(), got.data(), n);
    expect_same(got, want, "relu in place" + at);
    for (const auto& b : bounds) {
      f32_clip_ref(x.data(), want.data(), n, b[0], b[1]);
      got = x;
      f32_clip(got.data(), got.data(), n, b[0], b[1]);
      expect_same(got, want, "clip" + at + " lo=" + std::to_string(b[0]));
    }
    f32_leaky_relu_ref(x.data(), want.data(), n, 0.1f);
    f32_leaky_relu(x.data(), got.data(), n, 0.1f);
    expect_same(got, want, "leaky_relu" + at);
  }
}

TEST_CASE("element-wise binary ops match the reference (dense, scalar operands, in place)") {
  std::mt19937 rng(12);
  const BinaryKind ops[] = {BinaryKind::kAdd, BinaryKind::kSub, BinaryKind::kMul,
                            BinaryKind::kDiv};
  for (int64_t n : kLengths) {
    const std::vector<float> a = eltwise_input(rng, n), b = randn(rng, static_cast<size_t>(n));
    const float sa = 0.75f, sb = -1.5f;
    for (BinaryKind op : ops)
      for (int pattern = 0; pattern < 4; ++pattern) {
        const bool as = pattern & 1, bs = pattern & 2;
        const float* pa = as ? &sa : a.data();
        const float* pb = bs ? &sb : b.data();
        const std::string what = "op " + std::to_string(static_cast<int>(op)) + " pattern " +
                                 std::to_string(pattern) + " n=" + std::to_string(n);
        std::vector<float> want(a.size()), got(a.size());
        f32_binary_ref(op, pa, as, pb, bs, want.data(), n);
        f32_binary(op, pa, as, pb, bs, got.data(), n);
        expect_same(got, want, what);
        if (!as) {  // y aliases a
          got = a;
          f32_binary(op, got.data(), false, pb, bs, got.data(), n);
          expect_same(got, want, what + " in place");
        }
      }
  }
}

TEST_CASE("global average matches the double-sum reference") {
  std::mt19937 rng(13);
  const int64_t planes_list[] = {1, 3, 17};
  const int64_t plane_list[] = {0, 1, 3, 7, 17, 49, 196, 1000, 3136};
  for (int64_t planes : planes_list)
    for (int64_t plane : plane_list) {
      const std::vector<float> x = randn(rng, static_cast<size_t>(planes * plane));
      std::vector<float> want(static_cast<size_t>(planes)), got(want.size(), kNaN);
      f32_global_avg_ref(x.data(), planes, plane, want.data());
      f32_global_avg(x.data(), planes, plane, got.data());
      // float summation of up to 3136 values in [-1, 1]: far below 1e-5 relative to 1.
      expect_close(got, want,
                   "planes=" + std::to_string(planes) + " plane=" + std::to_string(plane));
    }
}
