#include "train_graph.h"
#include "train_math.h"

#include <minnow/model.h>

#include <tbb/parallel_for.h>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>

namespace minnow {
namespace compress {

int64_t Value::size() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

namespace {

using Dims = std::vector<int64_t>;

// tbb::parallel_for over [0, n).
template <class Fn>
void parallel_rows(int64_t n, Fn&& fn) {
  tbb::parallel_for(int64_t(0), n, fn);
}

}  // namespace

namespace {

// C[4, W] (+)= A[4, K] B[K, W] for W = 8 (SSE2, every x86-64) or 16 (AVX2 + FMA, chosen at
// run time): the sums stay in registers over the whole K loop, so C is stored once instead
// of once per k. Other CPUs take the plain loop in matmul().
#if defined(__x86_64__)
constexpr bool kHaveTiles = true;

void tile_4x8_sse2(const float* A, int64_t lda, const float* B, float* C, int64_t K, int64_t N, bool acc) {
  __m128 s00 = _mm_setzero_ps(), s01 = s00, s10 = s00, s11 = s00, s20 = s00, s21 = s00, s30 = s00, s31 = s00;
  for (int64_t k = 0; k < K; ++k) {
    const __m128 b0 = _mm_loadu_ps(B + k * N), b1 = _mm_loadu_ps(B + k * N + 4);
    const __m128 a0 = _mm_set1_ps(A[k]), a1 = _mm_set1_ps(A[lda + k]), a2 = _mm_set1_ps(A[2 * lda + k]),
                 a3 = _mm_set1_ps(A[3 * lda + k]);
    s00 = _mm_add_ps(s00, _mm_mul_ps(a0, b0)); s01 = _mm_add_ps(s01, _mm_mul_ps(a0, b1));
    s10 = _mm_add_ps(s10, _mm_mul_ps(a1, b0)); s11 = _mm_add_ps(s11, _mm_mul_ps(a1, b1));
    s20 = _mm_add_ps(s20, _mm_mul_ps(a2, b0)); s21 = _mm_add_ps(s21, _mm_mul_ps(a2, b1));
    s30 = _mm_add_ps(s30, _mm_mul_ps(a3, b0)); s31 = _mm_add_ps(s31, _mm_mul_ps(a3, b1));
  }
  auto put = [&](float* c, __m128 lo, __m128 hi) {
    if (acc) { lo = _mm_add_ps(lo, _mm_loadu_ps(c)); hi = _mm_add_ps(hi, _mm_loadu_ps(c + 4)); }
    _mm_storeu_ps(c, lo);
    _mm_storeu_ps(c + 4, hi);
  };
  put(C, s00, s01);
  put(C + N, s10, s11);
  put(C + 2 * N, s20, s21);
  put(C + 3 * N, s30, s31);
}

__attribute__((target("avx2,fma")))
void tile_4x16_avx2(const float* A, int64_t lda, const float* B, float* C, int64_t K, int64_t N, bool acc) {
  __m256 s00 = _mm256_setzero_ps(), s01 = s00, s10 = s00, s11 = s00, s20 = s00, s21 = s00, s30 = s00, s31 = s00;
  for (int64_t k = 0; k < K; ++k) {
    const __m256 b0 = _mm256_loadu_ps(B + k * N), b1 = _mm256_loadu_ps(B + k * N + 8);
    const __m256 a0 = _mm256_broadcast_ss(A + k), a1 = _mm256_broadcast_ss(A + lda + k),
                 a2 = _mm256_broadcast_ss(A + 2 * lda + k), a3 = _mm256_broadcast_ss(A + 3 * lda + k);
    s00 = _mm256_fmadd_ps(a0, b0, s00); s01 = _mm256_fmadd_ps(a0, b1, s01);
    s10 = _mm256_fmadd_ps(a1, b0, s10); s11 = _mm256_fmadd_ps(a1, b1, s11);
    s20 = _mm256_fmadd_ps(a2, b0, s20); s21 = _mm256_fmadd_ps(a2, b1, s21);
    s30 = _mm256_fmadd_ps(a3, b0, s30); s31 = _mm256_fmadd_ps(a3, b1, s31);
  }
  // (no lambda here: it would not inherit the target attribute)
  if (acc) {
    s00 = _mm256_add_ps(s00, _mm256_loadu_ps(C)); s01 = _mm256_add_ps(s01, _mm256_loadu_ps(C + 8));
    s10 = _mm256_add_ps(s10, _mm256_loadu_ps(C + N)); s11 = _mm256_add_ps(s11, _mm256_loadu_ps(C + N + 8));
    s20 = _mm256_add_ps(s20, _mm256_loadu_ps(C + 2 * N)); s21 = _mm256_add_ps(s21, _mm256_loadu_ps(C + 2 * N + 8));
    s30 = _mm256_add_ps(s30, _mm256_loadu_ps(C + 3 * N)); s31 = _mm256_add_ps(s31, _mm256_loadu_ps(C + 3 * N + 8));
  }
  _mm256_storeu_ps(C, s00); _mm256_storeu_ps(C + 8, s01);
  _mm256_storeu_ps(C + N, s10); _mm256_storeu_ps(C + N + 8, s11);
  _mm256_storeu_ps(C + 2 * N, s20); _mm256_storeu_ps(C + 2 * N + 8, s21);
  _mm256_storeu_ps(C + 3 * N, s30); _mm256_storeu_ps(C + 3 * N + 8, s31);
}

bool have_avx2() {
  static const bool yes = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return yes;
}
#else
constexpr bool kHaveTiles = false;
#endif

}  // namespace

void matmul(const float* A, const float* B, float* C, int64_t M, int64_t K, int64_t N, bool acc) {
  int tile_w = 0;  // columns per register tile; 0: none
#if defined(__x86_64__)
  tile_w = have_avx2() ? 16 : 8;
#endif
  matmul_tiled(tile_w, A, B, C, M, K, N, acc);
}

void matmul_tiled(int tile_w, const float* A, const float* B, float* C, int64_t M, int64_t K, int64_t N, bool acc) {
#if defined(__x86_64__)
  if (tile_w == 16 && !have_avx2()) tile_w = 8;
#endif
  if (!kHaveTiles || (tile_w != 8 && tile_w != 16)) tile_w = 0;
  const int64_t M4 = kHaveTiles ? M / 4 * 4 : 0, NT = tile_w ? N / tile_w * tile_w : 0;
  // Blocks of four rows in parallel; the last rows and columns (less than a tile) plainly.
  parallel_rows((M + 3) / 4, [&](int64_t blk) {
    const int64_t i0 = blk * 4;
#if defined(__x86_64__)
    if (i0 < M4)
      for (int64_t j = 0; j < NT; j += tile_w) {
        if (tile_w == 16) tile_4x16_avx2(A + i0 * K, K, B + j, C + i0 * N + j, K, N, acc);
        else tile_4x8_sse2(A + i0 * K, K, B + j, C + i0 * N + j, K, N, acc);
      }
#endif
    for (int64_t i = i0; i < std::min(M, i0 + 4); ++i) {
      float* c = C + i * N;
      const int64_t j0 = i < M4 ? NT : 0;
      if (!acc) std::fill(c + j0, c + N, 0.f);
      for (int64_t k = 0; k < K; ++k) {
        const float av = A[i * K + k];
        const float* b = B + k * N;
        for (int64_t j = j0; j < N; ++j) c[j] += av * b[j];
      }
    }
  });
}

std::vector<float> transpose(const float* X, int64_t r, int64_t c) {
  std::vector<float> t(size_t(r * c));
  for (int64_t i = 0; i < r; ++i)
    for (int64_t j = 0; j < c; ++j) t[size_t(j * r + i)] = X[i * c + j];
  return t;
}

namespace {

const ir::Attribute* attr(const ir::Node& n, const char* name) { return n.attr(name); }
int64_t attr_i(const ir::Node& n, const char* name, int64_t def) { auto* a = attr(n, name); return a ? a->i : def; }
float attr_f(const ir::Node& n, const char* name, float def) { auto* a = attr(n, name); return a ? a->f : def; }
std::vector<int64_t> attr_ints(const ir::Node& n, const char* name, std::vector<int64_t> def) {
  auto* a = attr(n, name);
  return a ? a->ints : def;
}

enum class Act { kRelu, kLeakyRelu, kClip, kSigmoid, kTanh };
Act act_of(const std::string& op) {
  if (op == "Relu") return Act::kRelu;
  if (op == "LeakyRelu") return Act::kLeakyRelu;
  if (op == "Clip") return Act::kClip;
  if (op == "Sigmoid") return Act::kSigmoid;
  return Act::kTanh;
}

// Numpy broadcasting: offset of output element `o` in an input of shape `in`.
struct Broadcast {
  Dims out;
  std::vector<Dims> strides;  // per input, aligned to out's rank (0 where broadcast)
  Broadcast(const std::vector<Dims>& ins) {
    size_t r = 0;
    for (auto& s : ins) r = std::max(r, s.size());
    out.assign(r, 1);
    for (auto& s : ins)
      for (size_t k = 0; k < s.size(); ++k) {
        int64_t& o = out[r - s.size() + k];
        if (o == 1) o = s[k];
        else if (s[k] != 1 && s[k] != o) throw std::runtime_error("shapes do not broadcast");
      }
    for (auto& s : ins) {
      Dims st(r, 0);
      int64_t acc = 1;
      for (size_t k = s.size(); k-- > 0;) {
        st[r - s.size() + k] = s[k] == 1 ? 0 : acc;
        acc *= s[k];
      }
      strides.push_back(st);
    }
  }
  int64_t total() const { int64_t n = 1; for (int64_t d : out) n *= d; return n; }
  int64_t offset(int64_t o, size_t input) const {
    int64_t off = 0;
    for (size_t k = out.size(); k-- > 0;) {
      off += (o % out[k]) * strides[input][k];
      o /= out[k];
    }
    return off;
  }
};

struct ConvGeom {
  int64_t N, C, H, W, O, kh, kw, OH, OW, group, sh, sw, dh, dw, pt, pl;
};

ConvGeom conv_geom(const ir::Node& n, const Dims& x, const Dims& w) {
  if (x.size() != 4 || w.size() != 4) throw std::runtime_error(n.describe() + ": only 2-D convolutions are trainable");
  ConvGeom g{};
  g.N = x[0]; g.C = x[1]; g.H = x[2]; g.W = x[3];
  g.O = w[0]; g.kh = w[2]; g.kw = w[3];
  g.group = attr_i(n, "group", 1);
  auto s = attr_ints(n, "strides", {1, 1});
  auto d = attr_ints(n, "dilations", {1, 1});
  auto p = attr_ints(n, "pads", {0, 0, 0, 0});
  if (auto* ap = attr(n, "auto_pad"); ap && ap->s != "NOTSET" && ap->s != "VALID")
    throw std::runtime_error(n.describe() + ": auto_pad " + ap->s + " is not supported for training (run fuse/import with explicit pads)");
  g.sh = s[0]; g.sw = s[1]; g.dh = d[0]; g.dw = d[1]; g.pt = p[0]; g.pl = p[1];
  g.OH = (g.H + p[0] + p[2] - g.dh * (g.kh - 1) - 1) / g.sh + 1;
  g.OW = (g.W + p[1] + p[3] - g.dw * (g.kw - 1) - 1) / g.sw + 1;
  if (g.C != w[1] * g.group) throw std::runtime_error(n.describe() + ": channels do not match weight and group");
  return g;
}

// Output columns [*ox0, *ox1) of tap column j read inside the input (ix in [0, W)).
void valid_ox(const ConvGeom& g, int64_t j, int64_t* ox0, int64_t* ox1) {
  const int64_t off = j * g.dw - g.pl;  // ix = ox * sw + off
  int64_t lo = off >= 0 ? 0 : (-off + g.sw - 1) / g.sw;
  int64_t hi = g.W - off <= 0 ? 0 : (g.W - off - 1) / g.sw + 1;
  *ox0 = std::min(lo, g.OW);
  *ox1 = std::max(*ox0, std::min(hi, g.OW));
}

// col[(c*kh + i)*kw + j, oy*OW + ox] for channels [c0, c0 + cg) of one image. The valid
// column range of each tap is computed once, so the copy has no per-element bounds test.
void im2col(const ConvGeom& g, const float* x, int64_t c0, int64_t cg, float* col) {
  const int64_t ohw = g.OH * g.OW;
  for (int64_t c = 0; c < cg; ++c)
    for (int64_t i = 0; i < g.kh; ++i)
      for (int64_t j = 0; j < g.kw; ++j) {
        float* row = col + ((c * g.kh + i) * g.kw + j) * ohw;
        const float* xc = x + (c0 + c) * g.H * g.W;
        int64_t ox0, ox1;
        valid_ox(g, j, &ox0, &ox1);
        const int64_t off = j * g.dw - g.pl;
        for (int64_t oy = 0; oy < g.OH; ++oy) {
          const int64_t iy = oy * g.sh - g.pt + i * g.dh;
          float* r = row + oy * g.OW;
          if (iy < 0 || iy >= g.H) {
            std::fill(r, r + g.OW, 0.f);
            continue;
          }
          const float* xr = xc + iy * g.W + off;
          std::fill(r, r + ox0, 0.f);
          if (g.sw == 1)
            std::copy(xr + ox0, xr + ox1, r + ox0);
          else
            for (int64_t ox = ox0; ox < ox1; ++ox) r[ox] = xr[ox * g.sw];
          std::fill(r + ox1, r + g.OW, 0.f);
        }
      }
}

// A convolution's products go through matmul's register tiles when a group has at least
// four filters and the weights are mostly kept; a sparse (pruned) W is faster through the
// loops that skip its zeros, and depthwise filters (one per group) are too small to tile.
bool conv_uses_tiles(const std::vector<float>& w, int64_t filters_per_group) {
  if (filters_per_group < 4) return false;
  size_t nz = 0;
  for (float v : w) nz += v != 0.f;
  return nz * 10 > w.size() * 3;  // density above 30 %
}

// Sum of a[j] * b[j]: eight partial sums, so the compiler vectorises it (a single float
// accumulator is a serial chain it may not reorder).
float dot(const float* a, const float* b, int64_t n) {
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t j = 0;
  for (; j + 8 <= n; j += 8)
    for (int l = 0; l < 8; ++l) acc[l] += a[j + l] * b[j + l];
  float s = 0;
  for (; j < n; ++j) s += a[j] * b[j];
  return s + ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

void col2im(const ConvGeom& g, const float* col, int64_t c0, int64_t cg, float* dx) {
  const int64_t ohw = g.OH * g.OW;
  for (int64_t c = 0; c < cg; ++c)
    for (int64_t i = 0; i < g.kh; ++i)
      for (int64_t j = 0; j < g.kw; ++j) {
        const float* row = col + ((c * g.kh + i) * g.kw + j) * ohw;
        float* xc = dx + (c0 + c) * g.H * g.W;
        int64_t ox0, ox1;
        valid_ox(g, j, &ox0, &ox1);
        const int64_t off = j * g.dw - g.pl;
        for (int64_t oy = 0; oy < g.OH; ++oy) {
          int64_t iy = oy * g.sh - g.pt + i * g.dh;
          if (iy < 0 || iy >= g.H) continue;
          float* xr = xc + iy * g.W + off;
          const float* r = row + oy * g.OW;
          if (g.sw == 1)
            for (int64_t ox = ox0; ox < ox1; ++ox) xr[ox] += r[ox];
          else
            for (int64_t ox = ox0; ox < ox1; ++ox) xr[ox * g.sw] += r[ox];
        }
      }
}

struct PoolGeom {
  int64_t N, C, H, W, kh, kw, sh, sw, pt, pl, OH, OW;
};
PoolGeom pool_geom(const ir::Node& n, const Dims& x) {
  if (x.size() != 4) throw std::runtime_error(n.describe() + ": only 2-D pooling is trainable");
  auto k = attr_ints(n, "kernel_shape", {});
  if (k.size() != 2) throw std::runtime_error(n.describe() + ": kernel_shape must have 2 values");
  auto s = attr_ints(n, "strides", {1, 1});
  auto p = attr_ints(n, "pads", {0, 0, 0, 0});
  if (auto* ap = attr(n, "auto_pad"); ap && ap->s != "NOTSET" && ap->s != "VALID")
    throw std::runtime_error(n.describe() + ": auto_pad " + ap->s + " is not supported for training");
  bool ceil = attr_i(n, "ceil_mode", 0) != 0;
  PoolGeom g{x[0], x[1], x[2], x[3], k[0], k[1], s[0], s[1], p[0], p[1], 0, 0};
  auto out = [&](int64_t in, int64_t pa, int64_t pb, int64_t kk, int64_t st) {
    int64_t span = in + pa + pb - kk;
    return (ceil ? (span + st - 1) / st : span / st) + 1;
  };
  g.OH = out(g.H, p[0], p[2], g.kh, g.sh);
  g.OW = out(g.W, p[1], p[3], g.kw, g.sw);
  return g;
}

}  // namespace

TrainGraph::TrainGraph(const ir::ModelIR& m) : m_(m) {
  const auto& g = m.graph;
  if (g.inputs.size() != 1 || g.outputs.size() != 1)
    throw std::runtime_error("distill: the model must have one input and one output");
  input_ = g.inputs[0];
  output_ = g.outputs[0];
  input_shape_ = g.tensors[size_t(input_)].static_shape();
  for (size_t t = 0; t < g.tensors.size(); ++t) {
    if (!g.tensors[t].is_constant()) continue;
    auto r = decode_constant(m, g.tensors[t]);
    if (!r) throw std::runtime_error(r.status().message());
    const Tensor& v = r.value();
    Value val;
    val.shape = v.shape();
    val.data.resize(size_t(v.elements()));
    if (v.dtype() == DataType::kFloat32) std::memcpy(val.data.data(), v.raw(), v.bytes());
    else if (v.dtype() == DataType::kInt64) for (int64_t k = 0; k < v.elements(); ++k) val.data[size_t(k)] = float(v.data<int64_t>()[k]);
    else if (v.dtype() == DataType::kInt32) for (int64_t k = 0; k < v.elements(); ++k) val.data[size_t(k)] = float(v.data<int32_t>()[k]);
    else continue;
    consts_[int(t)] = std::move(val);
  }
  // Topological order (Kahn) and op check.
  static const char* kOps[] = {"Gemm", "MatMul", "Conv", "Relu", "LeakyRelu", "Clip", "Sigmoid", "Tanh", "MaxPool",
                               "AveragePool", "GlobalAveragePool", "Add", "Mul", "BatchNormalization", "Flatten",
                               "Reshape", "Identity", "Dropout", "Concat", "Softmax", "LSTM", "Transpose",
                               "Squeeze", "Unsqueeze", "Gather"};
  std::vector<bool> ready(g.tensors.size(), false);
  for (size_t t = 0; t < g.tensors.size(); ++t) ready[t] = g.tensors[t].is_constant();
  ready[size_t(input_)] = true;
  std::vector<bool> done(g.nodes.size(), false);
  for (bool progress = true; progress;) {
    progress = false;
    for (size_t n = 0; n < g.nodes.size(); ++n) {
      if (done[n]) continue;
      bool ok = true;
      for (int i : g.nodes[n].inputs) ok = ok && (i < 0 || ready[size_t(i)]);
      if (!ok) continue;
      const auto& node = g.nodes[n];
      bool known = node.domain.empty() && std::find_if(std::begin(kOps), std::end(kOps), [&](const char* o) { return node.op == o; }) != std::end(kOps);
      if (!known) throw std::runtime_error("no training-graph support (forward and backward pass) for " + node.describe() + " (op " + node.op + ")");
      if (node.op == "LSTM") {
        const std::string why = lstm_untrainable(m, node);
        if (!why.empty()) throw std::runtime_error("no training-graph support for " + node.describe() + ": " + why);
      }
      if (node.op == "Gather" && (node.inputs.size() < 2 || !g.tensors[size_t(node.inputs[1])].is_constant()))
        throw std::runtime_error("no training-graph support for " + node.describe() + ": indices must be a constant");
      order_.push_back(int(n));
      done[n] = true;
      progress = true;
      for (int o : node.outputs) ready[size_t(o)] = true;
    }
  }
  if (order_.size() != g.nodes.size()) throw std::runtime_error("distill: graph has nodes that never become ready");
  for (int n : order_) {
    const auto& node = g.nodes[size_t(n)];
    const bool lstm = node.op == "LSTM";
    if (node.op != "Gemm" && node.op != "MatMul" && node.op != "Conv" && !lstm) continue;
    for (size_t k = 1; k < node.inputs.size() && k < (lstm ? 4u : 3u); ++k) {
      int t = node.inputs[k];
      if (t >= 0 && consts_.count(t) && g.tensors[size_t(t)].dtype == DataType::kFloat32 &&
          std::find(params_.begin(), params_.end(), t) == params_.end())
        params_.push_back(t);
    }
  }
}

const Value& TrainGraph::val(int t) const {
  auto c = consts_.find(t);
  if (c != consts_.end()) return c->second;
  return acts_.at(t);
}

Value& TrainGraph::grad(int t, const std::vector<int64_t>& shape) {
  Value& g = grads_[t];
  if (g.shape != shape || g.data.size() != size_t(Value{shape, {}}.size())) {
    g.shape = shape;
    g.data.assign(size_t(g.size()), 0.f);
  }
  return g;
}

const Value& TrainGraph::forward(const std::vector<float>& input, int64_t n) {
  acts_.clear();
  Value x;
  x.shape = input_shape_;
  if (x.shape.empty()) throw std::runtime_error("distill: input without shape");
  x.shape[0] = n;
  for (auto& d : x.shape) if (d < 0) throw std::runtime_error("distill: input has unknown dims beyond the batch");
  if (size_t(x.size()) != input.size()) throw std::runtime_error("distill: input batch has the wrong size");
  x.data = input;
  acts_[input_] = std::move(x);
  for (int k : order_) forward_node(m_.graph.nodes[size_t(k)]);
  return acts_.at(output_);
}

void TrainGraph::backward(const std::vector<float>& d_output) {
  grads_.clear();
  const Value& y = acts_.at(output_);
  Value& gy = grad(output_, y.shape);
  if (d_output.size() != gy.data.size()) throw std::runtime_error("distill: gradient size mismatch");
  gy.data = d_output;
  for (int p : params_) grad(p, consts_.at(p).shape);
  for (auto it = order_.rbegin(); it != order_.rend(); ++it) {
    const ir::Node& n = m_.graph.nodes[size_t(*it)];
    if (!grads_.count(n.outputs[0])) continue;  // output does not reach the loss
    backward_node(n);
  }
}

namespace {

// Dims of a shape-only op's output: Squeeze / Unsqueeze with axes from input 1 or the
// attribute (opset < 13).
Dims squeeze_dims(const ir::Node& n, const Dims& x, const std::vector<float>* axes_input) {
  std::vector<int64_t> axes;
  if (axes_input) for (float a : *axes_input) axes.push_back(int64_t(a));
  else if (const ir::Attribute* a = n.attr("axes")) axes = a->ints;
  const bool un = n.op == "Unsqueeze";
  const int64_t rank = int64_t(x.size()) + (un ? int64_t(axes.size()) : 0);
  for (auto& a : axes) if (a < 0) a += rank;
  Dims out;
  if (un) {
    size_t src = 0;
    for (int64_t d = 0; d < rank; ++d)
      if (std::find(axes.begin(), axes.end(), d) != axes.end()) out.push_back(1);
      else if (src < x.size()) out.push_back(x[src++]);
    return out;
  }
  for (int64_t d = 0; d < int64_t(x.size()); ++d) {
    const bool listed = std::find(axes.begin(), axes.end(), d) != axes.end();
    if (listed && x[size_t(d)] != 1) throw std::runtime_error(n.describe() + ": squeezed axis is not 1");
    if (!(listed || (axes.empty() && x[size_t(d)] == 1))) out.push_back(x[size_t(d)]);
  }
  return out;
}

// Transpose: the input offset of each output element.
std::vector<int64_t> transpose_map(const ir::Node& n, const Dims& x, Dims* out_shape) {
  std::vector<int64_t> perm;
  if (const ir::Attribute* a = n.attr("perm")) perm = a->ints;
  else for (int64_t d = int64_t(x.size()) - 1; d >= 0; --d) perm.push_back(d);
  if (perm.size() != x.size()) throw std::runtime_error(n.describe() + ": perm does not match the rank");
  Dims in_strides(x.size(), 1);
  for (int64_t d = int64_t(x.size()) - 2; d >= 0; --d) in_strides[size_t(d)] = in_strides[size_t(d + 1)] * x[size_t(d + 1)];
  out_shape->clear();
  for (int64_t p : perm) out_shape->push_back(x[size_t(p)]);
  int64_t total = 1;
  for (int64_t d : x) total *= d;
  std::vector<int64_t> map(static_cast<size_t>(total));
  Dims idx(x.size(), 0);
  for (int64_t o = 0; o < total; ++o) {
    int64_t off = 0;
    for (size_t d = 0; d < perm.size(); ++d) off += idx[d] * in_strides[size_t(perm[d])];
    map[size_t(o)] = off;
    for (int64_t d = int64_t(idx.size()) - 1; d >= 0; --d) {
      if (++idx[size_t(d)] < (*out_shape)[size_t(d)]) break;
      idx[size_t(d)] = 0;
    }
  }
  return map;
}

// Gather with constant indices: output element o reads input element map[o].
std::vector<int64_t> gather_map(const ir::Node& n, const Dims& x, const Value& indices, Dims* out_shape) {
  int64_t axis = n.attr("axis") ? n.attr("axis")->i : 0;
  if (axis < 0) axis += int64_t(x.size());
  if (axis < 0 || axis >= int64_t(x.size())) throw std::runtime_error(n.describe() + ": axis out of range");
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= x[size_t(d)];
  for (size_t d = size_t(axis) + 1; d < x.size(); ++d) inner *= x[d];
  const int64_t len = x[size_t(axis)];
  out_shape->assign(x.begin(), x.begin() + axis);
  for (int64_t d : indices.shape) out_shape->push_back(d);
  out_shape->insert(out_shape->end(), x.begin() + axis + 1, x.end());
  std::vector<int64_t> map;
  map.reserve(size_t(outer * int64_t(indices.data.size()) * inner));
  for (int64_t a = 0; a < outer; ++a)
    for (float fi : indices.data) {
      int64_t i = int64_t(fi);
      if (i < 0) i += len;
      if (i < 0 || i >= len) throw std::runtime_error(n.describe() + ": index out of range");
      for (int64_t b = 0; b < inner; ++b) map.push_back((a * len + i) * inner + b);
    }
  return map;
}

}  // namespace

void TrainGraph::forward_node(const ir::Node& n) {
  const std::string& op = n.op;
  if (op == "LSTM") return forward_lstm(n);
  if (op == "Transpose" || op == "Gather") {
    const Value& X = val(n.inputs[0]);
    Value y;
    const std::vector<int64_t> map = op == "Transpose" ? transpose_map(n, X.shape, &y.shape)
                                                       : gather_map(n, X.shape, val(n.inputs[1]), &y.shape);
    y.data.resize(map.size());
    for (size_t o = 0; o < map.size(); ++o) y.data[o] = X.data[size_t(map[o])];
    acts_[n.outputs[0]] = std::move(y);
    return;
  }
  if (op == "Squeeze" || op == "Unsqueeze") {
    const Value& X = val(n.inputs[0]);
    const bool axes_in = n.inputs.size() > 1 && n.inputs[1] >= 0;
    Value y;
    y.shape = squeeze_dims(n, X.shape, axes_in ? &val(n.inputs[1]).data : nullptr);
    y.data = X.data;
    acts_[n.outputs[0]] = std::move(y);
    return;
  }
  auto in = [&](size_t k) -> const Value& { return val(n.inputs[k]); };
  Value y;
  if (op == "Gemm") {
    const Value &A = in(0), &B = in(1);
    bool ta = attr_i(n, "transA", 0), tb = attr_i(n, "transB", 0);
    float alpha = attr_f(n, "alpha", 1.f), beta = attr_f(n, "beta", 1.f);
    int64_t M = ta ? A.shape[1] : A.shape[0], K = ta ? A.shape[0] : A.shape[1];
    int64_t N = tb ? B.shape[0] : B.shape[1];
    std::vector<float> At = ta ? transpose(A.data.data(), A.shape[0], A.shape[1]) : A.data;
    std::vector<float> Bt = tb ? transpose(B.data.data(), B.shape[0], B.shape[1]) : B.data;
    y.shape = {M, N};
    y.data.resize(size_t(M * N));
    matmul(At.data(), Bt.data(), y.data.data(), M, K, N, false);
    if (alpha != 1.f) for (auto& v : y.data) v *= alpha;
    if (n.inputs.size() > 2 && n.inputs[2] >= 0) {
      const Value& C = in(2);
      Broadcast b({y.shape, C.shape});
      for (int64_t o = 0; o < M * N; ++o) y.data[size_t(o)] += beta * C.data[size_t(b.offset(o, 1))];
    }
  } else if (op == "MatMul") {
    const Value &A = in(0), &B = in(1);
    if (B.shape.size() != 2) throw std::runtime_error(n.describe() + ": only a 2-D right operand is trainable");
    int64_t K = B.shape[0], N = B.shape[1], M = A.size() / K;
    y.shape = A.shape;
    y.shape.back() = N;
    y.data.resize(size_t(M * N));
    matmul(A.data.data(), B.data.data(), y.data.data(), M, K, N, false);
  } else if (op == "Conv") {
    const Value &X = in(0), &Wt = in(1);
    ConvGeom g = conv_geom(n, X.shape, Wt.shape);
    y.shape = {g.N, g.O, g.OH, g.OW};
    y.data.assign(size_t(y.size()), 0.f);
    const int64_t cg = g.C / g.group, og = g.O / g.group, kk = cg * g.kh * g.kw, ohw = g.OH * g.OW;
    const float* bias = n.inputs.size() > 2 && n.inputs[2] >= 0 ? in(2).data.data() : nullptr;
    const bool tiles = conv_uses_tiles(Wt.data, og);
    parallel_rows(g.N, [&](int64_t b) {
      std::vector<float> col(size_t(kk * ohw));
      for (int64_t gr = 0; gr < g.group; ++gr) {
        im2col(g, X.data.data() + b * g.C * g.H * g.W, gr * cg, cg, col.data());
        float* yo = y.data.data() + (b * g.O + gr * og) * ohw;
        const float* w = Wt.data.data() + gr * og * kk;
        if (tiles) {
          matmul(w, col.data(), yo, og, kk, ohw, false);
          continue;
        }
        for (int64_t o = 0; o < og; ++o)
          for (int64_t k = 0; k < kk; ++k) {
            float wv = w[o * kk + k];
            if (wv == 0.f) continue;
            const float* c = col.data() + k * ohw;
            float* yr = yo + o * ohw;
            for (int64_t j = 0; j < ohw; ++j) yr[j] += wv * c[j];
          }
      }
      if (bias)
        for (int64_t o = 0; o < g.O; ++o)
          for (int64_t j = 0; j < ohw; ++j) y.data[size_t((b * g.O + o) * ohw + j)] += bias[o];
    });
  } else if (op == "Relu" || op == "LeakyRelu" || op == "Clip" || op == "Sigmoid" || op == "Tanh") {
    const Value& X = in(0);
    y.shape = X.shape;
    y.data.resize(X.data.size());
    float lo = -std::numeric_limits<float>::infinity(), hi = -lo, alpha = attr_f(n, "alpha", 0.01f);
    if (op == "Clip") {
      if (auto* a = attr(n, "min")) lo = a->f;
      if (auto* a = attr(n, "max")) hi = a->f;
      if (n.inputs.size() > 1 && n.inputs[1] >= 0) lo = in(1).data.at(0);
      if (n.inputs.size() > 2 && n.inputs[2] >= 0) hi = in(2).data.at(0);
    }
    // The op is decided once, not per element (a string compare per element was a third
    // of mobilenet's training time).
    const Act act = act_of(op);
    const float* xv = X.data.data();
    float* yv = y.data.data();
    const size_t count = X.data.size();
    switch (act) {
      case Act::kRelu: for (size_t k = 0; k < count; ++k) yv[k] = xv[k] > 0 ? xv[k] : 0.f; break;
      case Act::kLeakyRelu: for (size_t k = 0; k < count; ++k) yv[k] = xv[k] > 0 ? xv[k] : alpha * xv[k]; break;
      case Act::kClip: for (size_t k = 0; k < count; ++k) yv[k] = std::min(hi, std::max(lo, xv[k])); break;
      case Act::kSigmoid: for (size_t k = 0; k < count; ++k) yv[k] = 1.f / (1.f + std::exp(-xv[k])); break;
      case Act::kTanh: for (size_t k = 0; k < count; ++k) yv[k] = std::tanh(xv[k]); break;
    }
  } else if (op == "MaxPool" || op == "AveragePool") {
    const Value& X = in(0);
    PoolGeom g = pool_geom(n, X.shape);
    bool include_pad = attr_i(n, "count_include_pad", 0) != 0;
    y.shape = {g.N, g.C, g.OH, g.OW};
    y.data.assign(size_t(y.size()), 0.f);
    for (int64_t nc = 0; nc < g.N * g.C; ++nc)
      for (int64_t oy = 0; oy < g.OH; ++oy)
        for (int64_t ox = 0; ox < g.OW; ++ox) {
          float best = -std::numeric_limits<float>::infinity(), sum = 0;
          int64_t cnt = 0;
          for (int64_t i = 0; i < g.kh; ++i)
            for (int64_t j = 0; j < g.kw; ++j) {
              int64_t iy = oy * g.sh - g.pt + i, ix = ox * g.sw - g.pl + j;
              bool inside = iy >= 0 && iy < g.H && ix >= 0 && ix < g.W;
              if (!inside) { if (include_pad && iy < g.H + g.pt && ix < g.W + g.pl) ++cnt; continue; }
              float v = X.data[size_t((nc * g.H + iy) * g.W + ix)];
              best = std::max(best, v);
              sum += v;
              ++cnt;
            }
          y.data[size_t((nc * g.OH + oy) * g.OW + ox)] = op == "MaxPool" ? best : (cnt ? sum / float(cnt) : 0.f);
        }
  } else if (op == "GlobalAveragePool") {
    const Value& X = in(0);
    int64_t nc = X.shape[0] * X.shape[1], hw = X.size() / nc;
    y.shape = X.shape;
    for (size_t k = 2; k < y.shape.size(); ++k) y.shape[k] = 1;
    y.data.assign(size_t(nc), 0.f);
    for (int64_t c = 0; c < nc; ++c) {
      double s = 0;
      for (int64_t j = 0; j < hw; ++j) s += X.data[size_t(c * hw + j)];
      y.data[size_t(c)] = float(s / double(hw));
    }
  } else if (op == "Add" || op == "Mul") {
    const Value &A = in(0), &B = in(1);
    const bool add = op == "Add";
    if (A.shape == B.shape) {  // the residual Add: no broadcasting, no index arithmetic
      y.shape = A.shape;
      y.data.resize(A.data.size());
      for (size_t o = 0; o < y.data.size(); ++o) y.data[o] = add ? A.data[o] + B.data[o] : A.data[o] * B.data[o];
    } else {
      Broadcast b({A.shape, B.shape});
      y.shape = b.out;
      y.data.resize(size_t(b.total()));
      for (int64_t o = 0; o < b.total(); ++o) {
        float a = A.data[size_t(b.offset(o, 0))], c = B.data[size_t(b.offset(o, 1))];
        y.data[size_t(o)] = add ? a + c : a * c;
      }
    }
  } else if (op == "BatchNormalization") {
    const Value& X = in(0);
    const Value &s = in(1), &bb = in(2), &mean = in(3), &var = in(4);
    float eps = attr_f(n, "epsilon", 1e-5f);
    int64_t C = X.shape[1], inner = X.size() / (X.shape[0] * C);
    y.shape = X.shape;
    y.data.resize(X.data.size());
    for (int64_t nc = 0; nc < X.size() / inner; ++nc) {  // per channel plane: one scale
      const int64_t c = nc % C;
      const float sc = s.data[size_t(c)] / std::sqrt(var.data[size_t(c)] + eps), mu = mean.data[size_t(c)],
                  beta = bb.data[size_t(c)];
      const float* xp = X.data.data() + nc * inner;
      float* yp = y.data.data() + nc * inner;
      for (int64_t k = 0; k < inner; ++k) yp[k] = (xp[k] - mu) * sc + beta;
    }
  } else if (op == "Flatten" || op == "Reshape" || op == "Identity" || op == "Dropout") {
    const Value& X = in(0);
    y.data = X.data;
    if (op == "Flatten") {
      int64_t axis = attr_i(n, "axis", 1);
      if (axis < 0) axis += int64_t(X.shape.size());
      int64_t a = 1;
      for (int64_t k = 0; k < axis; ++k) a *= X.shape[size_t(k)];
      y.shape = {a, X.size() / a};
    } else if (op == "Reshape") {
      const Value& s = in(1);
      y.shape.clear();
      int64_t known = 1, neg = -1;
      for (size_t k = 0; k < s.data.size(); ++k) {
        int64_t d = int64_t(s.data[k]);
        if (d == 0) d = X.shape.at(k);
        if (d == -1) { neg = int64_t(k); d = 1; }
        else known *= d;
        y.shape.push_back(d);
      }
      if (neg >= 0) y.shape[size_t(neg)] = X.size() / known;
    } else {
      y.shape = X.shape;
    }
  } else if (op == "Concat") {
    int64_t axis = attr_i(n, "axis", 0);
    const Value& first = in(0);
    if (axis < 0) axis += int64_t(first.shape.size());
    y.shape = first.shape;
    y.shape[size_t(axis)] = 0;
    for (size_t k = 0; k < n.inputs.size(); ++k) y.shape[size_t(axis)] += in(k).shape[size_t(axis)];
    int64_t outer = 1, inner = 1;
    for (int64_t k = 0; k < axis; ++k) outer *= y.shape[size_t(k)];
    for (size_t k = size_t(axis) + 1; k < y.shape.size(); ++k) inner *= y.shape[k];
    y.data.resize(size_t(y.size()));
    int64_t off = 0;
    for (size_t k = 0; k < n.inputs.size(); ++k) {
      const Value& X = in(k);
      int64_t w = X.shape[size_t(axis)] * inner;
      for (int64_t o = 0; o < outer; ++o)
        std::copy(X.data.begin() + o * w, X.data.begin() + (o + 1) * w, y.data.begin() + o * y.shape[size_t(axis)] * inner + off);
      off += w;
    }
  } else if (op == "Softmax") {
    const Value& X = in(0);
    int64_t axis = attr_i(n, "axis", -1);
    if (axis < 0) axis += int64_t(X.shape.size());
    if (axis != int64_t(X.shape.size()) - 1) throw std::runtime_error(n.describe() + ": only the last axis is trainable");
    int64_t c = X.shape.back(), rows = X.size() / c;
    y.shape = X.shape;
    y.data.resize(X.data.size());
    for (int64_t r = 0; r < rows; ++r) {
      const float* x = &X.data[size_t(r * c)];
      float m = *std::max_element(x, x + c);
      double s = 0;
      for (int64_t j = 0; j < c; ++j) s += std::exp(double(x[j] - m));
      for (int64_t j = 0; j < c; ++j) y.data[size_t(r * c + j)] = float(std::exp(double(x[j] - m)) / s);
    }
  }
  acts_[n.outputs[0]] = std::move(y);
}

void TrainGraph::backward_node(const ir::Node& n) {
  const std::string& op = n.op;
  if (op == "LSTM") return backward_lstm(n);
  if (op == "Transpose" || op == "Gather" || op == "Squeeze" || op == "Unsqueeze") {
    const int xt = n.inputs[0];
    if (xt == input_ || consts_.count(xt)) return;  // nothing upstream to train
    const Value& X = val(xt);
    const std::vector<float> dy = grads_.at(n.outputs[0]).data;
    Value& g = grad(xt, X.shape);
    if (op == "Squeeze" || op == "Unsqueeze") {
      for (size_t k = 0; k < dy.size(); ++k) g.data[k] += dy[k];
      return;
    }
    Dims shape;
    const std::vector<int64_t> map = op == "Transpose" ? transpose_map(n, X.shape, &shape)
                                                       : gather_map(n, X.shape, val(n.inputs[1]), &shape);
    for (size_t o = 0; o < map.size(); ++o) g.data[size_t(map[o])] += dy[o];
    return;
  }
  const Value& Y = acts_.at(n.outputs[0]);
  const std::vector<float> dy = grads_.at(n.outputs[0]).data;  // copy: grads_ may rehash
  auto in = [&](size_t k) -> const Value& { return val(n.inputs[k]); };
  // Gradient of input k, if anything upstream needs it (activations and parameters).
  auto wants = [&](size_t k) {
    if (k >= n.inputs.size() || n.inputs[k] < 0) return false;
    int t = n.inputs[k];
    if (consts_.count(t)) return std::find(params_.begin(), params_.end(), t) != params_.end();
    return t != input_;
  };
  auto gin = [&](size_t k) -> Value& { return grad(n.inputs[k], in(k).shape); };

  if (op == "Gemm") {
    const Value &A = in(0), &B = in(1);
    bool ta = attr_i(n, "transA", 0), tb = attr_i(n, "transB", 0);
    float alpha = attr_f(n, "alpha", 1.f), beta = attr_f(n, "beta", 1.f);
    int64_t M = Y.shape[0], N = Y.shape[1], K = ta ? A.shape[0] : A.shape[1];
    std::vector<float> d = dy;
    if (alpha != 1.f) for (auto& v : d) v *= alpha;
    if (wants(0)) {
      std::vector<float> Bt = tb ? B.data : transpose(B.data.data(), B.shape[0], B.shape[1]);  // [N, K]
      std::vector<float> dA(size_t(M * K));
      matmul(d.data(), Bt.data(), dA.data(), M, N, K, false);
      Value& g = gin(0);
      std::vector<float> r = ta ? transpose(dA.data(), M, K) : dA;
      for (size_t k = 0; k < r.size(); ++k) g.data[k] += r[k];
    }
    if (wants(1)) {
      std::vector<float> At = ta ? A.data : transpose(A.data.data(), A.shape[0], A.shape[1]);  // [K, M]
      std::vector<float> dB(size_t(K * N));
      matmul(At.data(), d.data(), dB.data(), K, M, N, false);
      Value& g = gin(1);
      std::vector<float> r = tb ? transpose(dB.data(), K, N) : dB;
      for (size_t k = 0; k < r.size(); ++k) g.data[k] += r[k];
    }
    if (wants(2)) {
      Value& g = gin(2);
      Broadcast b({Y.shape, in(2).shape});
      for (int64_t o = 0; o < M * N; ++o) g.data[size_t(b.offset(o, 1))] += beta * dy[size_t(o)];
    }
  } else if (op == "MatMul") {
    const Value &A = in(0), &B = in(1);
    int64_t K = B.shape[0], N = B.shape[1], M = A.size() / K;
    if (wants(0)) {
      std::vector<float> Bt = transpose(B.data.data(), K, N);
      Value& g = gin(0);
      matmul(dy.data(), Bt.data(), g.data.data(), M, N, K, true);
    }
    if (wants(1)) {
      std::vector<float> At = transpose(A.data.data(), M, K);
      Value& g = gin(1);
      matmul(At.data(), dy.data(), g.data.data(), K, M, N, true);
    }
  } else if (op == "Conv") {
    const Value &X = in(0), &Wt = in(1);
    ConvGeom g = conv_geom(n, X.shape, Wt.shape);
    const int64_t cg = g.C / g.group, og = g.O / g.group, kk = cg * g.kh * g.kw, ohw = g.OH * g.OW;
    const bool wx = wants(0), ww = wants(1), wb = wants(2);
    float* dx = wx ? gin(0).data.data() : nullptr;
    // dW is summed per fixed chunk of images, then over the chunks in order: the same sums
    // in the same order whatever the threads do, so training is deterministic for a seed.
    const int64_t chunks = std::min<int64_t>(g.N, 8);
    std::vector<std::vector<float>> dw_chunk(size_t(chunks), std::vector<float>(ww ? Wt.data.size() : 0, 0.f));
    const bool tiles = conv_uses_tiles(Wt.data, og);
    std::vector<std::vector<float>> w_t;  // per group W^T [kk, og], for dcol = W^T dY
    if (tiles && wx)
      for (int64_t gr = 0; gr < g.group; ++gr) w_t.push_back(transpose(Wt.data.data() + gr * og * kk, og, kk));
    parallel_rows(chunks, [&](int64_t chunk) {
      std::vector<float> col(size_t(kk * ohw)), dcol(size_t(kk * ohw));
      std::vector<float>& dw = dw_chunk[size_t(chunk)];
      for (int64_t b = chunk * g.N / chunks; b < (chunk + 1) * g.N / chunks; ++b)
      for (int64_t gr = 0; gr < g.group; ++gr) {
        const float* d = dy.data() + (b * g.O + gr * og) * ohw;
        const float* w = Wt.data.data() + gr * og * kk;
        if (ww && og >= 4) {  // dW += dY col^T as one product
          im2col(g, X.data.data() + b * g.C * g.H * g.W, gr * cg, cg, col.data());
          const std::vector<float> col_t = transpose(col.data(), kk, ohw);
          matmul(d, col_t.data(), dw.data() + gr * og * kk, og, ohw, kk, true);
        } else if (ww) {
          im2col(g, X.data.data() + b * g.C * g.H * g.W, gr * cg, cg, col.data());
          for (int64_t o = 0; o < og; ++o)
            for (int64_t k = 0; k < kk; ++k)
              dw[size_t((gr * og + o) * kk + k)] += dot(d + o * ohw, col.data() + k * ohw, ohw);
        }
        if (wx && tiles) {
          matmul(w_t[size_t(gr)].data(), d, dcol.data(), kk, og, ohw, false);
          col2im(g, dcol.data(), gr * cg, cg, dx + b * g.C * g.H * g.W);
        } else if (wx) {
          std::fill(dcol.begin(), dcol.end(), 0.f);
          for (int64_t o = 0; o < og; ++o)
            for (int64_t k = 0; k < kk; ++k) {
              float wv = w[o * kk + k];
              if (wv == 0.f) continue;
              const float* dr = d + o * ohw;
              float* c = dcol.data() + k * ohw;
              for (int64_t j = 0; j < ohw; ++j) c[j] += wv * dr[j];
            }
          col2im(g, dcol.data(), gr * cg, cg, dx + b * g.C * g.H * g.W);  // image b only: no race
        }
      }
    });
    if (ww) {
      Value& gw = gin(1);
      for (const auto& part : dw_chunk)
        for (size_t k = 0; k < part.size(); ++k) gw.data[k] += part[k];
    }
    if (wb) {
      Value& gb = gin(2);
      for (int64_t b = 0; b < g.N; ++b)
        for (int64_t o = 0; o < g.O; ++o)
          for (int64_t j = 0; j < ohw; ++j) gb.data[size_t(o)] += dy[size_t((b * g.O + o) * ohw + j)];
    }
  } else if (op == "Relu" || op == "LeakyRelu" || op == "Clip" || op == "Sigmoid" || op == "Tanh") {
    if (!wants(0)) return;
    const Value& X = in(0);
    Value& g = gin(0);
    float lo = -std::numeric_limits<float>::infinity(), hi = -lo, alpha = attr_f(n, "alpha", 0.01f);
    if (op == "Clip") {
      if (auto* a = attr(n, "min")) lo = a->f;
      if (auto* a = attr(n, "max")) hi = a->f;
      if (n.inputs.size() > 1 && n.inputs[1] >= 0) lo = in(1).data.at(0);
      if (n.inputs.size() > 2 && n.inputs[2] >= 0) hi = in(2).data.at(0);
    }
    const Act act = act_of(op);
    const float *xv = X.data.data(), *yv = Y.data.data(), *dv = dy.data();
    float* gv = g.data.data();
    const size_t count = dy.size();
    switch (act) {
      case Act::kRelu: for (size_t k = 0; k < count; ++k) gv[k] += xv[k] > 0 ? dv[k] : 0.f; break;
      case Act::kLeakyRelu: for (size_t k = 0; k < count; ++k) gv[k] += (xv[k] > 0 ? 1.f : alpha) * dv[k]; break;
      case Act::kClip: for (size_t k = 0; k < count; ++k) gv[k] += (xv[k] > lo && xv[k] < hi) ? dv[k] : 0.f; break;
      case Act::kSigmoid: for (size_t k = 0; k < count; ++k) gv[k] += yv[k] * (1 - yv[k]) * dv[k]; break;
      case Act::kTanh: for (size_t k = 0; k < count; ++k) gv[k] += (1 - yv[k] * yv[k]) * dv[k]; break;
    }
  } else if (op == "MaxPool" || op == "AveragePool") {
    if (!wants(0)) return;
    const Value& X = in(0);
    PoolGeom g = pool_geom(n, X.shape);
    bool include_pad = attr_i(n, "count_include_pad", 0) != 0;
    Value& gx = gin(0);
    for (int64_t nc = 0; nc < g.N * g.C; ++nc)
      for (int64_t oy = 0; oy < g.OH; ++oy)
        for (int64_t ox = 0; ox < g.OW; ++ox) {
          const float d = dy[size_t((nc * g.OH + oy) * g.OW + ox)];
          const float yv = Y.data[size_t((nc * g.OH + oy) * g.OW + ox)];
          int64_t cnt = 0;
          bool routed = false;
          for (int pass = 0; pass < 2; ++pass)
            for (int64_t i = 0; i < g.kh; ++i)
              for (int64_t j = 0; j < g.kw; ++j) {
                int64_t iy = oy * g.sh - g.pt + i, ix = ox * g.sw - g.pl + j;
                bool inside = iy >= 0 && iy < g.H && ix >= 0 && ix < g.W;
                if (pass == 0) { cnt += inside || (include_pad && iy < g.H + g.pt && ix < g.W + g.pl); continue; }
                if (!inside) continue;
                float& gv = gx.data[size_t((nc * g.H + iy) * g.W + ix)];
                if (op == "MaxPool") {
                  // The first maximum takes the gradient (as the forward picked one value).
                  if (!routed && X.data[size_t((nc * g.H + iy) * g.W + ix)] == yv) { gv += d; routed = true; }
                } else {
                  gv += d / float(cnt ? cnt : 1);
                }
              }
        }
  } else if (op == "GlobalAveragePool") {
    if (!wants(0)) return;
    const Value& X = in(0);
    Value& g = gin(0);
    int64_t nc = X.shape[0] * X.shape[1], hw = X.size() / nc;
    for (int64_t c = 0; c < nc; ++c)
      for (int64_t j = 0; j < hw; ++j) g.data[size_t(c * hw + j)] += dy[size_t(c)] / float(hw);
  } else if (op == "Add" || op == "Mul") {
    const Value &A = in(0), &B = in(1);
    const bool add = op == "Add", same = A.shape == B.shape;
    Broadcast b({A.shape, B.shape});
    for (size_t k = 0; k < 2; ++k) {
      if (!wants(k)) continue;
      Value& g = gin(k);
      const Value& other = k == 0 ? B : A;
      if (same) {
        for (size_t o = 0; o < dy.size(); ++o) g.data[o] += add ? dy[o] : other.data[o] * dy[o];
        continue;
      }
      for (int64_t o = 0; o < b.total(); ++o) {
        float f = add ? 1.f : other.data[size_t(b.offset(o, 1 - k))];
        g.data[size_t(b.offset(o, k))] += f * dy[size_t(o)];
      }
    }
  } else if (op == "BatchNormalization") {
    if (!wants(0)) return;
    const Value& X = in(0);
    const Value &s = in(1), &var = in(4);
    float eps = attr_f(n, "epsilon", 1e-5f);
    int64_t C = X.shape[1], inner = X.size() / (X.shape[0] * C);
    Value& g = gin(0);
    for (int64_t nc = 0; nc < X.size() / inner; ++nc) {
      const int64_t c = nc % C;
      const float sc = s.data[size_t(c)] / std::sqrt(var.data[size_t(c)] + eps);
      for (int64_t k = nc * inner; k < (nc + 1) * inner; ++k) g.data[size_t(k)] += dy[size_t(k)] * sc;
    }
  } else if (op == "Flatten" || op == "Reshape" || op == "Identity" || op == "Dropout") {
    if (!wants(0)) return;
    Value& g = gin(0);
    for (size_t k = 0; k < dy.size(); ++k) g.data[k] += dy[k];
  } else if (op == "Concat") {
    int64_t axis = attr_i(n, "axis", 0);
    if (axis < 0) axis += int64_t(Y.shape.size());
    int64_t outer = 1, inner = 1;
    for (int64_t k = 0; k < axis; ++k) outer *= Y.shape[size_t(k)];
    for (size_t k = size_t(axis) + 1; k < Y.shape.size(); ++k) inner *= Y.shape[k];
    int64_t off = 0;
    for (size_t k = 0; k < n.inputs.size(); ++k) {
      int64_t w = in(k).shape[size_t(axis)] * inner;
      if (wants(k)) {
        Value& g = gin(k);
        for (int64_t o = 0; o < outer; ++o)
          for (int64_t j = 0; j < w; ++j) g.data[size_t(o * w + j)] += dy[size_t(o * Y.shape[size_t(axis)] * inner + off + j)];
      }
      off += w;
    }
  } else if (op == "Softmax") {
    if (!wants(0)) return;
    Value& g = gin(0);
    int64_t c = Y.shape.back(), rows = Y.size() / c;
    for (int64_t r = 0; r < rows; ++r) {
      double dot = 0;
      for (int64_t j = 0; j < c; ++j) dot += double(dy[size_t(r * c + j)]) * Y.data[size_t(r * c + j)];
      for (int64_t j = 0; j < c; ++j)
        g.data[size_t(r * c + j)] += Y.data[size_t(r * c + j)] * float(dy[size_t(r * c + j)] - dot);
    }
  }
}

}  // namespace compress
}  // namespace minnow
