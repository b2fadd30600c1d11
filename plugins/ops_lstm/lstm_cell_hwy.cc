// lstm_step_simd (lstm_cell.h): compiled once per SIMD target by foreach_target.h and
// dispatched at run time, so one binary uses AVX-512, AVX2, SSE4 or NEON.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "lstm_cell_hwy.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "hwy/contrib/math/math-inl.h"
#include "lstm_cell.h"

HWY_BEFORE_NAMESPACE();
namespace minnow {
namespace ops_lstm {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

const char* TargetNameImpl() { return hwy::TargetName(HWY_TARGET); }

// sigmoid(x) = 1 / (1 + exp(-x)); x is clamped to +-88 so exp stays finite (Highway's Exp
// is valid up to ~104), which changes the result by < 1e-38.
template <class D, class V>
HWY_INLINE V Sigmoid(D d, V x) {
  const V one = hn::Set(d, 1.f);
  x = hn::Min(hn::Max(x, hn::Set(d, -88.f)), hn::Set(d, 88.f));
  return hn::Div(one, hn::Add(one, hn::Exp(d, hn::Neg(x))));
}

void LstmStepImpl(const LstmParams& p, const float* xw, const float* hr, float* c, float* h_out) {
  const hn::ScalableTag<float> d;
  const int64_t H = p.H, N = int64_t(hn::Lanes(d));
  const bool clip = p.clip > 0.f;
  const auto lo = hn::Set(d, -p.clip), hi = hn::Set(d, p.clip);
  auto clipped = [&](decltype(lo) v) { return clip ? hn::Min(hn::Max(v, lo), hi) : v; };
  auto gate = [&](int64_t g, int64_t j) {
    return hn::Add(hn::Add(hn::LoadU(d, xw + g * H + j), hn::LoadU(d, hr + g * H + j)), hn::LoadU(d, p.bias + g * H + j));
  };
  int64_t j = 0;
  for (; j + N <= H; j += N) {
    const auto cp = hn::LoadU(d, c + j);
    auto gi = gate(0, j), go = gate(1, j), gf = gate(2, j), gc = gate(3, j);
    if (p.peep) {
      gi = hn::MulAdd(hn::LoadU(d, p.peep + j), cp, gi);
      gf = hn::MulAdd(hn::LoadU(d, p.peep + 2 * H + j), cp, gf);
    }
    const auto i = Sigmoid(d, clipped(gi));
    const auto f = p.input_forget ? hn::Sub(hn::Set(d, 1.f), i) : Sigmoid(d, clipped(gf));
    const auto cc = hn::Tanh(d, clipped(gc));
    const auto cn = hn::MulAdd(f, cp, hn::Mul(i, cc));
    if (p.peep) go = hn::MulAdd(hn::LoadU(d, p.peep + H + j), cn, go);
    const auto o = Sigmoid(d, clipped(go));
    hn::StoreU(cn, d, c + j);
    hn::StoreU(hn::Mul(o, hn::Tanh(d, cn)), d, h_out + j);
  }
  if (j < H) {  // the tail: the reference on the last H % N units
    LstmParams tail = p;
    tail.H = H - j;
    // lstm_step indexes gates by H: copy the tail's gate values into a contiguous block.
    float x4[4 * 64], h4[4 * 64], b4[4 * 64], p3[3 * 64];
    const int64_t T = H - j;
    for (int g = 0; g < 4; ++g)
      for (int64_t k = 0; k < T; ++k) {
        x4[g * T + k] = xw[g * H + j + k];
        h4[g * T + k] = hr[g * H + j + k];
        b4[g * T + k] = p.bias[g * H + j + k];
        if (p.peep && g < 3) p3[g * T + k] = p.peep[g * H + j + k];
      }
    tail.bias = b4;
    tail.peep = p.peep ? p3 : nullptr;
    lstm_step(tail, x4, h4, c + j, h_out + j);
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace ops_lstm
}  // namespace minnow
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace minnow {
namespace ops_lstm {
HWY_EXPORT(LstmStepImpl);
HWY_EXPORT(TargetNameImpl);

bool lstm_simd_applies(const LstmParams& p) {
  return p.f.kind == ActKind::kSigmoid && p.g.kind == ActKind::kTanh && p.h.kind == ActKind::kTanh;
}
void lstm_step_simd(const LstmParams& p, const float* xw, const float* hr, float* c, float* h_out) {
  HWY_DYNAMIC_DISPATCH(LstmStepImpl)(p, xw, hr, c, h_out);
}
const char* lstm_simd_target() { return HWY_DYNAMIC_DISPATCH(TargetNameImpl)(); }
}  // namespace ops_lstm
}  // namespace minnow
#endif
