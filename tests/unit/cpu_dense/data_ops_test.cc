// Data-movement and reduction ops added for ONNX coverage (issue 3): Gather, Slice,
// ConstantOfShape, Expand, Cast, Split, Where, Not, Pad, Tile, ReduceMean/Max/Sum, ArgMax,
// TopK, DepthToSpace/SpaceToDepth. Each is compared with a naive per-element formula over
// odd shapes, on every threading context.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "test_util.h"

using namespace cdt;

namespace {

// Row-major index of `idx` in `shape`.
int64_t flat(const std::vector<int64_t>& shape, const std::vector<int64_t>& idx) {
  int64_t f = 0;
  for (size_t i = 0; i < shape.size(); ++i) f = f * shape[i] + idx[i];
  return f;
}
std::vector<int64_t> unflat(const std::vector<int64_t>& shape, int64_t f) {
  std::vector<int64_t> idx(shape.size());
  for (size_t i = shape.size(); i-- > 0;) {
    idx[i] = f % shape[i];
    f /= shape[i];
  }
  return idx;
}

}  // namespace

TEST_SUITE("data_ops") {
  TEST_CASE("Gather: every axis, negative indices, int32 and int64 indices") {
    std::mt19937 rng(3);
    const std::vector<int64_t> xs{3, 5, 2};
    Tensor x = random_f32(rng, xs);
    for (int axis = -3; axis < 3; ++axis) {
      const int a = axis < 0 ? axis + 3 : axis;
      const int64_t d = xs[a];
      std::vector<int64_t> iv{d - 1, -1, 0, -d, 1 % d, 0};
      std::vector<int64_t> os(xs.begin(), xs.begin() + a);
      os.push_back(2), os.push_back(3);
      os.insert(os.end(), xs.begin() + a + 1, xs.end());
      for (bool i32 : {false, true})
        for (Ctx ctx : kAllCtx) {
          Tensor idx = Tensor::i64({2, 3}, iv);
          if (i32) {
            idx = Tensor::of(MN_I32, {2, 3});
            auto* p = reinterpret_cast<int32_t*>(idx.raw());
            for (size_t i = 0; i < iv.size(); ++i) p[i] = static_cast<int32_t>(iv[i]);
          }
          std::vector<Tensor> in{x, idx}, out{Tensor::out(os)};
          RunResult r = run(FakeNode("Gather", 13).set("axis", axis), in, out, ctx);
          REQUIRE_MESSAGE(r.ok(), r.error);
          std::vector<float> want(static_cast<size_t>(product(os)));
          for (int64_t f = 0; f < product(os); ++f) {
            std::vector<int64_t> o = unflat(os, f), src;
            for (int i = 0; i < a; ++i) src.push_back(o[i]);
            int64_t j = iv[o[a] * 3 + o[a + 1]];
            src.push_back(j < 0 ? j + d : j);
            for (size_t i = a + 2; i < o.size(); ++i) src.push_back(o[i]);
            want[f] = x.f()[flat(xs, src)];
          }
          CHECK((want.empty() || std::memcmp(out[0].raw(), want.data(), want.size() * 4) == 0));
        }
    }
    std::vector<Tensor> in{x, Tensor::i64({1}, {7})}, out{Tensor::out({1, 5, 2})};
    RunResult r = run(FakeNode("Gather", 13), in, out);
    CHECK(r.status != MN_OK);
    CHECK(r.error.find("out of range") != std::string::npos);
  }

  TEST_CASE("Slice: steps, negative steps, clamping, inputs and attributes") {
    std::mt19937 rng(5);
    const std::vector<int64_t> xs{4, 7, 3};
    Tensor x = random_f32(rng, xs);
    struct Case { std::vector<int64_t> st, en, ax, step; };
    const int64_t big = INT64_MAX, small = INT64_MIN;
    const Case cases[] = {{{1, 0}, {3, big}, {0, 1}, {1, 2}},
                          {{-1}, {small}, {1}, {-1}},
                          {{5, 2}, {-8, -100}, {1, 2}, {-2, -1}},
                          {{0, 1, 0}, {4, 6, 3}, {-3, -2, -1}, {3, 4, 5}},
                          {{2}, {2}, {0}, {1}}};
    for (const Case& c : cases) {
      std::vector<int64_t> os = xs, begin(3, 0), step(3, 1);
      for (size_t i = 0; i < c.st.size(); ++i) {
        const int a = static_cast<int>(c.ax[i] < 0 ? c.ax[i] + 3 : c.ax[i]);
        const int64_t d = xs[a], s = c.step[i];
        // Naive: walk j from the clamped start while inside [0, d) and before end.
        int64_t b = c.st[i] < 0 ? std::max<int64_t>(c.st[i], -d - 1) + d : std::min(c.st[i], d + 1);
        int64_t e = c.en[i] < 0 ? std::max<int64_t>(c.en[i], -d - 1) + d : std::min(c.en[i], d + 1);
        b = s > 0 ? std::clamp<int64_t>(b, 0, d) : std::clamp<int64_t>(b, 0, d - 1);
        int64_t n = 0;
        for (int64_t j = b; s > 0 ? (j < e && j < d) : (j > e && j >= 0); j += s) ++n;
        os[a] = n, begin[a] = b, step[a] = s;
      }
      std::vector<float> want(static_cast<size_t>(product(os)));
      for (int64_t f = 0; f < product(os); ++f) {
        std::vector<int64_t> o = unflat(os, f);
        for (int i = 0; i < 3; ++i) o[i] = begin[i] + o[i] * step[i];
        want[f] = x.f()[flat(xs, o)];
      }
      const int64_t k = static_cast<int64_t>(c.st.size());
      for (Ctx ctx : kAllCtx) {
        std::vector<Tensor> in{x, Tensor::i64({k}, c.st), Tensor::i64({k}, c.en),
                               Tensor::i64({k}, c.ax), Tensor::i64({k}, c.step)};
        std::vector<Tensor> out{Tensor::out(os)};
        RunResult r = run(FakeNode("Slice", 13), in, out, ctx);
        REQUIRE_MESSAGE(r.ok(), r.error);
        CHECK((want.empty() || std::memcmp(out[0].raw(), want.data(), want.size() * 4) == 0));
      }
      if (std::all_of(c.step.begin(), c.step.end(), [](int64_t s) { return s == 1; })) {
        std::vector<Tensor> in{x}, out{Tensor::out(os)};
        RunResult r = run(FakeNode("Slice", 1).set("starts", c.st).set("ends", c.en).set("axes", c.ax),
                          in, out);
        REQUIRE_MESSAGE(r.ok(), r.error);
        CHECK((want.empty() || std::memcmp(out[0].raw(), want.data(), want.size() * 4) == 0));
      }
    }
    std::vector<Tensor> in{x, Tensor::i64({1}, {0}), Tensor::i64({1}, {2}), Tensor::i64({1}, {0}),
                           Tensor::i64({1}, {0})};
    std::vector<Tensor> out{Tensor::out({2, 7, 3})};
    CHECK(run(FakeNode("Slice", 13), in, out).error.find("step is 0") != std::string::npos);
  }

  TEST_CASE("ConstantOfShape default zero, Expand broadcast") {
    std::vector<Tensor> in{Tensor::i64({3}, {2, 3, 5})}, out{Tensor::out({2, 3, 5})};
    RunResult r = run(FakeNode("ConstantOfShape", 9), in, out);
    REQUIRE_MESSAGE(r.ok(), r.error);
    for (float v : out[0].floats()) CHECK(v == 0.0f);

    std::mt19937 rng(7);
    Tensor x = random_f32(rng, {3, 1});
    for (Ctx ctx : kAllCtx) {
      std::vector<Tensor> ein{x, Tensor::i64({3}, {2, 1, 5})}, eout{Tensor::out({2, 3, 5})};
      RunResult e = run(FakeNode("Expand", 13), ein, eout, ctx);
      REQUIRE_MESSAGE(e.ok(), e.error);
      for (int64_t f = 0; f < 30; ++f) CHECK(eout[0].f()[f] == x.f()[(f / 5) % 3]);
    }
    std::vector<Tensor> bad{x, Tensor::i64({2}, {2, 1})}, bout{Tensor::out({3, 1})};
    CHECK(run(FakeNode("Expand", 13), bad, bout).status != MN_OK);
  }

  TEST_CASE("Cast between float, ints and bool") {
    std::vector<float> v{-2.7f, -0.5f, 0.0f, 0.4f, 3.9f, 1e20f, NAN};
    std::vector<Tensor> in{Tensor::f32({7}, v)}, out{Tensor::out({7}, MN_I32)};
    RunResult r = run(FakeNode("Cast", 13).set("to", 6), in, out);
    REQUIRE_MESSAGE(r.ok(), r.error);
    const int32_t* y = reinterpret_cast<const int32_t*>(out[0].raw());
    const int32_t want[7] = {-2, 0, 0, 0, 3, 0, 0};  // truncation; unrepresentable -> 0
    for (int i = 0; i < 7; ++i) CHECK(y[i] == want[i]);
    std::vector<Tensor> bout{Tensor::out({7}, MN_BOOL)};
    REQUIRE(run(FakeNode("Cast", 13).set("to", 9), in, bout).ok());
    for (int i = 0; i < 7; ++i) CHECK(bout[0].b()[i] == (v[i] != 0.0f ? 1 : 0));
    std::vector<Tensor> lin{Tensor::i64({3}, {-5, 0, 1LL << 40})}, fout{Tensor::out({3})};
    REQUIRE(run(FakeNode("Cast", 13).set("to", 1), lin, fout).ok());
    CHECK(fout[0].f()[0] == -5.0f);
    CHECK(fout[0].f()[2] == static_cast<float>(1LL << 40));
  }

  TEST_CASE("Split: attribute, input, and default (uneven last chunk)") {
    std::mt19937 rng(11);
    Tensor x = random_f32(rng, {3, 7});
    auto check = [&](const std::vector<Tensor>& outs, const std::vector<int64_t>& sizes) {
      int64_t at = 0;
      for (size_t k = 0; k < sizes.size(); ++k) {
        for (int64_t r0 = 0; r0 < 3; ++r0)
          for (int64_t c = 0; c < sizes[k]; ++c)
            CHECK(outs[k].f()[r0 * sizes[k] + c] == x.f()[r0 * 7 + at + c]);
        at += sizes[k];
      }
    };
    for (Ctx ctx : kAllCtx) {
      std::vector<Tensor> in{x, Tensor::i64({3}, {2, 0, 5})};
      std::vector<Tensor> out{Tensor::out({3, 2}), Tensor::out({3, 0}), Tensor::out({3, 5})};
      RunResult r = run(FakeNode("Split", 13).set("axis", -1), in, out, ctx);
      REQUIRE_MESSAGE(r.ok(), r.error);
      check(out, {2, 0, 5});
    }
    std::vector<Tensor> in{x}, out{Tensor::out({3, 3}), Tensor::out({3, 4})};
    REQUIRE(run(FakeNode("Split", 11).set("axis", 1).set("split", std::vector<int64_t>{3, 4}), in, out).ok());
    check(out, {3, 4});
    std::vector<Tensor> out3{Tensor::out({3, 3}), Tensor::out({3, 3}), Tensor::out({3, 1})};
    REQUIRE(run(FakeNode("Split", 13).set("axis", 1), in, out3).ok());
    check(out3, {3, 3, 1});
  }

  TEST_CASE("Where (three-way broadcast) and Not") {
    std::mt19937 rng(13);
    Tensor c = Tensor::of(MN_BOOL, {4, 1});
    for (int i = 0; i < 4; ++i) c.b()[i] = static_cast<uint8_t>(i % 2);
    Tensor a = random_f32(rng, {1, 5}), b = random_f32(rng, {3, 4, 5});
    for (Ctx ctx : kAllCtx) {
      std::vector<Tensor> in{c, a, b}, out{Tensor::out({3, 4, 5})};
      RunResult r = run(FakeNode("Where", 16), in, out, ctx);
      REQUIRE_MESSAGE(r.ok(), r.error);
      for (int64_t f = 0; f < 60; ++f) {
        const int64_t i = (f / 5) % 4, j = f % 5;
        CHECK(out[0].f()[f] == (c.b()[i] ? a.f()[j] : b.f()[f]));
      }
    }
    std::vector<Tensor> nin{c}, nout{Tensor::out({4, 1}, MN_BOOL)};
    REQUIRE(run(FakeNode("Not", 1), nin, nout).ok());
    for (int i = 0; i < 4; ++i) CHECK(nout[0].b()[i] == 1 - c.b()[i]);
  }

  TEST_CASE("Pad: constant / reflect / edge, negative pads, attribute form") {
    std::mt19937 rng(17);
    const std::vector<int64_t> xs{3, 4};
    Tensor x = random_f32(rng, xs);
    const std::vector<int64_t> pads{1, 2, -1, 3};  // begin h, begin w, end h, end w
    const std::vector<int64_t> os{3 + 1 - 1, 4 + 2 + 3};
    for (const char* mode : {"constant", "reflect", "edge"}) {
      std::vector<float> want(static_cast<size_t>(product(os)));
      for (int64_t f = 0; f < product(os); ++f) {
        std::vector<int64_t> o = unflat(os, f);
        bool outside = false;
        for (int i = 0; i < 2; ++i) {
          int64_t s = o[i] - pads[i], d = xs[i];
          if (s < 0 || s >= d) {
            if (std::string(mode) == "edge") s = s < 0 ? 0 : d - 1;
            else if (std::string(mode) == "reflect") s = s < 0 ? -s : 2 * (d - 1) - s;
            else outside = true;
          }
          o[i] = s;
        }
        want[f] = outside ? 2.5f : x.f()[flat(xs, o)];
      }
      for (Ctx ctx : kAllCtx) {
        std::vector<Tensor> in{x, Tensor::i64({4}, pads), Tensor::f32({}, {2.5f})};
        std::vector<Tensor> out{Tensor::out(os)};
        RunResult r = run(FakeNode("Pad", 13).set("mode", mode), in, out, ctx);
        REQUIRE_MESSAGE(r.ok(), r.error);
        CHECK((want.empty() || std::memcmp(out[0].raw(), want.data(), want.size() * 4) == 0));
      }
      std::vector<Tensor> in{x}, out{Tensor::out(os)};
      RunResult r = run(FakeNode("Pad", 2).set("mode", mode).set("pads", pads).set("value", 2.5f),
                        in, out);
      REQUIRE_MESSAGE(r.ok(), r.error);
      CHECK(std::memcmp(out[0].raw(), want.data(), want.size() * 4) == 0);
    }
  }

  TEST_CASE("Tile") {
    std::mt19937 rng(19);
    Tensor x = random_f32(rng, {2, 3});
    for (Ctx ctx : kAllCtx) {
      std::vector<Tensor> in{x, Tensor::i64({2}, {3, 2})}, out{Tensor::out({6, 6})};
      RunResult r = run(FakeNode("Tile", 13), in, out, ctx);
      REQUIRE_MESSAGE(r.ok(), r.error);
      for (int64_t i = 0; i < 6; ++i)
        for (int64_t j = 0; j < 6; ++j) CHECK(out[0].f()[i * 6 + j] == x.f()[(i % 2) * 3 + j % 3]);
    }
  }

  TEST_CASE("ReduceMean / ReduceMax / ReduceSum over axes, keepdims, noop") {
    std::mt19937 rng(23);
    const std::vector<int64_t> xs{3, 4, 5};
    Tensor x = random_f32(rng, xs);
    for (const char* op : {"ReduceMean", "ReduceMax", "ReduceSum"})
      for (bool keep : {false, true}) {
        // axes {0, 2}: output (4) or (1, 4, 1)
        std::vector<double> want(4, std::string(op) == "ReduceMax" ? -1e30 : 0.0);
        for (int64_t f = 0; f < 60; ++f) {
          const int64_t j = (f / 5) % 4;
          if (std::string(op) == "ReduceMax") want[j] = std::max<double>(want[j], x.f()[f]);
          else want[j] += x.f()[f];
        }
        if (std::string(op) == "ReduceMean")
          for (double& w : want) w /= 15.0;
        std::vector<int64_t> os = keep ? std::vector<int64_t>{1, 4, 1} : std::vector<int64_t>{4};
        std::vector<Tensor> in{x}, out{Tensor::out(os)};
        FakeNode n(op, 11);
        n.set("axes", std::vector<int64_t>{0, -1}).set("keepdims", keep ? 1 : 0);
        if (std::string(op) == "ReduceSum") {  // opset 13: axes as input
          n = FakeNode(op, 13);
          n.set("keepdims", keep ? 1 : 0);
          in.push_back(Tensor::i64({2}, {0, -1}));
        }
        RunResult r = run(n, in, out);
        REQUIRE_MESSAGE(r.ok(), r.error);
        CDT_CHECK_CLOSE(out[0].f(), want);
      }
    // noop_with_empty_axes: identity; without it, everything.
    std::vector<Tensor> in{x, Tensor::i64({0}, {})}, out{Tensor::out(xs)};
    REQUIRE(run(FakeNode("ReduceSum", 13).set("noop_with_empty_axes", 1), in, out).ok());
    CHECK(std::memcmp(out[0].raw(), x.raw(), x.bytes()) == 0);
    std::vector<Tensor> in2{x}, out2{Tensor::out({1, 1, 1})};
    REQUIRE(run(FakeNode("ReduceSum", 13), in2, out2).ok());
    double s = 0;
    for (float v : x.floats()) s += v;
    CDT_CHECK_CLOSE(out2[0].f(), std::vector<double>{s});
  }

  TEST_CASE("ArgMax: ties, select_last_index, keepdims") {
    Tensor x = Tensor::f32({2, 3}, {1, 5, 5, 7, 2, 7});
    for (int last : {0, 1}) {
      std::vector<Tensor> in{x}, out{Tensor::out({2, 1}, MN_I64)};
      REQUIRE(run(FakeNode("ArgMax", 13).set("axis", 1).set("select_last_index", last), in, out).ok());
      CHECK(out[0].l()[0] == (last ? 2 : 1));
      CHECK(out[0].l()[1] == (last ? 2 : 0));
    }
    std::vector<Tensor> in{x}, out{Tensor::out({3}, MN_I64)};
    REQUIRE(run(FakeNode("ArgMax", 13).set("axis", 0).set("keepdims", 0), in, out).ok());
    CHECK(out[0].l()[0] == 1);
    CHECK(out[0].l()[1] == 0);
    CHECK(out[0].l()[2] == 1);
  }

  TEST_CASE("TopK: largest and smallest along an inner axis") {
    std::mt19937 rng(29);
    Tensor x = random_f32(rng, {2, 7, 3});
    for (int largest : {0, 1}) {
      std::vector<Tensor> in{x, Tensor::i64({1}, {4})};
      std::vector<Tensor> out{Tensor::out({2, 4, 3}), Tensor::out({2, 4, 3}, MN_I64)};
      RunResult r = run(FakeNode("TopK", 11).set("axis", 1).set("largest", largest), in, out);
      REQUIRE_MESSAGE(r.ok(), r.error);
      for (int64_t o = 0; o < 2; ++o)
        for (int64_t i = 0; i < 3; ++i) {
          std::vector<std::pair<float, int64_t>> col;
          for (int64_t j = 0; j < 7; ++j) col.push_back({x.f()[(o * 7 + j) * 3 + i], j});
          std::sort(col.begin(), col.end());
          if (largest) std::reverse(col.begin(), col.end());
          for (int64_t j = 0; j < 4; ++j) {
            CHECK(out[0].f()[(o * 4 + j) * 3 + i] == col[j].first);
            CHECK(out[1].l()[(o * 4 + j) * 3 + i] == col[j].second);
          }
        }
    }
  }

  TEST_CASE("DepthToSpace (DCR, CRD) and SpaceToDepth round trip") {
    std::mt19937 rng(31);
    const int64_t n = 2, c = 3, h = 2, w = 5, b = 2;
    Tensor x = random_f32(rng, {n, c * b * b, h, w});
    for (const char* mode : {"DCR", "CRD"}) {
      std::vector<Tensor> in{x}, out{Tensor::out({n, c, h * b, w * b})};
      RunResult r = run(FakeNode("DepthToSpace", 13).set("blocksize", 2).set("mode", mode), in, out);
      REQUIRE_MESSAGE(r.ok(), r.error);
      for (int64_t f = 0; f < out[0].numel(); ++f) {
        std::vector<int64_t> o = unflat({n, c, h * b, w * b}, f);
        const int64_t bi = o[2] % b, bj = o[3] % b;
        const int64_t ch = std::string(mode) == "DCR" ? (bi * b + bj) * c + o[1]
                                                      : o[1] * b * b + bi * b + bj;
        CHECK(out[0].f()[f] == x.f()[flat({n, c * b * b, h, w}, {o[0], ch, o[2] / b, o[3] / b})]);
      }
      if (std::string(mode) == "DCR") {  // SpaceToDepth inverts DCR
        std::vector<Tensor> in2{out[0]}, back{Tensor::out({n, c * b * b, h, w})};
        REQUIRE(run(FakeNode("SpaceToDepth", 13).set("blocksize", 2), in2, back).ok());
        CHECK(std::memcmp(back[0].raw(), x.raw(), x.bytes()) == 0);
      }
    }
  }
}

