// Data-movement ops: Reshape, Flatten (later Squeeze, Unsqueeze, Identity, Dropout,
// Concat, Transpose).
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>

#include "test_util.h"

using namespace cdt;

TEST_SUITE("shape_ops") {
  TEST_CASE("Reshape copies any element type, and works in place") {
    for (Ctx ctx : kAllCtx)
      for (bool in_place : {false, true}) {
        std::mt19937 rng(1);
        Tensor x = random_f32(rng, {2, 3, 4});
        std::vector<Tensor> in{x, Tensor::i64({2}, {6, 4}).as_constant()}, out{Tensor::out({6, 4})};
        RunOptions o;
        o.ctx = ctx;
        o.in_place = in_place;
        RunResult r = run(FakeNode("Reshape", 14), in, out, o);
        REQUIRE_MESSAGE(r.ok(), r.error);
        CHECK(r.inplace_input == 0);
        CHECK(r.kernel_name == "reshape_copy_ref");
        CHECK(std::memcmp(out[0].raw(), x.raw(), x.bytes()) == 0);
      }
    // int64 data, and a 4 MiB tensor that the copy splits.
    std::vector<int64_t> v(600000);
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<int64_t>(i * 7919);
    for (Ctx ctx : kAllCtx) {
      std::vector<Tensor> in{Tensor::i64({600000}, v), Tensor::i64({2}, {1000, 600})};
      std::vector<Tensor> out{Tensor::out({1000, 600}, MN_I64)};
      RunResult r = run(FakeNode("Reshape", 13), in, out, ctx);
      REQUIRE_MESSAGE(r.ok(), r.error);
      if (ctx == Ctx::kChunky) CHECK(r.chunks > 1);
      CHECK(std::memcmp(out[0].raw(), v.data(), v.size() * 8) == 0);
    }
  }

  TEST_CASE("Reshape errors") {
    std::vector<Tensor> in{Tensor::f32({2, 3}), Tensor::i64({1}, {5})}, out{Tensor::out({5})};
    RunResult r = run(FakeNode("Reshape", 14), in, out);
    CHECK(r.status == MN_ERR_INVALID_ARGUMENT);
    CHECK(r.error.find("Reshape") != std::string::npos);
    std::vector<Tensor> no_shape{Tensor::f32({2, 3})}, out2{Tensor::out({6})};
    CHECK(bid(FakeNode("Reshape", 14), no_shape, out2).cost < 0);
    // Reshape-1 took the shape as an attribute: one input is right there.
    CHECK(run(FakeNode("Reshape", 1).set("shape", std::vector<int64_t>{6}), no_shape, out2).ok());
    std::vector<Tensor> str{Tensor::of(MN_STRING, {2}), Tensor::i64({1}, {2})};
    std::vector<Tensor> out3{Tensor::out({2}, MN_STRING)};
    CHECK(bid(FakeNode("Reshape", 14), str, out3).cost < 0);
  }

  TEST_CASE("Flatten: every axis, checked output shape") {
    std::mt19937 rng(9);
    Tensor x = random_f32(rng, {2, 3, 4, 5});
    for (int axis = -4; axis <= 4; ++axis) {
      const int a = axis < 0 ? axis + 4 : axis;
      int64_t rows = 1;
      for (int i = 0; i < a; ++i) rows *= x.shape[i];
      std::vector<Tensor> in{x}, out{Tensor::out({rows, 120 / rows})};
      CAPTURE(axis);
      RunResult r =
          run(FakeNode("Flatten", 13).set("axis", axis), in, out, kAllCtx[(axis + 4) % 3]);
      REQUIRE_MESSAGE(r.ok(), r.error);
      CHECK(r.kernel_name == "flatten_copy_ref");
      CHECK(std::memcmp(out[0].raw(), x.raw(), x.bytes()) == 0);
    }
    {  // default axis 1
      std::vector<Tensor> in{x}, out{Tensor::out({2, 60})};
      CHECK(run(FakeNode("Flatten", 9), in, out).ok());
    }
    {  // a shape that is not the flattening for axis 1 (same element count)
      std::vector<Tensor> in{x}, out{Tensor::out({6, 20})};
      RunResult r = run(FakeNode("Flatten", 13), in, out);
      CHECK(r.status == MN_ERR_INVALID_ARGUMENT);
    }
    {
      std::vector<Tensor> in{x}, out{Tensor::out({120})};
      CHECK(bid(FakeNode("Flatten", 13).set("axis", 5), in, out).cost < 0);
    }
  }

  TEST_CASE("Squeeze / Unsqueeze / Identity copy (also in place)") {
    std::mt19937 rng(2);
    Tensor x = random_f32(rng, {1, 3, 1, 4});
    for (bool in_place : {false, true}) {
      {
        std::vector<Tensor> in{x}, out{Tensor::out({3, 4})};
        RunOptions o;
        o.in_place = in_place;
        RunResult r =
            run(FakeNode("Squeeze", 11).set("axes", std::vector<int64_t>{0, 2}), in, out, o);
        REQUIRE_MESSAGE(r.ok(), r.error);
        CHECK(r.inplace_input == 0);
        CHECK(std::memcmp(out[0].raw(), x.raw(), x.bytes()) == 0);
      }
      {
        std::vector<Tensor> in{x, Tensor::i64({1}, {0})}, out{Tensor::out({3, 1, 4})};
        RunOptions o;
        o.in_place = in_place;
        RunResult r = run(FakeNode("Squeeze", 13), in, out, o);
        REQUIRE_MESSAGE(r.ok(), r.error);
        CHECK(std::memcmp(out[0].raw(), x.raw(), x.bytes()) == 0);
      }
      {
        std::vector<Tensor> in{x, Tensor::i64({1}, {0})}, out{Tensor::out({1, 1, 3, 1, 4})};
        RunOptions o;
        o.in_place = in_place;
        RunResult r = run(FakeNode("Unsqueeze", 13), in, out, o);
        REQUIRE_MESSAGE(r.ok(), r.error);
        CHECK(r.kernel_name == "unsqueeze_copy_ref");
        CHECK(std::memcmp(out[0].raw(), x.raw(), x.bytes()) == 0);
      }
      {
        std::vector<Tensor> in{Tensor::i64({3}, {4, 5, 6})}, out{Tensor::out({3}, MN_I64)};
        RunOptions o;
        o.in_place = in_place;
        RunResult r = run(FakeNode("Identity", 16), in, out, o);
        REQUIRE_MESSAGE(r.ok(), r.error);
        CHECK(out[0].l()[2] == 6);
      }
    }
    {  // Unsqueeze-13 needs its axes input; Unsqueeze-11 its attribute (shape inference's job)
      std::vector<Tensor> in{x}, out{Tensor::out({1, 1, 3, 1, 4})};
      CHECK(bid(FakeNode("Unsqueeze", 13), in, out).cost < 0);
      CHECK(run(FakeNode("Unsqueeze", 11).set("axes", std::vector<int64_t>{0}), in, out).ok());
    }
    {  // element count mismatch
      std::vector<Tensor> in{x}, out{Tensor::out({3, 5})};
      CHECK(run(FakeNode("Squeeze", 11), in, out).status == MN_ERR_INVALID_ARGUMENT);
      std::vector<Tensor> out2{Tensor::out({12})};
      CHECK(run(FakeNode("Identity", 11), in, out2).status == MN_ERR_INVALID_ARGUMENT);
    }
  }

  TEST_CASE("Dropout at inference: copy, mask all true, training refused") {
    Tensor x = Tensor::f32({2, 3}, {1, 2, 3, 4, 5, 6});
    {  // opset 12: bool mask
      std::vector<Tensor> in{x, Tensor::f32({}, {0.5f})},
          out{Tensor::out({2, 3}), Tensor::out({2, 3}, MN_BOOL)};
      RunResult r = run(FakeNode("Dropout", 12), in, out);
      REQUIRE_MESSAGE(r.ok(), r.error);
      CHECK(r.kernel_name == "dropout_copy_ref");
      CDT_CHECK_CLOSE(out[0].f(), x.floats());
      CHECK(std::vector<uint8_t>(out[1].b(), out[1].b() + 6) == std::vector<uint8_t>(6, 1));
    }
    {  // opset 7: mask has the input's type
      std::vector<Tensor> in{x}, out{Tensor::out({2, 3}), Tensor::out({2, 3})};
      RunResult r = run(FakeNode("Dropout", 7).set("ratio", 0.3f), in, out,
                        RunOptions{Ctx::kChunky, false, false, true});
      REQUIRE_MESSAGE(r.ok(), r.error);
      CDT_CHECK_CLOSE(out[1].f(), std::vector<float>(6, 1.0f));
    }
    {  // training_mode: constant true refused at bid; a computed true is a run-time error
      Tensor yes = Tensor::of(MN_BOOL, {});
      yes.b()[0] = 1;
      std::vector<Tensor> in{x, Tensor::none(), yes.as_constant()}, out{Tensor::out({2, 3})};
      CHECK(bid(FakeNode("Dropout", 13), in, out).cost < 0);
      in[2].constant = false;
      RunResult r = run(FakeNode("Dropout", 13), in, out);
      CHECK(r.bid_ok);
      CHECK(r.status == MN_ERR_INVALID_ARGUMENT);
      CHECK(r.error.find("training_mode") != std::string::npos);
      in[2].b()[0] = 0;
      CHECK(run(FakeNode("Dropout", 13), in, out).ok());
    }
  }

  TEST_CASE("Concat along every axis, any element type") {
    std::mt19937 rng(14);
    for (int axis = -3; axis < 3; ++axis) {
      const int a = axis < 0 ? axis + 3 : axis;
      std::vector<int64_t> base{2, 3, 4};
      std::vector<Tensor> in;
      std::vector<int64_t> os = base;
      os[a] = 0;
      for (int64_t len : {1, 0, 3, 2}) {
        std::vector<int64_t> sh = base;
        sh[a] = len;
        in.push_back(random_f32(rng, sh));
        os[a] += len;
      }
      // naive: output element (i, j, k) comes from the input whose axis range holds it
      std::vector<float> want;
      std::vector<int64_t> idx(3, 0);
      for (int64_t f = 0; f < product(os); ++f) {
        int64_t rem = f;
        for (int d = 2; d >= 0; --d) {
          idx[d] = rem % os[d];
          rem /= os[d];
        }
        int64_t pos = idx[a];
        size_t k = 0;
        while (pos >= in[k].shape[a]) pos -= in[k++].shape[a];
        std::vector<int64_t> li = idx;
        li[a] = pos;
        want.push_back(in[k].f()[(li[0] * in[k].shape[1] + li[1]) * in[k].shape[2] + li[2]]);
      }
      std::vector<Tensor> out{Tensor::out(os)};
      CAPTURE(axis);
      RunResult r = run(FakeNode("Concat", 13).set("axis", axis), in, out, kAllCtx[(axis + 3) % 3]);
      REQUIRE_MESSAGE(r.ok(), r.error);
      CHECK(r.kernel_name == "concat_copy_ref");
      CDT_CHECK_CLOSE(out[0].f(), want);
    }
    {  // int64 shape pieces
      std::vector<Tensor> in{Tensor::i64({1}, {1}), Tensor::i64({2}, {-1, 7})};
      std::vector<Tensor> out{Tensor::out({3}, MN_I64)};
      REQUIRE(run(FakeNode("Concat", 13).set("axis", 0), in, out).ok());
      CHECK(std::vector<int64_t>(out[0].l(), out[0].l() + 3) == std::vector<int64_t>({1, -1, 7}));
    }
    {  // a big concat is split
      Tensor a = random_f32(rng, {2000, 64}), b = random_f32(rng, {2000, 100});
      std::vector<Tensor> in{a, b}, out{Tensor::out({2000, 164})};
      RunResult r = run(FakeNode("Concat", 13).set("axis", 1), in, out, Ctx::kChunky);
      REQUIRE_MESSAGE(r.ok(), r.error);
      CHECK(r.chunks > 1);
      bool same = true;
      for (int64_t i = 0; i < 2000; ++i)
        same = same && std::memcmp(out[0].f() + i * 164, a.f() + i * 64, 64 * 4) == 0 &&
               std::memcmp(out[0].f() + i * 164 + 64, b.f() + i * 100, 100 * 4) == 0;
      CHECK(same);
    }
    {  // errors
      std::vector<Tensor> in{Tensor::f32({2, 3}), Tensor::f32({3, 3})}, out{Tensor::out({2, 6})};
      RunResult r = run(FakeNode("Concat", 13).set("axis", 1), in, out);
      CHECK(r.status == MN_ERR_INVALID_ARGUMENT);
      CHECK(bid(FakeNode("Concat", 13), in, out).cost < 0);  // axis required
      CHECK(bid(FakeNode("Concat", 13).set("axis", 2), in, out).cost < 0);
      std::vector<Tensor> mixed{Tensor::f32({2}), Tensor::i64({2})}, out2{Tensor::out({4})};
      CHECK(bid(FakeNode("Concat", 13).set("axis", 0), mixed, out2).cost < 0);
    }
  }

  TEST_CASE("Transpose: random permutations, all element sizes") {
    std::mt19937 rng(15);
    const int32_t dtypes[] = {MN_F32, MN_I64, MN_U8, MN_F16};
    for (int i = 0; i < 120; ++i) {
      const int r = 1 + static_cast<int>(rng() % 6);
      std::vector<int64_t> sh(r), perm(r);
      for (int d = 0; d < r; ++d) {
        sh[d] = 1 + rng() % 5;
        perm[d] = d;
      }
      std::shuffle(perm.begin(), perm.end(), rng);
      const bool default_perm = i % 7 == 0;
      if (default_perm)
        for (int d = 0; d < r; ++d) perm[d] = r - 1 - d;
      const int32_t dt = dtypes[i % 4];
      Tensor x = Tensor::of(dt, sh);
      for (size_t b = 0; b < x.bytes(); ++b) x.b()[b] = static_cast<uint8_t>(rng());
      std::vector<int64_t> os(r);
      for (int d = 0; d < r; ++d) os[d] = sh[perm[d]];
      // naive: output index o reads input index with in[perm[d]] = o[d]
      const size_t es = x.bytes() / static_cast<size_t>(x.numel());
      std::vector<uint8_t> want(x.bytes());
      std::vector<int64_t> o(r, 0), in_idx(r);
      for (int64_t f = 0; f < x.numel(); ++f) {
        int64_t rem = f;
        for (int d = r - 1; d >= 0; --d) {
          o[d] = rem % os[d];
          rem /= os[d];
        }
        for (int d = 0; d < r; ++d) in_idx[perm[d]] = o[d];
        int64_t off = 0;
        for (int d = 0; d < r; ++d) off = off * sh[d] + in_idx[d];
        std::memcpy(&want[f * es], x.b() + off * es, es);
      }
      std::vector<Tensor> in{x}, out{Tensor::of(dt, os)};
      FakeNode node("Transpose", 13);
      if (!default_perm) node.set("perm", perm);
      CAPTURE(shape_str(sh));
      CAPTURE(shape_str(perm));
      RunResult res = run(node, in, out, kAllCtx[i % 3]);
      REQUIRE_MESSAGE(res.ok(), res.error);
      CHECK(res.kernel_name == "transpose_ref");
      CHECK(std::memcmp(out[0].raw(), want.data(), want.size()) == 0);
    }
    {  // known answer and a big NCHW -> NHWC
      std::vector<Tensor> in{Tensor::f32({2, 3}, {1, 2, 3, 4, 5, 6})}, out{Tensor::out({3, 2})};
      REQUIRE(run(FakeNode("Transpose", 13), in, out).ok());
      CDT_CHECK_CLOSE(out[0].f(), std::vector<float>({1, 4, 2, 5, 3, 6}));
      Tensor x = random_f32(rng, {2, 16, 33, 35});
      std::vector<Tensor> in2{x}, out2{Tensor::out({2, 33, 35, 16})};
      RunResult r = run(FakeNode("Transpose", 13).set("perm", std::vector<int64_t>{0, 2, 3, 1}),
                        in2, out2, Ctx::kChunky);
      REQUIRE_MESSAGE(r.ok(), r.error);
      CHECK(r.chunks > 1);
      bool same = true;
      for (int64_t n = 0; n < 2; ++n)
        for (int64_t c = 0; c < 16; ++c)
          for (int64_t h = 0; h < 33; ++h)
            for (int64_t w = 0; w < 35; ++w)
              same = same && out2[0].f()[((n * 33 + h) * 35 + w) * 16 + c] ==
                                 x.f()[((n * 16 + c) * 33 + h) * 35 + w];
      CHECK(same);
    }
    {  // bad perms
      std::vector<Tensor> in{Tensor::f32({2, 3})}, out{Tensor::out({3, 2})};
      CHECK(bid(FakeNode("Transpose", 13).set("perm", std::vector<int64_t>{0, 0}), in, out).cost <
            0);
      CHECK(bid(FakeNode("Transpose", 13).set("perm", std::vector<int64_t>{1, 2}), in, out).cost <
            0);
      CHECK(
          bid(FakeNode("Transpose", 13).set("perm", std::vector<int64_t>{2, 1, 0}), in, out).cost <
          0);
      std::vector<Tensor> out2{Tensor::out({2, 3})};
      CHECK(run(FakeNode("Transpose", 13), in, out2).status == MN_ERR_INVALID_ARGUMENT);
    }
  }
}
