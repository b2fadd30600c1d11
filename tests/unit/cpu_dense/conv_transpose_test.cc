// ConvTranspose against its definition written as a scatter: every input element, times
// every tap of its group's weights, is added at output position i*s + k*d - pad_begin
// (dropped when that falls outside the output). The kernel computes the same sum as a
// gather per output row, so agreement over random shapes checks the index algebra.
#include <doctest/doctest.h>

#include "test_util.h"

using namespace cdt;

namespace {

struct DeconvSpec {
  std::vector<int64_t> x;  // N, C, spatial...
  int64_t M = 1;           // output channels (M/group per group)
  int64_t group = 1;
  std::vector<int64_t> k, s, d, pads, out_pad, out_shape;
  std::string auto_pad = "NOTSET";
  bool bias = true;
};

int64_t floor_div2(int64_t a) { return a >= 0 ? a / 2 : -((-a + 1) / 2); }

// Output size and pad_begin per the ONNX spec, written independently of the kernel.
void spec_geometry(const DeconvSpec& c, size_t i, int64_t* out, int64_t* pb) {
  const size_t nsp = c.x.size() - 2;
  const int64_t in = c.x[2 + i], s = c.s[i], k = c.k[i], d = c.d[i];
  const int64_t op = c.out_pad.empty() ? 0 : c.out_pad[i];
  const int64_t natural = s * (in - 1) + op + (k - 1) * d + 1;
  int64_t target = c.out_shape.empty() ? -1 : c.out_shape[i];
  if (target < 0 && (c.auto_pad == "SAME_UPPER" || c.auto_pad == "SAME_LOWER")) target = in * s;
  if (target >= 0) {
    const int64_t total = natural - target;
    *pb = c.auto_pad == "SAME_UPPER" ? floor_div2(total) : total - floor_div2(total);
    *out = target;
    return;
  }
  const int64_t b = c.auto_pad == "VALID" || c.pads.empty() ? 0 : c.pads[i];
  const int64_t e = c.auto_pad == "VALID" || c.pads.empty() ? 0 : c.pads[nsp + i];
  *pb = b;
  *out = natural - b - e;
}

bool next_index(std::vector<int64_t>& idx, const std::vector<int64_t>& dims) {
  for (size_t i = idx.size(); i-- > 0;) {
    if (++idx[i] < dims[i]) return true;
    idx[i] = 0;
  }
  return false;
}

int64_t offset(const std::vector<int64_t>& dims, const std::vector<int64_t>& idx) {
  int64_t o = 0;
  for (size_t i = 0; i < dims.size(); ++i) o = o * dims[i] + idx[i];
  return o;
}

struct Problem {
  Tensor x, w, b;
  std::vector<int64_t> out_shape;
  std::vector<double> want;
};

Problem make_problem(std::mt19937& rng, const DeconvSpec& c) {
  const size_t nsp = c.x.size() - 2;
  const int64_t N = c.x[0], C = c.x[1], Cg = C / c.group, M = c.M, Mg = M / c.group;
  std::vector<int64_t> ws{C, Mg};
  ws.insert(ws.end(), c.k.begin(), c.k.end());
  Problem p;
  p.x = random_f32(rng, c.x);
  p.w = random_f32(rng, ws);
  p.b = random_f32(rng, {M});
  std::vector<int64_t> os(nsp), pb(nsp);
  for (size_t i = 0; i < nsp; ++i) spec_geometry(c, i, &os[i], &pb[i]);
  p.out_shape = {N, M};
  p.out_shape.insert(p.out_shape.end(), os.begin(), os.end());
  p.want.assign(static_cast<size_t>(product(p.out_shape)), 0.0);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t m = 0; m < M; ++m) {
      std::vector<int64_t> o(nsp, 0);
      do {
        std::vector<int64_t> yi{n, m};
        yi.insert(yi.end(), o.begin(), o.end());
        p.want[offset(p.out_shape, yi)] = c.bias ? p.b.f()[m] : 0.0;
      } while (next_index(o, os));
    }
  for (int64_t n = 0; n < N; ++n)
    for (int64_t ic = 0; ic < C; ++ic) {
      const int64_t g = ic / Cg;
      std::vector<int64_t> xi(nsp, 0);
      std::vector<int64_t> xsp(c.x.begin() + 2, c.x.end());
      do {
        std::vector<int64_t> xfull{n, ic};
        xfull.insert(xfull.end(), xi.begin(), xi.end());
        const double xv = p.x.f()[offset(c.x, xfull)];
        for (int64_t mg = 0; mg < Mg; ++mg) {
          std::vector<int64_t> kk(nsp, 0);
          do {
            std::vector<int64_t> yi{n, g * Mg + mg};
            bool inside = true;
            for (size_t i = 0; i < nsp; ++i) {
              const int64_t pos = xi[i] * c.s[i] + kk[i] * c.d[i] - pb[i];
              inside = inside && pos >= 0 && pos < os[i];
              yi.push_back(pos);
            }
            if (!inside) continue;
            std::vector<int64_t> wi{ic, mg};
            wi.insert(wi.end(), kk.begin(), kk.end());
            p.want[offset(p.out_shape, yi)] += xv * p.w.f()[offset(ws, wi)];
          } while (next_index(kk, c.k));
        }
      } while (next_index(xi, xsp));
    }
  return p;
}

