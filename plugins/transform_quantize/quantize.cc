// quantize: weight quantization of every Gemm / MatMul / Conv weight matrix.
//  kind=codebook: non-uniform, per layer: 1-D k-means with 2^bits centroids (Deep
//    Compression weight sharing) stored as [Codebook] or [Sparse, Codebook]. A pruned
//    tensor stored dense keeps its zeros through a fixed centroid 0.0 (index 0), so the
//    pruning mask survives quantization and fine-tuning.
//  kind=uniform: per-channel symmetric (scale = max|w| / (2^(bits-1) - 1) per output
//    channel), levels stored as int8 (bits = 8) or as a codebook of the integer levels
//    (bits < 8), with QuantParams on the tensor; the loader dequantizes.
// Dense or CSR storage is chosen per tensor, whichever is smaller.
//
// Options: bits=4 (2..8)  kind=codebook|uniform  bits@<tensor>=N  min_size=<elements>
//          layout=auto|dense|sparse (auto: smaller at fixed width)
//          small_size=N small_bits=8 (tensors under N elements get small_bits)
//          small_cols=N (so do weights with a fan-in under N)
#include "../compress_common/encode.h"
#include "../compress_common/ir_util.h"
#include "../compress_common/kmeans.h"
#include "../compress_common/transform_plugin.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>

