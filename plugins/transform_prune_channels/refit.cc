#include "refit.h"

#include <Eigen/Dense>

#include <algorithm>
#include <limits>
#include <stdexcept>

namespace minnow {
namespace compress {
namespace channels {
namespace {

using Mat = Eigen::MatrixXd;

struct ConvGeom {
  int64_t sh = 1, sw = 1, dh = 1, dw = 1, pt = 0, pl = 0, pb = 0, pr = 0, ho = 0, wo = 0;
};

ConvGeom geometry(const ir::Node& n, const Value& x, int64_t kh, int64_t kw) {
  ConvGeom g;
  if (const ir::Attribute* a = n.attr("strides"); a && a->ints.size() == 2) { g.sh = a->ints[0]; g.sw = a->ints[1]; }
  if (const ir::Attribute* a = n.attr("dilations"); a && a->ints.size() == 2) { g.dh = a->ints[0]; g.dw = a->ints[1]; }
  if (const ir::Attribute* a = n.attr("pads"); a && a->ints.size() == 4) {
    g.pt = a->ints[0]; g.pl = a->ints[1]; g.pb = a->ints[2]; g.pr = a->ints[3];
  }
  if (x.shape.size() != 4) throw std::runtime_error("prune-channels: " + n.describe() + ": input is not NCHW");
  g.ho = (x.shape[2] + g.pt + g.pb - g.dh * (kh - 1) - 1) / g.sh + 1;
  g.wo = (x.shape[3] + g.pl + g.pr - g.dw * (kw - 1) - 1) / g.sw + 1;
  if (g.ho <= 0 || g.wo <= 0) throw std::runtime_error("prune-channels: " + n.describe() + ": empty output");
  return g;
}

// Least-squares coefficients on columns `idx` of the normal equations, and the inverse.
void solve(const Mat& G, const Mat& B, const std::vector<int64_t>& idx, double lambda, Mat* beta, Mat* inv) {
  const int64_t d = int64_t(idx.size());
  Mat S(d, d), b(d, B.cols());
  for (int64_t i = 0; i < d; ++i) {
    for (int64_t j = 0; j < d; ++j) S(i, j) = G(idx[size_t(i)], idx[size_t(j)]);
    S(i, i) += lambda;
    b.row(i) = B.row(idx[size_t(i)]);
  }
  Eigen::LDLT<Mat> ldlt(S);
  *inv = ldlt.solve(Mat::Identity(d, d));
  *beta = *inv * b;
}

// ||Y - A beta||^2 from the normal equations: Y^T Y - 2 tr(beta^T b) + tr(beta^T S beta).
double residual(double yty, const Mat& G, const Mat& B, const std::vector<int64_t>& idx, const Mat& beta) {
  const int64_t d = int64_t(idx.size());
  Mat S(d, d), b(d, B.cols());
  for (int64_t i = 0; i < d; ++i) {
    for (int64_t j = 0; j < d; ++j) S(i, j) = G(idx[size_t(i)], idx[size_t(j)]);
    b.row(i) = B.row(idx[size_t(i)]);
  }
  return std::max(0.0, yty - 2 * (beta.transpose() * b).trace() + (beta.transpose() * S * beta).trace());
}

}  // namespace

namespace {

// One consumer's least-squares problem in normal-equation form: A = [X, 1], G = A^T A,
// B = A^T Y.
struct System {
  Mat G, B;
  double yty = 0, lambda = 0;
  int64_t cols = 0, group = 1;
  bool intercept = true;