FakeNode deconv_node(const DeconvSpec& c, bool kernel_attr) {
  FakeNode node("ConvTranspose", 11);
  node.set("group", c.group).set("strides", c.s).set("dilations", c.d);
  if (c.auto_pad != "NOTSET") node.set("auto_pad", c.auto_pad);
  if (!c.pads.empty()) node.set("pads", c.pads);
  if (!c.out_pad.empty()) node.set("output_padding", c.out_pad);
  if (!c.out_shape.empty()) node.set("output_shape", c.out_shape);
  if (kernel_attr) node.set("kernel_shape", c.k);
  return node;
}

void check(std::mt19937& rng, const DeconvSpec& c, Ctx ctx, bool hide_dims = false) {
  Problem p = make_problem(rng, c);
  std::vector<Tensor> in{p.x, p.w};
  in[1].as_constant();
  if (c.bias) in.push_back(p.b);
  std::vector<Tensor> out{Tensor::out(p.out_shape)};
  CAPTURE(shape_str(c.x));
  CAPTURE(c.M);
  CAPTURE(c.group);
  CAPTURE(shape_str(c.k));
  CAPTURE(shape_str(c.s));
  CAPTURE(shape_str(c.d));
  CAPTURE(shape_str(c.pads));
  CAPTURE(shape_str(c.out_pad));
  CAPTURE(shape_str(c.out_shape));
  CAPTURE(c.auto_pad);
  CAPTURE(ctx_name(ctx));
  RunOptions o;
  o.ctx = ctx;
  o.hide_dims_at_prepare = hide_dims;
  RunResult r = run(deconv_node(c, rng() % 2 == 0), in, out, o);
  REQUIRE_MESSAGE(r.ok(), r.error);
  CDT_CHECK_CLOSE(out[0].f(), p.want);
}

}  // namespace