namespace minnow {
namespace compress {
namespace {

struct Choice {
  Layout layout;
  bool zero_centroid = false;  // dense layout with pruned zeros to keep
};

// Dense (all elements, zeros kept by a reserved centroid) or CSR (non-zeros only),
// whichever stores fewer bytes at `bits` per index.
Choice choose_layout(const Tensor& w, int bits, const std::string& mode) {
  Layout sp = csr_layout(w);
  const int64_t n = w.elements();
  const int64_t nnz = int64_t(sp.slots.size());
  uint64_t dense_bytes = stream_bytes((uint64_t(n) * uint64_t(bits) + 7) / 8);
  uint64_t sparse_bytes = sparse_index_bytes(sp) + stream_bytes((uint64_t(nnz) * uint64_t(bits) + 7) / 8);
  Choice c;
  // layout=dense suits a following huffman step: the zero index then costs about one bit,
  // less than CSR's 32-bit column index per non-zero.
  bool sparse = mode == "sparse" || (mode == "auto" && sparse_bytes < dense_bytes);
  if (sparse && nnz > 0) {
    c.layout = std::move(sp);
  } else {
    c.layout = dense_layout(sp.rows, sp.cols);
    c.zero_centroid = nnz < n;
  }
  return c;
}

// Per-layer k-means over the stored values `v` (one per slot); a zero centroid first when
// the layout keeps pruned zeros.
struct Book {
  std::vector<float> cent;
  std::vector<uint32_t> idx;
};
Book kmeans_book(const Choice& ch, const std::vector<float>& v, int bits) {
  std::vector<float> vals;
  std::vector<size_t> which;  // slot positions that take part in k-means
  for (size_t s = 0; s < v.size(); ++s) {
    if (ch.zero_centroid && v[s] == 0.f) continue;
    vals.push_back(v[s]);
    which.push_back(s);
  }
  int k = (1 << bits) - (ch.zero_centroid ? 1 : 0);
  KMeansResult km = kmeans_1d(vals, k);
  Book b;
  b.idx.assign(v.size(), 0);
  if (ch.zero_centroid) b.cent.push_back(0.f);
  const uint32_t off = uint32_t(b.cent.size());
  for (float c : km.centroids) b.cent.push_back(short_float(c));
  for (size_t i = 0; i < which.size(); ++i) b.idx[which[i]] = km.assign[i] + off;
  return b;
}

// Mean over output channels of each channel's relative squared error.
double channel_error(const std::vector<double>& err, const std::vector<double>& ref) {
  double e = 0;
  int n = 0;
  for (size_t c = 0; c < err.size(); ++c)
    if (ref[c] > 0) { e += err[c] / ref[c]; ++n; }
  return n ? e / n : 0;
}

// A per-layer codebook; or, when the output channels' ranges differ so much that one
// codebook serves the small channels badly (BatchNormalization folded into the weights
// does this), a codebook of the values divided by their channel's max |w|, with the
// per-channel scales as QuantParams (the loader multiplies them back). The scaled form
// costs 4 bytes per channel, so it is taken only when it halves the mean per-channel error.
void codebook(ir::ModelIR& m, int t, const Tensor& w, int bits, int axis, const std::string& mode) {
  Choice ch = choose_layout(w, bits, mode);
  m.graph.tensors[size_t(t)].quant = ir::QuantParams{};
  const float* p = w.data<float>();
  const Shape& sh = w.shape();
  const int64_t channels = axis >= 0 && axis < int(sh.size()) ? sh[size_t(axis)] : 1;
  int64_t inner = 1;
  for (size_t k = size_t(axis) + 1; axis >= 0 && k < sh.size(); ++k) inner *= sh[k];
  auto chan = [&](int64_t e) { return size_t((e / inner) % channels); };
  std::vector<float> smax(size_t(channels), 0.f);
  for (int64_t e = 0; e < w.elements(); ++e) smax[chan(e)] = std::max(smax[chan(e)], std::fabs(p[e]));
  for (auto& x : smax) x = x > 0 ? short_float(x) : 1.f;
  std::vector<float> plain, scaled;
  for (int64_t sl : ch.layout.slots) {
    plain.push_back(p[sl]);
    scaled.push_back(p[sl] / smax[chan(sl)]);
  }
  Book a = kmeans_book(ch, plain, bits);
  if (channels < 2) return store_codebook(m, t, ch.layout, a.cent, a.idx, bits);
  Book b = kmeans_book(ch, scaled, bits);
  std::vector<double> ea(size_t(channels), 0), eb(size_t(channels), 0), ref(size_t(channels), 0);
  for (size_t s = 0; s < plain.size(); ++s) {
    size_t c = chan(ch.layout.slots[s]);
    ref[c] += double(plain[s]) * plain[s];
    ea[c] += std::pow(double(a.cent[a.idx[s]]) - plain[s], 2);
    eb[c] += std::pow(double(b.cent[b.idx[s]]) * smax[c] - plain[s], 2);
  }
  if (channel_error(eb, ref) >= 0.5 * channel_error(ea, ref))
    return store_codebook(m, t, ch.layout, a.cent, a.idx, bits);
  store_codebook(m, t, ch.layout, b.cent, b.idx, bits);
  auto& qp = m.graph.tensors[size_t(t)].quant;
  qp = ir::QuantParams{};
  qp.scale = smax;
  qp.axis = axis;
  qp.bits = bits;
  qp.symmetric = true;
}

void uniform(ir::ModelIR& m, int t, const Tensor& w, int bits, int axis, const std::string& mode) {
  const Shape& s = w.shape();
  // axis < 0: one scale for the whole tensor.
  const int64_t channels = axis < 0 ? 1 : s[size_t(axis)];
  int64_t inner = axis < 0 ? w.elements() : 1;
  for (size_t k = size_t(axis) + 1; axis >= 0 && k < s.size(); ++k) inner *= s[k];
  const int qmax = (1 << (bits - 1)) - 1;
  std::vector<float> scale(size_t(channels), 0.f);
  const float* p = w.data<float>();
  for (int64_t k = 0; k < w.elements(); ++k) {
    size_t c = size_t((k / inner) % channels);
    scale[c] = std::max(scale[c], std::fabs(p[k]));
  }
  for (auto& sc : scale) sc = sc > 0 ? short_float(sc / float(qmax)) : 1.f;
  std::vector<int> q(size_t(w.elements()));
  for (int64_t k = 0; k < w.elements(); ++k) {
    size_t c = size_t((k / inner) % channels);
    q[size_t(k)] = std::max(-qmax, std::min(qmax, int(std::lround(p[k] / scale[c]))));
  }
  // Which elements to store: every one, or the non-zero levels in CSR when smaller.
  Tensor levels(DataType::kFloat32, s);
  for (int64_t k = 0; k < w.elements(); ++k) levels.data<float>()[k] = float(q[size_t(k)]);
  Layout sp = csr_layout(levels);
  uint64_t dense_bytes = stream_bytes((uint64_t(w.elements()) * bits + 7) / 8);
  uint64_t sparse_bytes = sparse_index_bytes(sp) + stream_bytes((uint64_t(sp.slots.size()) * bits + 7) / 8);
  bool sparse = mode == "sparse" || (mode == "auto" && sparse_bytes < dense_bytes);
  Layout l = sparse && !sp.slots.empty() ? sp : dense_layout(sp.rows, sp.cols);
  if (bits == 8) {
    std::vector<int8_t> v;
    for (int64_t slot : l.slots) v.push_back(int8_t(q[size_t(slot)]));
    std::vector<float> dummy;
    store_values(m, t, l, dummy);  // builds the sparse stage (if any) + an empty dense stage
    auto& enc = m.graph.tensors[size_t(t)].encodings;
    enc.back() = ir::DenseStage{add_buffer(m, v.data(), v.size()), DataType::kInt8};
  } else {
    std::vector<float> cent;
    for (int lv = -qmax; lv <= qmax; ++lv) cent.push_back(float(lv));
    std::vector<uint32_t> idx;
    for (int64_t slot : l.slots) idx.push_back(uint32_t(q[size_t(slot)] + qmax));
    store_codebook(m, t, l, cent, idx, bits);
  }
  auto& qp = m.graph.tensors[size_t(t)].quant;
  qp = ir::QuantParams{};
  qp.scale = scale;  // symmetric: no zero points stored (the loader reads none as 0)
  qp.axis = axis;
  qp.bits = bits;
  qp.symmetric = true;
}

void quantize(TransformContext& ctx) {
  ir::ModelIR& m = ctx.model;
  const int bits = int(ctx.options.get_int("bits", 4));
  const std::string kind = ctx.options.get_string("kind", "codebook");
  const int64_t min_size = ctx.options.get_int("min_size", 0);
  const std::string layout = ctx.options.get_string("layout", "auto");
  // Small tensors (stems, depthwise filters) are the most sensitive and cost little: they
  // get `small_bits` (Deep Compression likewise gave conv layers more bits than fc).
  const int64_t small_size = ctx.options.get_int("small_size", 0);
  const int small_bits = int(ctx.options.get_int("small_bits", 8));
  // small_cols=N: so are weights whose neurons sum fewer than N inputs (depthwise filters,
  // fan-in 9), whatever their size: distill's min_cols keeps them unpruned for the same reason.
  const int64_t small_cols = ctx.options.get_int("small_cols", 0);
  // Small tensors at 8 bits are stored as per-channel int8 levels (small_kind=uniform):
  // a 256-entry codebook would cost more than the tensor.
  const std::string small_kind = ctx.options.get_string("small_kind", "uniform");
  // bias_bits=8: biases (Gemm / Conv input 2, LSTM / GRU / RNN input 3) as per-tensor
  // symmetric int8; 0 leaves them float.
  const int bias_bits = int(ctx.options.get_int("bias_bits", 0));
  if (small_kind != "codebook" && small_kind != "uniform")
    throw std::runtime_error("quantize: small_kind must be codebook or uniform");
  if (bias_bits != 0 && bias_bits != 8) throw std::runtime_error("quantize: bias_bits must be 0 or 8");
  if (layout != "auto" && layout != "dense" && layout != "sparse")
    throw std::runtime_error("quantize: layout must be auto, dense or sparse");
  if (kind != "codebook" && kind != "uniform") throw std::runtime_error("quantize: kind must be codebook or uniform");
  auto check_bits = [](int b, const std::string& what) {
    if (b < 2 || b > 8) throw std::runtime_error("quantize: " + what + " must be 2..8, got " + std::to_string(b));
  };
  check_bits(bits, "bits");
  check_bits(small_bits, "small_bits");
  auto refs = weight_tensors(m);
  std::vector<int> done;
  for (const auto& kv : ctx.options.all())
    if (kv.first.rfind("bits@", 0) == 0) {
      bool known = false;
      for (auto& r : refs) known = known || kv.first == "bits@" + r.name;
      if (!known) throw std::runtime_error("quantize: no weight tensor named '" + kv.first.substr(5) + "'");
    }
  char line[256];
  ctx.report << "quantize (" << kind << ", " << bits << " bits):\n";
  std::string params = "{\"kind\":\"" + kind + "\",\"bits\":" + std::to_string(bits) + ",\"min_size\":" +
                       std::to_string(min_size) + ",\"layout\":\"" + layout + "\",\"small_size\":" +
                       std::to_string(small_size) + ",\"small_bits\":" + std::to_string(small_bits) +
                       ",\"small_kind\":\"" + small_kind + "\",\"bias_bits\":" + std::to_string(bias_bits);
  if (small_cols > 0) params += ",\"small_cols\":" + std::to_string(small_cols);
  for (const auto& r : refs) {
    if (std::find(done.begin(), done.end(), r.tensor) != done.end()) continue;
    done.push_back(r.tensor);
    std::string key = "bits@" + r.name;
    const auto wshape = m.graph.tensors[size_t(r.tensor)].static_shape();
    const int64_t elements = shape_elements(wshape);
    const int64_t outputs =
        r.out_axis >= 0 && size_t(r.out_axis) < wshape.size() ? std::max<int64_t>(1, wshape[size_t(r.out_axis)]) : 1;
    const bool small = elements < small_size || (small_cols > 0 && elements / outputs < small_cols);
    int b = int(ctx.options.get_int(key, small ? small_bits : bits));
    check_bits(b, key);
    if (ctx.options.has(key)) params += ",\"" + json_escape(key) + "\":" + std::to_string(b);
    Tensor w = constant_f32(m, r.tensor);
    if (w.elements() < min_size) continue;
    uint64_t before = stored_bytes(m, r.tensor);
    Tensor orig = w.clone();
    const std::string k = small ? small_kind : kind;
    if (k == "codebook") codebook(m, r.tensor, w, b, r.out_axis, layout);
    else uniform(m, r.tensor, w, b, r.out_axis, layout);
    Tensor back = constant_f32(m, r.tensor);
    double err = 0, ref = 0;
    for (int64_t k = 0; k < w.elements(); ++k) {
      double d = double(back.data<float>()[k]) - orig.data<float>()[k];
      err += d * d;
      ref += double(orig.data<float>()[k]) * orig.data<float>()[k];
    }
    const auto& enc = m.graph.tensors[size_t(r.tensor)].encodings;
    bool sparse = std::holds_alternative<ir::SparseStage>(enc.front());
    std::snprintf(line, sizeof line, "  %-24s %9lld params  %d bits  %s  %llu -> %llu bytes  rel. error %.4f\n",
                  r.name.c_str(), (long long)w.elements(), b, sparse ? "CSR  " : "dense",
                  (unsigned long long)before, (unsigned long long)stored_bytes(m, r.tensor),
                  ref > 0 ? std::sqrt(err / ref) : 0.0);
    ctx.report << line;
  }
  if (bias_bits) {
    uint64_t before = 0, after = 0;
    int count = 0;
    for (int t : bias_tensors(m)) {
      if (std::find(done.begin(), done.end(), t) != done.end()) continue;
      done.push_back(t);
      Tensor bias = constant_f32(m, t);
      before += stored_bytes(m, t);
      uniform(m, t, bias, 8, -1, "dense");
      after += stored_bytes(m, t);
      ++count;
    }
    std::snprintf(line, sizeof line, "  %d biases as int8 (per tensor): %llu -> %llu bytes\n", count,
                  (unsigned long long)before, (unsigned long long)after);
    ctx.report << line;
  }
  ctx.parameters = params + "}";
}

}  // namespace
}  // namespace compress
}  // namespace minnow

MINNOW_DEFINE_TRANSFORM("quantize", "0.1.0", "k-means codebook or per-channel uniform weight quantization (2-8 bits)",
                        minnow::compress::quantize)
