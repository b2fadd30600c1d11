// MaxPool / AveragePool / global pools against the direct definition.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "test_util.h"

using namespace cdt;

namespace {

struct PoolSpec {
  std::vector<int64_t> x;  // N, C, spatial...
  std::vector<int64_t> k, s, d, pads;
  std::string auto_pad = "NOTSET";
  bool ceil_mode = false;
  bool adjust_ceil = true;  // shape inference's "last window starts inside" correction
  bool count_include_pad = false;
};

bool next_index(std::vector<int64_t>& idx, const std::vector<int64_t>& dims) {
  for (size_t i = idx.size(); i-- > 0;) {
    if (++idx[i] < dims[i]) return true;
    idx[i] = 0;
  }
  return false;
}

// Output size and pads from the ONNX spec (independently of the kernel code).
bool geometry(const PoolSpec& p, size_t i, int64_t* pb, int64_t* pe, int64_t* out) {
  const size_t nsp = p.k.size();
  const int64_t in = p.x[2 + i], k = p.k[i], s = p.s[i], d = p.d.empty() ? 1 : p.d[i];
  const int64_t eff = (k - 1) * d + 1;
  *pb = p.pads.empty() ? 0 : p.pads[i];
  *pe = p.pads.empty() ? 0 : p.pads[nsp + i];
  if (p.auto_pad == "SAME_UPPER" || p.auto_pad == "SAME_LOWER") {
    *out = (in + s - 1) / s;
    int64_t total = std::max<int64_t>(0, (*out - 1) * s + eff - in);
    *pb = p.auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
    *pe = total - *pb;
    return true;
  }
  if (p.auto_pad == "VALID") *pb = *pe = 0;
  const int64_t span = in + *pb + *pe - eff;
  if (span < 0) return false;
  if (!p.ceil_mode) {
    *out = span / s + 1;
  } else {
    *out = (span + s - 1) / s + 1;
    if (p.adjust_ceil && (*out - 1) * s >= in + *pb) --*out;
  }
  return *out >= 1;
}

enum class Kind { kMax, kAvg };

std::vector<double> naive_pool(const PoolSpec& p, const Tensor& x, Kind kind,
                               std::vector<int64_t>* out_shape) {
  const size_t nsp = p.k.size();
  std::vector<int64_t> pb(nsp), pe(nsp), os(nsp);
  for (size_t i = 0; i < nsp; ++i) geometry(p, i, &pb[i], &pe[i], &os[i]);
  *out_shape = {p.x[0], p.x[1]};
  out_shape->insert(out_shape->end(), os.begin(), os.end());
  std::vector<double> y;
  const int64_t plane = product(std::vector<int64_t>(p.x.begin() + 2, p.x.end()));
  for (int64_t nc = 0; nc < p.x[0] * p.x[1]; ++nc) {
    std::vector<int64_t> o(nsp, 0);
    do {
      double mx = -std::numeric_limits<double>::infinity(), sum = 0;
      int64_t inside = 0, padded = 0;
      std::vector<int64_t> kk(nsp, 0);
      do {
        int64_t off = 0;
        bool in_x = true, in_padded = true;
        for (size_t i = 0; i < nsp; ++i) {
          const int64_t pos = o[i] * p.s[i] - pb[i] + kk[i] * (p.d.empty() ? 1 : p.d[i]);
          in_x = in_x && pos >= 0 && pos < p.x[2 + i];
          in_padded = in_padded && pos >= -pb[i] && pos < p.x[2 + i] + pe[i];
          off = off * p.x[2 + i] + pos;
        }
        if (in_padded) ++padded;
        if (!in_x) continue;
        const double v = x.f()[nc * plane + off];
        mx = std::max(mx, v);
        sum += v;
        ++inside;
      } while (next_index(kk, p.k));
      if (kind == Kind::kMax) {
        y.push_back(mx);
      } else {
        const int64_t count = p.count_include_pad ? padded : inside;
        y.push_back(count ? sum / count : 0.0);
      }
    } while (next_index(o, os));
  }
  return y;
}

FakeNode pool_node(const char* op, const PoolSpec& p, int version) {
  FakeNode node(op, version);
  node.set("kernel_shape", p.k);
  if (!p.s.empty()) node.set("strides", p.s);
  if (!p.d.empty()) node.set("dilations", p.d);
  if (p.auto_pad != "NOTSET")
    node.set("auto_pad", p.auto_pad);
  else if (!p.pads.empty())
    node.set("pads", p.pads);
  if (p.ceil_mode) node.set("ceil_mode", 1);
  if (p.count_include_pad) node.set("count_include_pad", 1);
  return node;
}

PoolSpec random_spec(std::mt19937& rng) {
  for (;;) {
    PoolSpec p;
    const int nsp = 1 + static_cast<int>(rng() % 3);
    const int64_t maxsp = nsp == 3 ? 7 : nsp == 2 ? 13 : 29;
    p.x = {1 + static_cast<int64_t>(rng() % 2), 1 + static_cast<int64_t>(rng() % 5)};
    p.pads.assign(2 * nsp, 0);
    const bool dil = rng() % 2;
    for (int i = 0; i < nsp; ++i) {
      p.x.push_back(1 + rng() % maxsp);
      p.k.push_back(1 + rng() % 4);
      p.s.push_back(1 + rng() % 3);
      if (dil) p.d.push_back(1 + rng() % 3);
      p.pads[i] = rng() % p.k.back();
      p.pads[nsp + i] = rng() % p.k.back();
    }
    const char* modes[] = {"NOTSET", "NOTSET", "NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"};
    p.auto_pad = modes[rng() % 6];
    p.ceil_mode = rng() % 2;
    p.adjust_ceil = rng() % 2;
    p.count_include_pad = rng() % 2;
    bool ok = true;
    for (int i = 0; i < nsp; ++i) {
      int64_t a, b, o;
      ok = ok && geometry(p, i, &a, &b, &o);
    }
    if (ok) return p;
  }
}

void check_pool(const char* op, Kind kind, const PoolSpec& p, const Tensor& x, Ctx ctx, int version,
                size_t* chunks = nullptr) {
  std::vector<int64_t> os;
  std::vector<double> want = naive_pool(p, x, kind, &os);
  std::vector<Tensor> in{x}, out{Tensor::out(os)};
  CAPTURE(op);
  CAPTURE(shape_str(p.x));
  CAPTURE(shape_str(p.k));
  CAPTURE(shape_str(p.s));
  CAPTURE(shape_str(p.d));
  CAPTURE(shape_str(p.pads));
  CAPTURE(p.auto_pad);
  CAPTURE(p.ceil_mode);
  CAPTURE(p.adjust_ceil);
  CAPTURE(p.count_include_pad);
  CAPTURE(ctx_name(ctx));
  RunResult r = run(pool_node(op, p, version), in, out, ctx);
  REQUIRE_MESSAGE(r.ok(), r.error);
  CDT_CHECK_CLOSE(out[0].f(), want);
  if (chunks) *chunks = r.chunks;
}

}  // namespace