TEST_SUITE("conv_transpose") {
  TEST_CASE("ConvTranspose known answers") {
    {  // 1-D, stride 2: x [1, 2, 3] * w [1, 10] -> [1, 10, 2, 20, 3, 30]
      std::vector<Tensor> in{Tensor::f32({1, 1, 3}, {1, 2, 3}), Tensor::f32({1, 1, 2}, {1, 10})};
      std::vector<Tensor> out{Tensor::out({1, 1, 6})};
      RunResult r = run(FakeNode("ConvTranspose", 11).set("strides", std::vector<int64_t>{2}), in, out);
      REQUIRE_MESSAGE(r.ok(), r.error);
      CHECK(r.kernel_name == "f32_deconv1d_ref");
      CDT_CHECK_CLOSE(out[0].f(), std::vector<float>({1, 10, 2, 20, 3, 30}));
    }
    {  // stride 1 overlaps: [1, 2, 3] * [1, 1] = [1, 3, 5, 3]; pads 1/1 crop to [3, 5]
      std::vector<Tensor> in{Tensor::f32({1, 1, 3}, {1, 2, 3}), Tensor::f32({1, 1, 2}, {1, 1}),
                             Tensor::f32({1}, {0.5f})};
      std::vector<Tensor> out{Tensor::out({1, 1, 2})};
      RunResult r = run(FakeNode("ConvTranspose", 11).set("pads", std::vector<int64_t>{1, 1}), in, out);
      REQUIRE_MESSAGE(r.ok(), r.error);
      CDT_CHECK_CLOSE(out[0].f(), std::vector<float>({3.5f, 5.5f}));
    }
    {  // output_padding adds a bias-only element at the end
      std::vector<Tensor> in{Tensor::f32({1, 1, 2}, {1, 2}), Tensor::f32({1, 1, 1}, {3}),
                             Tensor::f32({1}, {-1})};
      std::vector<Tensor> out{Tensor::out({1, 1, 4})};
      RunResult r = run(FakeNode("ConvTranspose", 11)
                            .set("strides", std::vector<int64_t>{2})
                            .set("output_padding", std::vector<int64_t>{1}),
                        in, out);
      REQUIRE_MESSAGE(r.ok(), r.error);
      CDT_CHECK_CLOSE(out[0].f(), std::vector<float>({2, -1, 5, -1}));
    }
  }

  TEST_CASE("ConvTranspose matches the scatter definition over many random shapes") {
    std::mt19937 rng(7);
    int cases = 0;
    const char* pads_modes[] = {"NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"};
    for (int t = 0; t < 240; ++t) {
      DeconvSpec c;
      const size_t nsp = 1 + rng() % 3;
      c.group = 1 + rng() % 3;
      const int64_t Cg = 1 + rng() % 3, Mg = 1 + rng() % 3;
      c.x = {1 + static_cast<int64_t>(rng() % 2), c.group * Cg};
      c.M = c.group * Mg;
      for (size_t i = 0; i < nsp; ++i) {
        c.x.push_back(1 + rng() % (nsp == 3 ? 4 : 7));
        c.k.push_back(1 + rng() % 3);
        c.s.push_back(1 + rng() % 3);
        c.d.push_back(1 + rng() % 2);
      }
      const int kind = static_cast<int>(rng() % 4);  // pads / auto_pad / output_shape / plain
      if (kind == 0) {
        for (size_t i = 0; i < 2 * nsp; ++i) c.pads.push_back(rng() % 2);
      } else if (kind == 1) {
        c.auto_pad = pads_modes[1 + rng() % 3];
      } else if (kind == 2) {
        for (size_t i = 0; i < nsp; ++i) {  // near the natural size, sometimes beyond it
          const int64_t natural = c.s[i] * (c.x[2 + i] - 1) + (c.k[i] - 1) * c.d[i] + 1;
          c.out_shape.push_back(std::max<int64_t>(1, natural - 1 + static_cast<int64_t>(rng() % 3)));
        }
        if (rng() % 2) c.auto_pad = "SAME_UPPER";
      }
      if (kind != 1 && rng() % 3 == 0)
        for (size_t i = 0; i < nsp; ++i)
          c.out_pad.push_back(static_cast<int64_t>(rng() % std::max(c.s[i], c.d[i])));
      // Keep only problems with a positive output in every dim.
      bool ok = true;
      for (size_t i = 0; i < nsp; ++i) {
        int64_t o, pb;
        spec_geometry(c, i, &o, &pb);
        ok = ok && o >= 1;
      }
      if (!ok) continue;
      c.bias = rng() % 4 != 0;
      check(rng, c, kAllCtx[t % 3], t % 5 == 0);
      ++cases;
    }
    CHECK(cases > 150);
  }

  TEST_CASE("ConvTranspose refuses bad attributes and shapes") {
    std::vector<Tensor> in{Tensor::f32({1, 2, 3}), Tensor::f32({3, 1, 2})};
    std::vector<Tensor> out{Tensor::out({1, 1, 4})};
    RunResult r = run(FakeNode("ConvTranspose", 11), in, out);
    CHECK_FALSE(r.ok());
    CHECK(r.bid_reason.find("channels") != std::string::npos);
    std::vector<Tensor> in2{Tensor::f32({1, 1, 3}), Tensor::f32({1, 1, 2})};
    std::vector<Tensor> out2{Tensor::out({1, 1, 5})};  // attributes give 4
    r = run(FakeNode("ConvTranspose", 11), in2, out2);
    CHECK_FALSE(r.ok());
    r = run(FakeNode("ConvTranspose", 11).set("strides", std::vector<int64_t>{0}), in2, out2);
    CHECK_FALSE(r.ok());
  }
}