  System(const std::vector<float>& X, const std::vector<float>& Y, int64_t rows, int64_t channels, int64_t grp,
         int64_t outputs, bool icpt, double ridge)
      : cols(channels * grp), group(grp), intercept(icpt) {
    const int64_t d = cols + (intercept ? 1 : 0);
    Mat A(rows, d), Yt(rows, outputs);
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t k = 0; k < cols; ++k) A(r, k) = X[size_t(r * cols + k)];
      if (intercept) A(r, cols) = 1.0;
      for (int64_t o = 0; o < outputs; ++o) Yt(r, o) = Y[size_t(r * outputs + o)];
    }
    yty = std::max(Yt.squaredNorm(), std::numeric_limits<double>::min());
    G = A.transpose() * A;
    B = A.transpose() * Yt;
    lambda = ridge * std::max(1e-30, G.diagonal().head(cols).mean());
  }

  std::vector<int64_t> columns(const std::vector<int64_t>& chans) const {
    std::vector<int64_t> idx;
    for (int64_t c : chans)
      for (int64_t k = 0; k < group; ++k) idx.push_back(c * group + k);
    if (intercept) idx.push_back(cols);
    return idx;
  }

  // Per active channel: the rise of the residual when it is removed, relative to ||Y||^2.
  // Removing group g from the least-squares fit raises the residual by
  // tr(beta_g^T (inv_gg)^-1 beta_g) (the block form of the partial F statistic).
  std::vector<double> removal_costs(const std::vector<int64_t>& active) const {
    Mat beta, inv;
    solve(G, B, columns(active), lambda, &beta, &inv);
    std::vector<double> cost(active.size());
    for (size_t i = 0; i < active.size(); ++i) {
      const int64_t off = int64_t(i) * group;
      Mat bg = beta.middleRows(off, group);
      Mat ig = inv.block(off, off, group, group);
      cost[i] = (bg.transpose() * ig.ldlt().solve(bg)).trace() / yty;
    }
    return cost;
  }
};

std::vector<int64_t> eliminate(const std::vector<const System*>& systems, int64_t channels, int64_t remove) {
  std::vector<int64_t> active(static_cast<size_t>(channels));
  for (int64_t c = 0; c < channels; ++c) active[size_t(c)] = c;
  for (int64_t step = 0; step < remove && active.size() > 1; ++step) {
    std::vector<double> total(active.size(), 0.0);
    for (const System* s : systems) {
      std::vector<double> c = s->removal_costs(active);
      for (size_t i = 0; i < c.size(); ++i) total[i] += c[i];
    }
    active.erase(active.begin() + (std::min_element(total.begin(), total.end()) - total.begin()));
  }
  return active;
}

}  // namespace

std::vector<int64_t> select_joint(const std::vector<LsProblem>& problems, int64_t channels, int64_t remove,
                                  double ridge) {
  std::vector<System> systems;
  systems.reserve(problems.size());
  for (const auto& p : problems)
    systems.emplace_back(*p.X, *p.Y, p.rows, channels, p.group, p.outputs, p.intercept, ridge);
  std::vector<const System*> ptrs;
  for (const auto& s : systems) ptrs.push_back(&s);
  return eliminate(ptrs, channels, remove);
}

FitResult select_and_refit(const std::vector<float>& X, const std::vector<float>& Y, const std::vector<float>& W,
                           int64_t rows, int64_t channels, int64_t group, int64_t outputs, const FitOptions& opt) {
  const int64_t cols = channels * group;
  const System sys(X, Y, rows, channels, group, outputs, opt.intercept, opt.ridge);
  FitResult res;
  {  // ||Y - X W^T||^2 with every channel as it is
    double e = 0;
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t o = 0; o < outputs; ++o) {
        double s = Y[size_t(r * outputs + o)];
        for (int64_t k = 0; k < cols; ++k) s -= double(X[size_t(r * cols + k)]) * W[size_t(o * cols + k)];
        e += s * s;
      }
    res.rel_err_before = e / sys.yty;
  }
  const std::vector<int64_t> active = eliminate({&sys}, channels, opt.remove);
  res.keep = active;
  const int64_t kc = int64_t(active.size()) * group;
  res.weight.assign(size_t(outputs * kc), 0.f);
  res.bias_delta.assign(size_t(outputs), 0.f);
  std::vector<int64_t> idx = sys.columns(active);
  if (opt.refit) {
    Mat beta, inv;
    solve(sys.G, sys.B, idx, sys.lambda, &beta, &inv);
    for (int64_t o = 0; o < outputs; ++o) {
      for (int64_t k = 0; k < kc; ++k) res.weight[size_t(o * kc + k)] = float(beta(k, o));
      if (opt.intercept) res.bias_delta[size_t(o)] = float(beta(kc, o));
    }
    res.rel_err_after = residual(sys.yty, sys.G, sys.B, idx, beta) / sys.yty;
  } else {
    Mat beta = Mat::Zero(int64_t(idx.size()), outputs);
    for (int64_t o = 0; o < outputs; ++o)
      for (size_t i = 0; i < active.size(); ++i)
        for (int64_t k = 0; k < group; ++k) {
          float v = W[size_t(o * cols + active[i] * group + k)];
          res.weight[size_t(o * kc + int64_t(i) * group + k)] = v;
          beta(int64_t(i) * group + k, o) = v;
        }
    res.rel_err_after = residual(sys.yty, sys.G, sys.B, idx, beta) / sys.yty;
  }
  return res;
}