TEST_SUITE("int_elementwise") {
  TEST_CASE("Add/Sub/Mul/Div on uint8 and int32 wrap/truncate like C; comparisons give bool") {
    Tensor a = Tensor::of(MN_U8, {2, 3}), b = Tensor::of(MN_U8, {3});
    const uint8_t av[6] = {250, 7, 0, 9, 128, 255}, bv[3] = {10, 3, 1};
    std::memcpy(a.raw(), av, 6), std::memcpy(b.raw(), bv, 3);
    for (const char* op : {"Add", "Sub", "Mul", "Div", "Equal", "Less", "Greater", "Max", "Min"}) {
      const std::string o = op;
      const bool cmp = o == "Equal" || o == "Less" || o == "Greater";
      std::vector<Tensor> in{a, b}, out{Tensor::out({2, 3}, cmp ? MN_BOOL : MN_U8)};
      RunResult r = run(FakeNode(op, 13), in, out);
      REQUIRE_MESSAGE(r.ok(), op << ": " << r.error);
      for (int i = 0; i < 6; ++i) {
        const unsigned x = av[i], y = bv[i % 3];
        unsigned want = o == "Add"     ? (x + y) & 255
                        : o == "Sub"   ? (x - y) & 255
                        : o == "Mul"   ? (x * y) & 255
                        : o == "Div"   ? x / y
                        : o == "Equal" ? x == y
                        : o == "Less"  ? x < y
                        : o == "Greater" ? x > y
                        : o == "Max"   ? std::max(x, y)
                                       : std::min(x, y);
        CHECK_MESSAGE(out[0].b()[i] == want, op << " element " << i);
      }
    }
    Tensor c = Tensor::of(MN_I32, {4}), d = Tensor::of(MN_I32, {4});
    const int32_t cv[4] = {-7, 7, INT32_MIN, 5}, dv[4] = {2, -2, -1, 0};
    std::memcpy(c.raw(), cv, 16), std::memcpy(d.raw(), dv, 16);
    std::vector<Tensor> in{c, d}, out{Tensor::out({4}, MN_I32)};
    RunResult r = run(FakeNode("Div", 13), in, out);
    CHECK(r.error.find("division by zero") != std::string::npos);  // dv[3] == 0
    d = Tensor::of(MN_I32, {3});
    std::memcpy(d.raw(), dv, 12);
    std::vector<Tensor> in3{Tensor::of(MN_I32, {3}), d}, out3{Tensor::out({3}, MN_I32)};
    std::memcpy(in3[0].raw(), cv, 12);
    REQUIRE(run(FakeNode("Div", 13), in3, out3).ok());
    const int32_t* q = reinterpret_cast<const int32_t*>(out3[0].raw());
    CHECK(q[0] == -3);
    CHECK(q[1] == -3);
    CHECK(q[2] == INT32_MIN);  // wraps instead of trapping
  }

  TEST_CASE("Clip on int8 with and without bounds") {
    Tensor x = Tensor::of(MN_I8, {5}), lo = Tensor::of(MN_I8, {}), hi = Tensor::of(MN_I8, {});
    const int8_t xv[5] = {-128, -5, 0, 6, 127};
    std::memcpy(x.raw(), xv, 5);
    *reinterpret_cast<int8_t*>(lo.raw()) = -4;
    *reinterpret_cast<int8_t*>(hi.raw()) = 5;
    std::vector<Tensor> in{x, lo, hi}, out{Tensor::out({5}, MN_I8)};
    RunResult r = run(FakeNode("Clip", 13), in, out);
    REQUIRE_MESSAGE(r.ok(), r.error);
    for (int i = 0; i < 5; ++i)
      CHECK(reinterpret_cast<const int8_t*>(out[0].raw())[i] == std::min<int>(5, std::max<int>(-4, xv[i])));
    std::vector<Tensor> in2{x}, out2{Tensor::out({5}, MN_I8)};
    REQUIRE(run(FakeNode("Clip", 13), in2, out2).ok());
    CHECK(std::memcmp(out2[0].raw(), xv, 5) == 0);
  }
}

