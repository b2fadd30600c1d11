// MaxPool on int8 / uint8 and the Indices output (row- and column-major), against the
// direct definition: scan each window in row-major order, keep the first maximum, and
// report its flat position in the input (padding not counted). Values are drawn from a
// small range so windows hold ties, which pins the tie rule.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>

#include "test_util.h"

using namespace cdt;

namespace {

bool next_index(std::vector<int64_t>& idx, const std::vector<int64_t>& dims) {
  for (size_t i = idx.size(); i-- > 0;) {
    if (++idx[i] < dims[i]) return true;
    idx[i] = 0;
  }
  return false;
}

double value(const Tensor& t, int64_t i) {
  switch (t.dtype) {
    case MN_I8: return reinterpret_cast<const int8_t*>(t.raw())[i];
    case MN_U8: return t.b()[i];
    default: return t.f()[i];
  }
}

struct Case {
  std::vector<int64_t> x, k, s, d, pads;
  bool col = false;
};

// Reference values and indices; out shape from floor mode with explicit pads.
void reference(const Case& c, const Tensor& x, std::vector<int64_t>* os, std::vector<double>* vals,
               std::vector<int64_t>* idx) {
  const size_t nsp = c.k.size();
  os->clear();
  for (size_t i = 0; i < nsp; ++i)
    os->push_back((c.x[2 + i] + c.pads[i] + c.pads[nsp + i] - ((c.k[i] - 1) * c.d[i] + 1)) / c.s[i] + 1);
  std::vector<int64_t> sp(c.x.begin() + 2, c.x.end());
  const int64_t plane = product(sp);
  for (int64_t nc = 0; nc < c.x[0] * c.x[1]; ++nc) {
    std::vector<int64_t> o(nsp, 0);
    do {
      bool any = false;
      double best = 0;
      int64_t at = -1;
      std::vector<int64_t> kk(nsp, 0);
      do {
        std::vector<int64_t> pos(nsp);
        bool inside = true;
        for (size_t i = 0; i < nsp; ++i) {
          pos[i] = o[i] * c.s[i] - c.pads[i] + kk[i] * c.d[i];
          inside = inside && pos[i] >= 0 && pos[i] < sp[i];
        }
        if (!inside) continue;
        int64_t row = 0, colm = 0;
        for (size_t i = 0; i < nsp; ++i) row = row * sp[i] + pos[i];
        for (size_t i = nsp; i-- > 0;) colm = colm * sp[i] + pos[i];
        const double v = value(x, nc * plane + row);
        if (!any || v > best) {
          any = true;
          best = v;
          at = nc * plane + (c.col ? colm : row);
        }
      } while (next_index(kk, c.k));
      // A window wholly in the padding (dilation can make one) holds no element: the
      // type's lowest value (-inf for float32), index -1.
      if (!any) best = x.dtype == MN_F32 ? -INFINITY : x.dtype == MN_I8 ? -128.0 : 0.0;
      vals->push_back(best);
      idx->push_back(at);
    } while (next_index(o, *os));
  }
}

}  // namespace

TEST_SUITE("maxpool_indices") {
  TEST_CASE("MaxPool int8 / uint8 / float32 with Indices, row- and column-major") {
    std::mt19937 rng(5);
    const int32_t dtypes[] = {MN_U8, MN_I8, MN_F32};
    int cases = 0;
    for (int t = 0; t < 150; ++t) {
      Case c;
      const size_t nsp = 1 + rng() % 3;
      c.x = {1 + static_cast<int64_t>(rng() % 2), 1 + static_cast<int64_t>(rng() % 3)};
      for (size_t i = 0; i < nsp; ++i) {
        c.x.push_back(1 + rng() % (nsp == 3 ? 5 : 9));
        c.k.push_back(1 + rng() % 3);
        c.s.push_back(1 + rng() % 2);
        c.d.push_back(1 + rng() % 2);
      }
      for (size_t i = 0; i < 2 * nsp; ++i) c.pads.push_back(rng() % c.k[i % nsp]);
      bool fits = true;
      for (size_t i = 0; i < nsp; ++i)
        fits = fits && c.x[2 + i] + c.pads[i] + c.pads[nsp + i] >= (c.k[i] - 1) * c.d[i] + 1;
      if (!fits) continue;
      c.col = rng() % 2;
      const int32_t dt = dtypes[t % 3];
      Tensor x = Tensor::of(dt, c.x);
      for (int64_t i = 0; i < x.numel(); ++i) {
        const int v = static_cast<int>(rng() % 7) - (dt == MN_U8 ? 0 : 3);
        if (dt == MN_F32) x.f()[i] = static_cast<float>(v);
        else if (dt == MN_I8) reinterpret_cast<int8_t*>(x.raw())[i] = static_cast<int8_t>(v * 40);
        else x.b()[i] = static_cast<uint8_t>(v * 40);
      }
      std::vector<int64_t> os;
      std::vector<double> vals;
      std::vector<int64_t> idx;
      reference(c, x, &os, &vals, &idx);
      std::vector<int64_t> yshape{c.x[0], c.x[1]};
      yshape.insert(yshape.end(), os.begin(), os.end());
      const bool with_idx = dt != MN_F32 || rng() % 4 != 0;
      std::vector<Tensor> in{x};
      std::vector<Tensor> out{Tensor::out(yshape, dt)};
      if (with_idx) out.push_back(Tensor::out(yshape, MN_I64));
      FakeNode node("MaxPool", 12);
      node.set("kernel_shape", c.k).set("strides", c.s).set("dilations", c.d).set("pads", c.pads);
      if (c.col) node.set("storage_order", 1);
      CAPTURE(dt);
      CAPTURE(shape_str(c.x));
      CAPTURE(shape_str(c.k));
      CAPTURE(c.col);
      RunResult r = run(node, in, out, kAllCtx[t % 3]);
      REQUIRE_MESSAGE(r.ok(), r.error);
      bool same = true;
      for (size_t i = 0; i < vals.size(); ++i) same = same && value(out[0], static_cast<int64_t>(i)) == vals[i];
      CHECK(same);
      if (with_idx) CHECK(std::vector<int64_t>(out[1].l(), out[1].l() + idx.size()) == idx);
      ++cases;
    }
    CHECK(cases > 100);
  }

  TEST_CASE("MaxPool Indices known answer (ONNX's 2-D example, both storage orders)") {
    // 5x5 input 1..25, kernel 2x2, stride 2: maxima 7, 9, 17, 19 at row-major 6, 8, 16, 18
    std::vector<float> v(25);
    for (int i = 0; i < 25; ++i) v[i] = static_cast<float>(i + 1);
    for (int so = 0; so < 2; ++so) {
      std::vector<Tensor> in{Tensor::f32({1, 1, 5, 5}, v)};
      std::vector<Tensor> out{Tensor::out({1, 1, 2, 2}), Tensor::out({1, 1, 2, 2}, MN_I64)};
      FakeNode node("MaxPool", 12);
      node.set("kernel_shape", std::vector<int64_t>{2, 2}).set("strides", std::vector<int64_t>{2, 2});
      node.set("storage_order", so);
      RunResult r = run(node, in, out);
      REQUIRE_MESSAGE(r.ok(), r.error);
      CDT_CHECK_CLOSE(out[0].f(), std::vector<float>({7, 9, 17, 19}));
      const std::vector<int64_t> want = so ? std::vector<int64_t>{6, 16, 8, 18} : std::vector<int64_t>{6, 8, 16, 18};
      CHECK(std::vector<int64_t>(out[1].l(), out[1].l() + 4) == want);
    }
  }
}
