// B blocks of the GEMM convolutions (kernels/im2col.h).
#include "kernels/im2col.h"

#include <algorithm>
#include <cstring>

namespace minnow {
namespace cpu_dense {
namespace kernels {

// The B block for rows [k0, k0 + kc) and pixels [j0, j0 + cols), in panel layout
// dst[panel][kk][0..nr): B[k, p] = X[c, id, ih, iw] for k = (c, kd, kh, kw), zero where the
// tap falls into the padding. `tab` (4 * cols ints) holds each pixel's window origin and
// how many pixels remain in its output row, computed once per block, so the loop over k
// works on row segments: a bounds check per segment, then a zero fill and a (strided)
// copy, with no divisions for stride 1.
void im2col_block(const ConvShape& s, const float* xg, int64_t k0, int64_t kc, int64_t j0,
                  int64_t cols, int64_t nr, float* dst, int32_t* tab) {
  int32_t* td = tab;
  int32_t* th = tab + cols;
  int32_t* tw = tab + 2 * cols;
  int32_t* run = tab + 3 * cols;
  for (int64_t jj = 0; jj < cols; ++jj) {
    const int64_t p = j0 + jj, ow = p % s.out[2], r = p / s.out[2];
    td[jj] = int32_t((r / s.out[1]) * s.s[0] - s.pb[0]);
    th[jj] = int32_t((r % s.out[1]) * s.s[1] - s.pb[1]);
    tw[jj] = int32_t(ow * s.s[2] - s.pb[2]);
    run[jj] = int32_t(s.out[2] - ow);
  }
  const int64_t taps = s.taps(), Pin = s.Pin();
  const int64_t ID = s.in[0], IH = s.in[1], IW = s.in[2], sw = s.s[2];
  int64_t c = k0 / taps, t = k0 % taps;
  int64_t kw = t % s.k[2], kh = (t / s.k[2]) % s.k[1], kd = t / (s.k[2] * s.k[1]);
  for (int64_t kk = 0; kk < kc; ++kk) {
    const float* xc = xg + c * Pin;
    const int64_t od = kd * s.d[0], oh = kh * s.d[1], ow = kw * s.d[2];
    for (int64_t jq = 0; jq < cols; jq += nr) {
      float* o = dst + jq * kc + kk * nr;
      const int64_t n = std::min(nr, cols - jq);
      for (int64_t l = 0; l < n;) {
        const int64_t m = std::min<int64_t>(run[jq + l], n - l);  // one output row
        const int64_t id = td[jq + l] + od, ih = th[jq + l] + oh, iw = tw[jq + l] + ow;
        float* os = o + l;
        if (id < 0 || id >= ID || ih < 0 || ih >= IH) {
          std::memset(os, 0, size_t(m) * sizeof(float));
        } else {
          // Valid q in [lo, hi): 0 <= iw + q * sw < IW.
          int64_t lo, hi;
          if (sw == 1) {
            lo = iw >= 0 ? 0 : -iw;
            hi = IW - iw;
          } else {
            lo = iw >= 0 ? 0 : (-iw + sw - 1) / sw;
            hi = iw > IW - 1 ? 0 : (IW - 1 - iw) / sw + 1;
          }
          lo = std::min(lo, m);
          hi = std::max(lo, std::min(hi, m));
          const float* xr = xc + (id * IH + ih) * IW + iw;
          for (int64_t q = 0; q < lo; ++q) os[q] = 0.0f;
          // Segments are short (<= NR): fixed-size copies for a whole tile row (the common
          // interior case), inline loops otherwise; no memcpy calls.
          if (sw == 1 && hi - lo == 16)
            std::memcpy(os + lo, xr + lo, 16 * sizeof(float));
          else if (sw == 1 && hi - lo == 8)
            std::memcpy(os + lo, xr + lo, 8 * sizeof(float));
          else if (sw == 1)
            for (int64_t q = lo; q < hi; ++q) os[q] = xr[q];
          else
            for (int64_t q = lo; q < hi; ++q) os[q] = xr[q * sw];
          for (int64_t q = hi; q < m; ++q) os[q] = 0.0f;
        }
        l += m;
      }
    }
    if (++kw == s.k[2]) {
      kw = 0;
      if (++kh == s.k[1]) {
        kh = 0;
        if (++kd == s.k[0]) {
          kd = 0;
          ++c;
        }
      }
    }
  }
}

// 1x1 with strides, no padding reached (im2col.h): a gather through the block's pixel
// offsets; the window below would copy every input row and both column phases.
bool subsample_applies(const ConvShape& s) {
  if (s.pointwise()) return false;
  for (int i = 0; i < 3; ++i)
    if (s.k[i] != 1 || s.pb[i] != 0 || (s.out[i] - 1) * s.s[i] >= s.in[i]) return false;
  return true;
}

void subsample_offsets(const ConvShape& s, int64_t j0, int64_t cols, int32_t* tab) {
  const int64_t plane = s.out[1] * s.out[2];
  for (int64_t j = 0; j < cols; ++j) {
    const int64_t p = j0 + j, od = p / plane, oh = p / s.out[2] % s.out[1], ow = p % s.out[2];
    tab[j] = static_cast<int32_t>((od * s.s[0] * s.in[1] + oh * s.s[1]) * s.in[2] + ow * s.s[2]);
  }
}

// The channel this many ahead is prefetched while one is gathered: a stride-2 gather
// reads every other row of a plane, a few lines a row, which the hardware prefetchers did
// not follow (resnet50's 1x1 stride-2 256 -> 512 from 56x56: 0.37 ms of its 1.45 were the
// gather, X coming from L3). Zen 5, in-process A/B (bench/inproc_ab, 16 blocks of 10 runs,
// 1 / 2 threads): that layer 0.91x / 0.91x the time with 2 ahead, 0.89-0.92x / 0.94x with
// 4; its 14x14 and 7x7 counterparts unchanged.
constexpr int64_t kSubsamplePrefetchChannels = 2;

void subsample_block(const ConvShape& s, const float* xg, const int32_t* tab, int64_t k0,
                     int64_t kc, int64_t cols, int64_t nr, float* dst) {
  const int64_t pin = s.Pin();
  const int64_t line_outputs = std::max<int64_t>(1, 16 / s.s[2]);  // outputs a row's line feeds
  for (int64_t kk = 0; kk < kc; ++kk) {
    const float* xc = xg + (k0 + kk) * pin;
    if (kk + kSubsamplePrefetchChannels < kc)  // a line (16 floats) every line_outputs outputs
      for (int64_t j = 0; j < cols; j += line_outputs)
        __builtin_prefetch(xc + kSubsamplePrefetchChannels * pin + tab[j], 0, 3);
    for (int64_t jq = 0; jq < cols; jq += nr) {
      float* o = dst + jq * kc + kk * nr;
      const int32_t* t = tab + jq;
      const int64_t n = std::min(nr, cols - jq);
      for (int64_t q = 0; q < n; ++q) o[q] = xc[t[q]];
    }
  }
}

// 2-D convolutions (3x3, 5x5, 7x7, strided, dilated ...), the im2col that most of their
// B blocks took: a B row (channel c, tap kh, kw) is X's plane shifted by the tap and
// sampled at the stride, so a panel row of NR pixels is one run per output row it spans,
// at the same offsets for every k. Per k-block the input rows the block's pixels read are
// first copied once into a zero-padded window (the only bounds checks) whose rows are
// split by column phase, as the depthwise kernel's plane: padded column q = sw * i + f goes
// to phase f, index i, so output column ow of tap kw reads phase (kw * dw) % sw at index
// ow + (kw * dw) / sw and a run of outputs reads consecutive floats at every stride. Then
// every panel row is one to three plain copies from the window. resnet18's 3x3 layers
// spent a third of their time in the general im2col (0.3 ns a float, a branchy segment
// loop per 16 floats); this is 2-3x less. (The general im2col stays for 3-D.)
bool window_applies(const ConvShape& s) {
  // 2-D: a trivial D axis (a padded one makes out[0] > 1 from in[0] == 1).
  return s.k[0] == 1 && s.in[0] == 1 && s.out[0] == 1 && !s.pointwise() && !subsample_applies(s);
}
static int64_t window_pwid(const ConvShape& s) { return s.out[2] + ((s.k[2] - 1) * s.d[2]) / s.s[2]; }
// Window rows for pixels [j0, j1): the padded input rows from the first output row's
// (oh0 * sh) to the last one's plus the taps' reach.
WindowGeom window_geom(const ConvShape& s, int64_t j0, int64_t j1) {
  WindowGeom g;
  g.oh0 = j0 / s.out[2];
  const int64_t oh1 = (j1 - 1) / s.out[2];
  g.rows = (oh1 - g.oh0) * s.s[1] + (s.k[1] - 1) * s.d[1] + 1;
  g.pwid = window_pwid(s);
  g.rs = s.s[2] * g.pwid;
  return g;
}
// Most window floats one k-block of kc rows needs for a block of nc pixels.
int64_t window_floats(const ConvShape& s, int64_t kc, int64_t nc) {
  const int64_t taps = s.taps();
  const int64_t channels = std::min(s.Cg(), (kc + taps - 1) / taps + 1);
  const int64_t out_rows = std::min(s.out[1], (nc + s.out[2] - 1) / s.out[2] + 1);
  const int64_t rows = (out_rows - 1) * s.s[1] + (s.k[1] - 1) * s.d[1] + 1;
  return channels * rows * s.s[2] * window_pwid(s);
}

// The window of channels [c0, c1) (of this group's X, xg) for geometry g: window row r of
// channel c is padded input row g.oh0 * sh + r (input row that - pad); its phase f holds
// padded columns f, f + sw, ... (input column q - pad), zero outside the input.
void window_rows(const ConvShape& s, const float* xg, int64_t c0, int64_t c1, const WindowGeom& g,
               float* win) {
  const int64_t IH = s.in[1], IW = s.in[2], ph = s.pb[1], pw = s.pb[2], sw = s.s[2];
  for (int64_t c = c0; c < c1; ++c) {
    const float* xc = xg + c * IH * IW;
    for (int64_t r = 0; r < g.rows; ++r) {
      float* o = win + ((c - c0) * g.rows + r) * g.rs;
      const int64_t ih = g.oh0 * s.s[1] + r - ph;
      // Plain loops, not memset / memcpy calls: rows are tens of floats and the pads one
      // or two, so the calls cost more than the copies.
      if (ih < 0 || ih >= IH) {
        for (int64_t q = 0; q < g.rs; ++q) o[q] = 0.0f;
        continue;
      }
      const float* xr = xc + ih * IW;
      // Stride 2: both phases in one pass over the row, pairs of input columns (the loop
      // per phase read every other float: on resnet50's 128-channel 56 -> 28 layer the
      // window took 11.8 % of the layer's samples, 8.3 % this way).
      if (sw == 2) {
        float* o0 = o;
        float* o1 = o + g.pwid;
        for (int64_t i = 0; i < g.pwid; ++i) o0[i] = 0.0f;
        for (int64_t i = 0; i < g.pwid; ++i) o1[i] = 0.0f;
        // Index i of phase f reads input column 2i + f - pw. Whole pairs (both inside):
        // i from ceil(pw / 2) while 2i - pw + 1 <= IW - 1.
        const int64_t i0 = std::min(g.pwid, (pw + 1) / 2);
        const int64_t i1 = std::max(i0, std::min(g.pwid, (IW + pw) / 2));
        const float* xp = xr + 2 * i0 - pw;
        for (int64_t i = i0; i < i1; ++i) {
          o0[i] = xp[2 * (i - i0)];
          o1[i] = xp[2 * (i - i0) + 1];
        }
        // An odd pad leaves input column 0 alone in phase 1; an odd end leaves the last
        // column alone in phase 0.
        if (pw % 2 == 1 && (pw - 1) / 2 < g.pwid) o1[(pw - 1) / 2] = xr[0];
        const int64_t last = (IW - 1 + pw) / 2;
        if ((IW - 1 + pw) % 2 == 0 && last < g.pwid && last >= i1) o0[last] = xr[IW - 1];
        continue;
      }
      for (int64_t f = 0; f < sw; ++f, o += g.pwid) {
        // Index i reads input column f + sw * i - pw: inside the input for i in [ia, ib).
        const int64_t ia = std::min(g.pwid, pw > f ? (pw - f + sw - 1) / sw : 0);
        const int64_t ib = std::max(ia, std::min(g.pwid, IW + pw > f ? (IW + pw - f + sw - 1) / sw : 0));
        const int64_t first = f + sw * ia - pw;  // input column of index ia
        for (int64_t i = 0; i < ia; ++i) o[i] = 0.0f;
        if (sw == 1)
          for (int64_t i = ia; i < ib; ++i) o[i] = xr[first + (i - ia)];
        else
          for (int64_t i = ia; i < ib; ++i) o[i] = xr[first + sw * (i - ia)];
        for (int64_t i = ib; i < g.pwid; ++i) o[i] = 0.0f;
      }
    }
  }
}

// The runs of the pixels [j0, j0 + cols), panel by panel (a run: pixels in one output row),
// the same for every k-block of a task: in `tab` (4 * cols ints), first[q] .. first[q + 1]
// are panel q's runs, each a destination lane, a source offset in the window (for tap 0
// of the window's first channel) and a length.
WindowRuns window_runs(const ConvShape& s, const WindowGeom& g, int64_t j0, int64_t cols,
                       int64_t nr, int32_t* tab) {
  const int64_t panels = (cols + nr - 1) / nr, OW = s.out[2];
  int32_t* first = tab;
  int32_t* lane = tab + panels + 1;
  int32_t* src = lane + cols;
  int32_t* len = src + cols;  // panels + 1 + 3 * cols fits the 4 * nc ints: panels <= cols, and panels < cols unless cols < nc
  int32_t n = 0;
  for (int64_t q = 0; q < panels; ++q) {
    first[q] = n;
    const int64_t e = std::min(cols, (q + 1) * nr);
    for (int64_t jj = q * nr; jj < e;) {
      const int64_t p = j0 + jj, oh = p / OW, ow = p % OW;
      const int64_t m = std::min(e - jj, OW - ow);
      lane[n] = int32_t(jj - q * nr);
      src[n] = int32_t((oh - g.oh0) * s.s[1] * g.rs + ow);
      len[n] = int32_t(m);
      ++n;
      jj += m;
    }
  }
  first[panels] = n;
  return WindowRuns{first, lane, src, len};
}

// The B block of rows [k0, k0 + kc), pixels [j0, j0 + cols), panel layout as im2col_block,
// from the window of channels from c0 (window_rows) and the pixels' runs (window_runs).
// boff: kc ints.
void window_block(const ConvShape& s, const float* win, int64_t c0, const WindowGeom& g,
                  const WindowRuns& r, int64_t k0, int64_t kc, int64_t cols, int64_t nr,
                  float* dst, int32_t* boff) {
  const int64_t panels = (cols + nr - 1) / nr;
  const int32_t *first = r.first, *src = r.src, *len = r.len;
  // Window offset of each B row's tap (channel c, tap kh, kw), then panel by panel: the
  // panel's kc x NR floats are written in order (one stream), each row one to three runs.
  const int64_t taps = s.taps(), KW = s.k[2];
  int64_t c = k0 / taps, t = k0 % taps;
  int64_t kw = t % KW, kh = t / KW;
  for (int64_t kk = 0; kk < kc; ++kk) {
    const int64_t tw = kw * s.d[2];  // the tap's column offset: phase, index
    boff[kk] = int32_t(((c - c0) * g.rows + kh * s.d[1]) * g.rs + (tw % s.s[2]) * g.pwid + tw / s.s[2]);
    if (++kw == KW) {
      kw = 0;
      if (++kh == s.k[1]) {
        kh = 0;
        ++c;
      }
    }
  }
  for (int64_t q = 0; q < panels; ++q) {
    float* o = dst + q * nr * kc;
    const int32_t f = first[q], l = first[q + 1];
    if (l - f == 1 && len[f] == nr && (nr == 16 || nr == 32)) {  // the common case: one whole run
      const float* from = win + src[f];
      if (nr == 16)
        for (int64_t kk = 0; kk < kc; ++kk) std::memcpy(o + kk * 16, from + boff[kk], 16 * sizeof(float));
      else
        for (int64_t kk = 0; kk < kc; ++kk) std::memcpy(o + kk * 32, from + boff[kk], 32 * sizeof(float));
      continue;
    }
    // Runs of a few floats: vectors and a masked tail (a memcpy call per run cost more
    // than the run; fixed-size copies of NR floats, overwritten in order, were no faster
    // on the Xeon).
    window_copy_runs(win, boff, kc, r, f, l, nr, o);
  }
}

}  // namespace kernels
}  // namespace cpu_dense
}  // namespace minnow