TEST_SUITE("norm_ops") {
  TEST_CASE("InstanceNormalization and LRN against the formulas") {
    std::mt19937 rng(37);
    const int64_t n = 2, c = 5, s = 7;
    Tensor x = random_f32(rng, {n, c, s});
    Tensor sc = random_f32(rng, {c}), bb = random_f32(rng, {c});
    std::vector<double> want(static_cast<size_t>(n * c * s));
    for (int64_t p = 0; p < n * c; ++p) {
      double m = 0, v = 0;
      for (int64_t i = 0; i < s; ++i) m += x.f()[p * s + i] / double(s);
      for (int64_t i = 0; i < s; ++i) v += std::pow(x.f()[p * s + i] - m, 2) / double(s);
      for (int64_t i = 0; i < s; ++i)
        want[p * s + i] = sc.f()[p % c] * (x.f()[p * s + i] - m) / std::sqrt(v + 1e-3) + bb.f()[p % c];
    }
    for (Ctx ctx : kAllCtx) {
      std::vector<Tensor> in{x, sc, bb}, out{Tensor::out({n, c, s})};
      RunResult r = run(FakeNode("InstanceNormalization", 6).set("epsilon", 1e-3f), in, out, ctx);
      REQUIRE_MESSAGE(r.ok(), r.error);
      CDT_CHECK_CLOSE(out[0].f(), want);
    }
    const int64_t size = 4;  // even: window [c-1, c+2]
    for (int64_t p = 0; p < n * c * s; ++p) {
      const int64_t b = p / (c * s), ch = (p / s) % c, i = p % s;
      double sq = 0;
      for (int64_t k = ch - 1; k <= ch + 2; ++k)
        if (k >= 0 && k < c) sq += std::pow(x.f()[(b * c + k) * s + i], 2);
      want[p] = x.f()[p] / std::pow(2.0 + 0.5 / size * sq, 0.6);
    }
    for (Ctx ctx : kAllCtx) {
      std::vector<Tensor> in{x}, out{Tensor::out({n, c, s})};
      FakeNode node("LRN", 13);
      node.set("size", size).set("alpha", 0.5f).set("beta", 0.6f).set("bias", 2.0f);
      RunResult r = run(node, in, out, ctx);
      REQUIRE_MESSAGE(r.ok(), r.error);
      CDT_CHECK_CLOSE(out[0].f(), want);
    }
  }
}