std::vector<Position> sample_positions(const ir::Node& consumer, const Value& x, int64_t kh, int64_t kw,
                                       int64_t rows_wanted, std::mt19937_64& rng) {
  std::vector<Position> pos;
  const int64_t n = x.shape.empty() ? 0 : x.shape[0];
  if (consumer.op != "Conv") {
    for (int64_t i = 0; i < n; ++i) pos.push_back({i, 0, 0});
    return pos;
  }
  ConvGeom g = geometry(consumer, x, kh, kw);
  const int64_t per = std::max<int64_t>(1, std::min(g.ho * g.wo, (rows_wanted + n - 1) / std::max<int64_t>(1, n)));
  for (int64_t i = 0; i < n; ++i)
    for (int64_t k = 0; k < per; ++k) {
      int64_t p = int64_t(rng() % uint64_t(g.ho * g.wo));
      pos.push_back({i, p / g.wo, p % g.wo});
    }
  return pos;
}

std::vector<float> input_rows(const ir::Node& consumer, const Value& x, int64_t kh, int64_t kw,
                              const std::vector<Position>& pos, int64_t* rows) {
  *rows = int64_t(pos.size());
  if (consumer.op != "Conv") {  // [n, features]: the rows themselves
    const int64_t f = x.size() / std::max<int64_t>(1, x.shape[0]);
    std::vector<float> r(pos.size() * size_t(f));
    for (size_t i = 0; i < pos.size(); ++i)
      std::copy(x.data.begin() + pos[i][0] * f, x.data.begin() + (pos[i][0] + 1) * f, r.begin() + long(i) * f);
    return r;
  }
  ConvGeom g = geometry(consumer, x, kh, kw);
  const int64_t c = x.shape[1], h = x.shape[2], w = x.shape[3], cols = c * kh * kw;
  std::vector<float> r(pos.size() * size_t(cols), 0.f);
  for (size_t i = 0; i < pos.size(); ++i) {
    float* row = &r[i * size_t(cols)];
    const float* img = &x.data[size_t(pos[i][0] * c * h * w)];
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t ky = 0; ky < kh; ++ky) {
        const int64_t iy = pos[i][1] * g.sh - g.pt + ky * g.dh;
        if (iy < 0 || iy >= h) continue;
        for (int64_t kx = 0; kx < kw; ++kx) {
          const int64_t ix = pos[i][2] * g.sw - g.pl + kx * g.dw;
          if (ix >= 0 && ix < w) row[(ch * kh + ky) * kw + kx] = img[(ch * h + iy) * w + ix];
        }
      }
  }
  return r;
}

}  // namespace channels
}  // namespace compress
}  // namespace minnow