TEST_SUITE("pool") {
  TEST_CASE("MaxPool known answers") {
    std::vector<float> x16(16);
    for (int i = 0; i < 16; ++i) x16[i] = static_cast<float>(i);
    {
      std::vector<Tensor> in{Tensor::f32({1, 1, 4, 4}, x16)}, out{Tensor::out({1, 1, 2, 2})};
      FakeNode node("MaxPool", 12);
      node.set("kernel_shape", std::vector<int64_t>{2, 2})
          .set("strides", std::vector<int64_t>{2, 2});
      RunResult r = run(node, in, out);
      REQUIRE_MESSAGE(r.ok(), r.error);
      CHECK(r.kernel_name == "f32_maxpool2d_direct");
      CDT_CHECK_CLOSE(out[0].f(), std::vector<float>({5, 7, 13, 15}));
    }
    {  // pads 1, stride 2 on 1..9: windows start at -1 and 1
      std::vector<Tensor> in{Tensor::f32({1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9})};
      std::vector<Tensor> out{Tensor::out({1, 1, 2, 2})};
      FakeNode node("MaxPool", 12);
      node.set("kernel_shape", std::vector<int64_t>{2, 2})
          .set("strides", std::vector<int64_t>{2, 2})
          .set("pads", std::vector<int64_t>{1, 1, 1, 1});
      RunResult r = run(node, in, out);
      REQUIRE_MESSAGE(r.ok(), r.error);
      CDT_CHECK_CLOSE(out[0].f(), std::vector<float>({1, 3, 7, 9}));
    }
    {  // ceil_mode keeps the partial last window; floor drops it
      Tensor x = Tensor::f32({1, 1, 5}, {1, 5, 2, 4, 3});
      FakeNode node("MaxPool", 12);
      node.set("kernel_shape", std::vector<int64_t>{2}).set("strides", std::vector<int64_t>{2});
      std::vector<Tensor> in{x}, out{Tensor::out({1, 1, 2})};
      RunResult r = run(node, in, out);
      REQUIRE_MESSAGE(r.ok(), r.error);
      CDT_CHECK_CLOSE(out[0].f(), std::vector<float>({5, 4}));
      node.set("ceil_mode", 1);
      std::vector<Tensor> out3{Tensor::out({1, 1, 3})};
      r = run(node, in, out3);
      REQUIRE_MESSAGE(r.ok(), r.error);
      CHECK(r.kernel_name == "f32_maxpool1d_direct");
      CDT_CHECK_CLOSE(out3[0].f(), std::vector<float>({5, 4, 3}));
    }
    {  // dilation 2: windows {0,2}, {1,3}, {2,4}
      std::vector<Tensor> in{Tensor::f32({1, 1, 5}, {1, 5, 2, 4, 3})}, out{Tensor::out({1, 1, 3})};
      FakeNode node("MaxPool", 12);
      node.set("kernel_shape", std::vector<int64_t>{2}).set("dilations", std::vector<int64_t>{2});
      RunResult r = run(node, in, out);
      REQUIRE_MESSAGE(r.ok(), r.error);
      CDT_CHECK_CLOSE(out[0].f(), std::vector<float>({2, 5, 3}));
    }
  }

  TEST_CASE("MaxPool matches the definition over many random shapes") {
    std::mt19937 rng(31337);
    for (int i = 0; i < 400; ++i) {
      PoolSpec p = random_spec(rng);
      p.count_include_pad = false;
      if (rng() % 4 == 0) p.d.clear();
      Tensor x = random_f32(rng, p.x);
      check_pool("MaxPool", Kind::kMax, p, x, kAllCtx[i % 3], 10 + i % 8);
    }
  }

  TEST_CASE("MaxPool: big inputs are chunked correctly") {
    std::mt19937 rng(8);
    PoolSpec p;
    p.x = {2, 7, 57, 61};
    p.k = {3, 3};
    p.s = {2, 2};
    p.pads = {1, 0, 1, 2};
    Tensor x = random_f32(rng, p.x);
    for (Ctx ctx : kAllCtx) {
      size_t chunks = 0;
      check_pool("MaxPool", Kind::kMax, p, x, ctx, 12, &chunks);
      if (ctx == Ctx::kChunky) CHECK(chunks > 1);
    }
  }

  TEST_CASE("MaxPool refusals and errors") {
    std::mt19937 rng(2);
    Tensor x = random_f32(rng, {1, 2, 6, 6});
    {  // Indices output: int64 only (maxpool_indices_test checks its values)
      std::vector<Tensor> in{x}, out{Tensor::out({1, 2, 3, 3}), Tensor::out({1, 2, 3, 3}, MN_F32)};
      FakeNode node("MaxPool", 12);
      node.set("kernel_shape", std::vector<int64_t>{2, 2})
          .set("strides", std::vector<int64_t>{2, 2});
      mn_bid b = bid(node, in, out);
      CHECK(b.cost < 0);
      CHECK(std::string(b.reason).find("Indices") != std::string::npos);
      std::vector<Tensor> out_i64{Tensor::out({1, 2, 3, 3}), Tensor::out({1, 2, 3, 3}, MN_I64)};
      CHECK(run(node, in, out_i64).ok());
      // An omitted Indices output is fine.
      std::vector<Tensor> out2{Tensor::out({1, 2, 3, 3}), Tensor::none()};
      CHECK(run(node, in, out2).ok());
    }
    {  // no kernel_shape
      std::vector<Tensor> in{x}, out{Tensor::out({1, 2, 6, 6})};
      mn_bid b = bid(FakeNode("MaxPool", 12), in, out);
      CHECK(b.cost < 0);
      CHECK(std::string(b.reason).find("kernel_shape") != std::string::npos);
    }
    {  // kernel_shape rank differs from X's spatial rank
      std::vector<Tensor> in{x}, out{Tensor::out({1, 2, 5})};
      CHECK(
          bid(FakeNode("MaxPool", 12).set("kernel_shape", std::vector<int64_t>{2}), in, out).cost <
          0);
    }
    {  // output shape inconsistent with the attributes (only known at run)
      std::vector<Tensor> in{x}, out{Tensor::out({1, 2, 4, 4})};
      RunOptions o;
      o.hide_dims_at_prepare = true;
      o.skip_bid = true;
      FakeNode node("MaxPool", 12);
      node.set("kernel_shape", std::vector<int64_t>{2, 2})
          .set("strides", std::vector<int64_t>{2, 2});
      RunResult r = run(node, in, out, o);
      CHECK(r.status == MN_ERR_INVALID_ARGUMENT);
      CHECK(r.error.find("MaxPool") != std::string::npos);
    }
  }

  TEST_CASE("AveragePool known answers: count_include_pad, ceil_mode") {
    // 1..9 in 3x3, kernel 2x2, pads 1, stride 2: windows start at -1 and 1.
    Tensor x = Tensor::f32({1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
    FakeNode node("AveragePool", 11);
    node.set("kernel_shape", std::vector<int64_t>{2, 2})
        .set("strides", std::vector<int64_t>{2, 2})
        .set("pads", std::vector<int64_t>{1, 1, 1, 1});
    {
      std::vector<Tensor> in{x}, out{Tensor::out({1, 1, 2, 2})};
      RunResult r = run(node, in, out);
      REQUIRE_MESSAGE(r.ok(), r.error);
      CHECK(r.kernel_name == "f32_avgpool2d_ref");
      // excluding pads: {1}, {2,3}, {4,7}, {5,6,8,9}
      CDT_CHECK_CLOSE(out[0].f(), std::vector<float>({1, 2.5f, 5.5f, 7}));
    }
    {
      node.set("count_include_pad", 1);
      std::vector<Tensor> in{x}, out{Tensor::out({1, 1, 2, 2})};
      RunResult r = run(node, in, out);
      REQUIRE_MESSAGE(r.ok(), r.error);
      CDT_CHECK_CLOSE(out[0].f(), std::vector<float>({0.25f, 1.25f, 2.75f, 7}));
    }
    {  // ceil_mode, 1-D: [1,2,3,4,5], k 2, s 2 -> [1.5, 3.5, 5]
      FakeNode n1("AveragePool", 11);
      n1.set("kernel_shape", std::vector<int64_t>{2})
          .set("strides", std::vector<int64_t>{2})
          .set("ceil_mode", 1);
      std::vector<Tensor> in{Tensor::f32({1, 1, 5}, {1, 2, 3, 4, 5})}, out{Tensor::out({1, 1, 3})};
      RunResult r = run(n1, in, out);
      REQUIRE_MESSAGE(r.ok(), r.error);
      CDT_CHECK_CLOSE(out[0].f(), std::vector<float>({1.5f, 3.5f, 5}));
      // count_include_pad does not count the part past the end padding
      n1.set("count_include_pad", 1);
      r = run(n1, in, out);
      REQUIRE_MESSAGE(r.ok(), r.error);
      CDT_CHECK_CLOSE(out[0].f(), std::vector<float>({1.5f, 3.5f, 5}));
    }
  }

  TEST_CASE("AveragePool matches the definition over many random shapes") {
    std::mt19937 rng(4242);
    for (int i = 0; i < 400; ++i) {
      PoolSpec p = random_spec(rng);
      p.d.clear();  // dilations are opset 19; keep to the opset-17 attribute set mostly
      if (i % 5 == 0) p = random_spec(rng);
      Tensor x = random_f32(rng, p.x);
      check_pool("AveragePool", Kind::kAvg, p, x, kAllCtx[i % 3], 7 + i % 11);
    }
    PoolSpec big;
    big.x = {2, 5, 64, 63};
    big.k = {3, 3};
    big.s = {1, 2};
    big.pads = {1, 1, 1, 1};
    big.count_include_pad = true;
    Tensor x = random_f32(rng, big.x);
    for (Ctx ctx : kAllCtx) {
      size_t chunks = 0;
      check_pool("AveragePool", Kind::kAvg, big, x, ctx, 11, &chunks);
      if (ctx == Ctx::kChunky) CHECK(chunks > 1);
    }
  }

  TEST_CASE("GlobalAveragePool / GlobalMaxPool") {
    {
      std::vector<Tensor> in{Tensor::f32({1, 2, 2, 2}, {1, 2, 3, 4, -1, -5, -3, -2})};
      std::vector<Tensor> out{Tensor::out({1, 2, 1, 1})};
      RunResult r = run(FakeNode("GlobalAveragePool", 1), in, out);
      REQUIRE_MESSAGE(r.ok(), r.error);
      CHECK(r.kernel_name == "f32_global_avgpool__hwy");
      CDT_CHECK_CLOSE(out[0].f(), std::vector<float>({2.5f, -2.75f}));
      r = run(FakeNode("GlobalMaxPool", 1), in, out);
      REQUIRE_MESSAGE(r.ok(), r.error);
      CHECK(r.kernel_name == "f32_global_maxpool_ref");
      CDT_CHECK_CLOSE(out[0].f(), std::vector<float>({4, -1}));
    }
    std::mt19937 rng(6);
    const std::vector<std::vector<int64_t>> shapes = {
        {1, 3, 7}, {2, 5, 9, 11}, {3, 2, 3, 4, 5}, {1, 512, 7, 7}, {2, 3, 1, 1}};
    int i = 0;
    for (const auto& sh : shapes)
      for (const char* op : {"GlobalAveragePool", "GlobalMaxPool"}) {
        Tensor x = random_f32(rng, sh);
        const int64_t rows = sh[0] * sh[1], plane = x.numel() / rows;
        std::vector<double> want;
        for (int64_t r0 = 0; r0 < rows; ++r0) {
          double s = 0, m = -INFINITY;
          for (int64_t j = 0; j < plane; ++j) {
            s += x.f()[r0 * plane + j];
            m = std::max(m, double(x.f()[r0 * plane + j]));
          }
          want.push_back(std::string(op) == "GlobalMaxPool" ? m : s / plane);
        }
        std::vector<int64_t> os = sh;
        for (size_t d = 2; d < os.size(); ++d) os[d] = 1;
        std::vector<Tensor> in{x}, out{Tensor::out(os)};
        RunResult r = run(FakeNode(op, 1), in, out, kAllCtx[i++ % 3]);
        REQUIRE_MESSAGE(r.ok(), r.error);
        CDT_CHECK_CLOSE(out[0].f(), want);
      }
    std::vector<Tensor> in{Tensor::f32({4})}, out{Tensor::out({4})};
    CHECK(bid(FakeNode("GlobalMaxPool", 1), in, out).cost < 0);
  }
}
