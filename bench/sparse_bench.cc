// Sparse vs dense, same process, same inputs: per-layer speed-ups by block shape and
// sparsity (the numbers behind backends/cpu_sparse/thresholds.cc), and whole models.
//
//   sparse_bench [--runs N] [--fit] [--quick] [--models-only] [--model-dir DIR]
//                [--mobilenet-v2 FILE] [--model FILE]... [--profile] [--only LAYER]
//   --model FILE: a model pruned elsewhere (minnow compress), timed as it is with and
//   without cpu_sparse.
//   --no-avx512: both backends dispatch as on an AVX2 machine (Highway's AVX-512 targets
//   disabled in the process), to time the AVX2 kernels on an AVX-512 one.
// --mobilenet-v2: the torchvision MobileNetV2 exported by bench/export_models.py (.onnx or
// .minnow); its 1x1 convolutions are pruned to 90 % by magnitude, the rest stays dense.
// A missing file is skipped with a message.
//
// Per layer: the dense time is cpu_dense (forced) on the same model; the sparse time is
// cpu_sparse (forced, MINNOW_CPU_SPARSE_BLOCK picks the block shape and lifts the
// break-even so every point can be timed). 1 thread; dense and sparse are timed in
// alternating samples of many runs (time_pair), median of --runs samples each.
// --fit prints, per kernel kind and block shape, the least-squares line
// t_sparse/t_dense = r0 + slope * density, as the C++ table thresholds.cc holds.
#include <minnow/minnow.h>

#include "prune.h"

#include <hwy/targets.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

using namespace minnow;
using minnow::cpu_sparse::BlockShape;

namespace {

int g_runs = 15;
bool g_profile = false;
std::string g_only;  // --only SUBSTR: the layers whose name contains it  // --profile: per op / backend / kernel time of the model runs

Tensor random_tensor(Shape shape, uint64_t seed) {
  Tensor t(DataType::kFloat32, std::move(shape));
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> d(-1.f, 1.f);
  for (int64_t i = 0; i < t.elements(); ++i) t.data<float>()[i] = d(rng);
  return t;
}

template <class T>
T check(Result<T> r, const char* what) {
  if (!r.is_ok()) {
    std::fprintf(stderr, "sparse_bench: %s: %s\n", what, r.status().message().c_str());
    std::exit(1);
  }
  return std::move(r).value();
}

// A session of `model` prepared under `policy`, 1 thread, inputs set; `kernels` gets the
// sparse kernels it chose ("name" x count).
std::unique_ptr<Session> ready_session(const std::shared_ptr<Engine>& engine, std::shared_ptr<const Model> model,
                                       const BackendPolicy& policy, const std::vector<Tensor>& inputs,
                                       std::string* kernels = nullptr) {
  auto pm = check(engine->prepare(model, policy), "prepare");
  if (kernels) {
    std::map<std::string, int> count;
    for (const auto& c : pm->choices())
      if (c.backend == "cpu_sparse") count[c.kernel]++;
    kernels->clear();
    for (auto& kv : count) *kernels += (kernels->empty() ? "" : " ") + kv.first + "x" + std::to_string(kv.second);
  }
  SessionOptions o;
  o.threads = 1;
  o.profile = g_profile && kernels;
  auto s = check(Session::create(pm, o), "session");
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Status st = s->set_input(i, inputs[i]);
    if (!st.is_ok()) {
      std::fprintf(stderr, "sparse_bench: input: %s\n", st.message().c_str());
      std::exit(1);
    }
  }
  return s;
}

// One sample: `k` runs back to back, ms per run.
double sample_ms(Session& s, int k) {
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < k; ++i) {
    const Status st = s.run();
    if (!st.is_ok()) {
      std::fprintf(stderr, "sparse_bench: run: %s\n", st.message().c_str());
      std::exit(1);
    }
  }
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() / k;
}

void print_profile(const Session& s) {
  std::map<std::string, double> by;
  for (const auto& p : s.profile()) by[p.op + " " + p.backend + " " + p.kernel] += p.ms;
  for (auto& kv : by) std::printf("    %-60s %8.3f ms\n", kv.first.c_str(), kv.second);
}

// Median ms per run of two sessions over g_runs samples each, taken alternately (A B B A
// ...), so that a burst of load on this shared machine falls on both sides alike. A sample
// is as many runs as make it last about 0.2 ms: a layer of a few microseconds is then not
// timed one call at a time, where one preemption or cache miss decides the sample.
std::pair<double, double> time_pair(Session& a, Session& b) {
  for (int w = 0; w < 2; ++w) sample_ms(a, 1), sample_ms(b, 1);  // warm-up
  const double one = std::max(sample_ms(a, 1), sample_ms(b, 1));
  const int k = std::max(1, std::min(1000, int(0.2 / std::max(one, 1e-6))));
  std::vector<double> ta, tb;
  for (int r = 0; r < g_runs; ++r) {
    if (r % 2 == 0) {
      ta.push_back(sample_ms(a, k));
      tb.push_back(sample_ms(b, k));
    } else {
      tb.push_back(sample_ms(b, k));
      ta.push_back(sample_ms(a, k));
    }
  }
  auto median = [](std::vector<double>& v) {
    std::nth_element(v.begin(), v.begin() + long(v.size() / 2), v.end());
    return v[v.size() / 2];
  };
  return {median(ta), median(tb)};
}

BackendPolicy force(const char* b) {
  BackendPolicy p;
  p.force = b;
  return p;
}

struct Layer {
  std::string name, kind;  // kind: fc / conv1x1 / conv_im2col (thresholds.h)
  std::vector<int64_t> wshape;  // W: [N, K] for fc, [M, C, kh, kw] for conv
  Shape in;
  std::vector<Attr> attrs;
};

std::shared_ptr<const Model> layer_model(const Layer& l, const Tensor& w) {
  ModelBuilder mb(l.name);
  mb.add_input("x", DataType::kFloat32, l.in);
  mb.add_constant("w", w);
  mb.add_constant("b", random_tensor({l.wshape[0]}, 99));
  if (l.kind == "fc")
    mb.add_node("Gemm", {"x", "w", "b"}, {"y"}, {Attr::Int("transB", 1)});
  else
    mb.add_node("Conv", {"x", "w", "b"}, {"y"}, l.attrs);
  mb.add_output("y");
  return check(mb.build(), "build layer");
}

struct Point {
  std::string kind, shape, layer;
  double density, ratio;  // ratio = t_sparse / t_dense
};

void bench_layers(const std::shared_ptr<Engine>& engine, bool quick, std::vector<Point>* pts) {
  std::vector<Layer> layers = {
      {"mbv2_1x1_56x56x24-144", "conv1x1", {144, 24, 1, 1}, {1, 24, 56, 56}, {}},
      {"mbv2_1x1_28x28x32-192", "conv1x1", {192, 32, 1, 1}, {1, 32, 28, 28}, {}},
      {"mbv2_1x1_14x14x64-384", "conv1x1", {384, 64, 1, 1}, {1, 64, 14, 14}, {}},
      {"mbv2_1x1_7x7x160-960", "conv1x1", {960, 160, 1, 1}, {1, 160, 7, 7}, {}},
      {"conv3x3_28x28x32-32", "conv_im2col", {32, 32, 3, 3}, {1, 32, 28, 28}, {Attr::Ints("pads", {1, 1, 1, 1})}},
      {"mlp_fc_784-300", "fc", {300, 784}, {1, 784}, {}},
      {"mlp_fc_300-100", "fc", {100, 300}, {1, 300}, {}},
      {"lstm_fc_gates_512x128", "fc", {512, 128}, {1, 128}, {}},
  };
  const std::vector<double> sps = quick ? std::vector<double>{0.5, 0.7, 0.9}
                                        : std::vector<double>{0.3, 0.5, 0.7, 0.8, 0.9, 0.95};
  const BlockShape shapes[] = {{1, 1}, {1, 4}, {4, 1}, {1, 8}};
  std::printf("| layer | block | sparsity | dense us | sparse us | dense/sparse |\n|---|---|---|---|---|---|\n");
  for (const Layer& l : layers) {
    if (l.name.find(g_only) == std::string::npos) continue;
    const Tensor x = random_tensor(l.in, 7);
    const Tensor w0 = random_tensor(Shape(l.wshape.begin(), l.wshape.end()), 3);
    auto dense = ready_session(engine, layer_model(l, w0), force("cpu_dense"), {x});
    // Half a second of dense runs first: without it the first rows of a layer timed the
    // dense side up to 1.5x slower than the later rows (the core ramping up its clock, or
    // caches and TLB settling), which biased the first block shape's ratios.
    for (auto t0 = std::chrono::steady_clock::now();
         std::chrono::steady_clock::now() - t0 < std::chrono::milliseconds(500);)
      sample_ms(*dense, 10);
    for (BlockShape s : shapes) {
      if (!minnow::cpu_sparse::shape_fits(s, l.wshape[0], w0.elements() / l.wshape[0])) continue;
      setenv("MINNOW_CPU_SPARSE_BLOCK", s.str().c_str(), 1);
      for (double sp : sps) {
        Tensor w = w0.clone();
        const int64_t rows = l.wshape[0], cols = w.elements() / rows;
        minnow::cpu_sparse::prune_blocks(w.data<float>(), rows, cols, s, sp);
        auto sparse = ready_session(engine, layer_model(l, w), force("cpu_sparse"), {x});
        const auto [dense_ms, sparse_ms] = time_pair(*dense, *sparse);
        std::printf("| %s | %s | %.0f%% | %.2f | %.2f | %.2fx |\n", l.name.c_str(), s.str().c_str(),
                    100 * sp, 1e3 * dense_ms, 1e3 * sparse_ms, dense_ms / sparse_ms);
        std::fflush(stdout);
        pts->push_back({l.kind, s.str(), l.name, 1.0 - sp, sparse_ms / dense_ms});
      }
    }
    unsetenv("MINNOW_CPU_SPARSE_BLOCK");
  }
}

// Where one layer's measured ratio crosses 1 (sparse as fast as dense), interpolated
// between the sparsities measured on either side: the sparsity of the first point that
// wins when even the lowest one wins, 1 when none does.
double measured_break_even(std::vector<Point> pts) {
  std::sort(pts.begin(), pts.end(), [](const Point& a, const Point& b) { return a.density > b.density; });
  for (size_t i = 0; i < pts.size(); ++i) {
    if (pts[i].ratio > 1.0) continue;
    if (i == 0) return 1.0 - pts[0].density;
    const Point &a = pts[i - 1], &b = pts[i];  // a loses, b wins
    const double f = (a.ratio - 1.0) / (a.ratio - b.ratio);
    return 1.0 - (a.density + f * (b.density - a.density));
  }
  return 1.0;
}

void print_fit(const std::vector<Point>& pts) {
  std::printf("\nFit t_sparse/t_dense = r0 + slope*density, and the highest measured break-even of\n"
              "the layers of each kind (paste into thresholds.cc):\n");
  for (const char* kind : {"fc", "conv1x1", "conv_im2col"})
    for (const char* shape : {"1x1", "1x4", "4x1", "1x8"}) {
      double n = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
      std::map<std::string, std::vector<Point>> by_layer;
      for (const Point& p : pts)
        if (p.kind == kind && p.shape == shape) {
          n += 1; sx += p.density; sy += p.ratio; sxx += p.density * p.density; sxy += p.density * p.ratio;
          by_layer[p.layer].push_back(p);
        }
      if (n < 2) continue;
      const double slope = (n * sxy - sx * sy) / (n * sxx - sx * sx), r0 = (sy - slope * sx) / n;
      double worst = 0;
      std::string per_layer;
      for (const auto& kv : by_layer) {
        const double be = measured_break_even(kv.second);
        worst = std::max(worst, be);
        char b[96];
        std::snprintf(b, sizeof(b), "%s%s %.0f%%", per_layer.empty() ? "" : ", ", kv.first.c_str(), 100 * be);
        per_layer += b;
      }
      const char* k = std::strcmp(kind, "fc") == 0 ? "kFc" : std::strcmp(kind, "conv1x1") == 0 ? "kConv1x1" : "kConvIm2col";
      std::printf("    {Kind::%s, {%c, %c}, %.4f, %.4f, %.2f},  // fit break-even %.0f%%; measured: %s\n", k,
                  shape[0], shape[2], r0, slope, worst,
                  slope > 0 ? 100 * (1 - std::min(1.0, (1 - r0) / slope)) : 100.0, per_layer.c_str());
    }
}

// Prunes the constant weights (input 1) of the nodes `pick` selects to `sparsity`.
std::shared_ptr<const Model> prune_model(const Model& m, double sparsity,
                                         bool (*pick)(const ir::Node&, const ir::TensorInfo&)) {
  ir::ModelIR ir = m.ir();
  int pruned = 0;
  for (const auto& node : ir.graph.nodes) {
    if (node.inputs.size() < 2 || node.inputs[1] < 0) continue;
    ir::TensorInfo& t = ir.graph.tensors[node.inputs[1]];
    const Tensor* dense = m.constant(node.inputs[1]);
    if (!dense || dense->dtype() != DataType::kFloat32 || !pick(node, t)) continue;
    Tensor w = dense->clone();
    const int64_t rows = w.shape()[0], cols = w.elements() / rows;
    minnow::cpu_sparse::prune_blocks(w.data<float>(), rows, cols, {1, 1}, sparsity);
    ir.buffers.push_back(ir::Blob::copy_of(w.data<float>(), static_cast<size_t>(w.elements()) * 4));
    ir::DenseStage ds;
    ds.buffer = static_cast<uint32_t>(ir.buffers.size() - 1);
    t.encodings = {ds};
    ++pruned;
  }
  std::printf("  (%d weight tensors pruned to %.0f%%)\n", pruned, 100 * sparsity);
  return check(Model::from_ir(std::move(ir), m.origin()), "pruned model");
}

// pick == nullptr: the model is used as it is (already pruned, e.g. by minnow compress).
void bench_model(const std::shared_ptr<Engine>& engine, const std::string& path, const char* label,
                 bool (*pick)(const ir::Node&, const ir::TensorInfo&)) {
  auto loaded = engine->load_model(path);
  if (!loaded.is_ok()) {
    std::printf("%s: skipped (%s)\n", label, loaded.status().message().c_str());
    return;
  }
  std::printf("%s (%s):\n", label, path.c_str());
  auto model = pick ? prune_model(*loaded.value(), 0.9, pick) : loaded.value();
  const auto& in = model->graph().tensors[model->graph().inputs[0]];
  Shape shape = in.static_shape();
  for (auto& d : shape) if (d < 0) d = 1;
  const Tensor x = random_tensor(shape, 5);
  if (auto pm = engine->prepare(model); !pm.is_ok()) {
    std::printf("%s: skipped (%s)\n", label, pm.status().message().c_str());
    return;
  }
  BackendPolicy no_sparse;
  no_sparse.forbid = {"cpu_sparse"};
  std::string kernels;
  std::string dense_kernels;
  auto dense = ready_session(engine, model, no_sparse, {x}, &dense_kernels);
  auto sparse = ready_session(engine, model, {}, {x}, &kernels);
  const auto [dense_ms, sparse_ms] = time_pair(*dense, *sparse);
  if (g_profile) {
    std::printf("  dense:\n");
    print_profile(*dense);
    std::printf("  sparse:\n");
    print_profile(*sparse);
  }
  std::printf("| %s%s | %.4f ms | %.4f ms | %.2fx | %s |\n", label, pick ? ", 90% pruned" : "", dense_ms,
              sparse_ms, dense_ms / sparse_ms, kernels.c_str());
}

bool pick_fc(const ir::Node& n, const ir::TensorInfo&) { return n.op == "Gemm" || n.op == "MatMul"; }
bool pick_1x1(const ir::Node& n, const ir::TensorInfo& t) {
  auto s = t.static_shape();
  return n.op == "Conv" && s.size() == 4 && s[2] == 1 && s[3] == 1;
}

}  // namespace

int main(int argc, char** argv) {
  bool fit = false, quick = false, layers = true;
  std::string model_dir, mobilenet_v2;
  std::vector<std::string> pruned;  // --model FILE: run as given, with and without cpu_sparse
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--runs") && i + 1 < argc) g_runs = std::max(1, std::atoi(argv[++i]));
    else if (!std::strcmp(argv[i], "--fit")) fit = true;
    else if (!std::strcmp(argv[i], "--quick")) quick = true;
    else if (!std::strcmp(argv[i], "--models-only")) layers = false;
    else if (!std::strcmp(argv[i], "--profile")) g_profile = true;
    else if (!std::strcmp(argv[i], "--only") && i + 1 < argc) g_only = argv[++i];
    else if (!std::strcmp(argv[i], "--model-dir") && i + 1 < argc) model_dir = argv[++i];
    else if (!std::strcmp(argv[i], "--mobilenet-v2") && i + 1 < argc) mobilenet_v2 = argv[++i];
    else if (!std::strcmp(argv[i], "--model") && i + 1 < argc) pruned.push_back(argv[++i]);
    else if (!std::strcmp(argv[i], "--no-avx512")) hwy::DisableTargets(HWY_AVX3 | HWY_AVX3_DL);
    else {
      std::fprintf(stderr, "usage: sparse_bench [--runs N] [--fit] [--quick] [--models-only] [--model-dir DIR] "
                           "[--mobilenet-v2 FILE] [--model FILE]... [--profile] [--only LAYER] [--no-avx512]\n");
      return 2;
    }
  }
  auto engine = check(Engine::create(), "engine");
  std::vector<Point> pts;
  if (layers) {
    bench_layers(engine, quick, &pts);
    if (fit) print_fit(pts);
  }
  if (!model_dir.empty() || !mobilenet_v2.empty() || !pruned.empty())
    std::printf("\n| model | dense | sparse | dense/sparse | sparse kernels |\n|---|---|---|---|---|\n");
  if (!model_dir.empty()) {
    bench_model(engine, model_dir + "/mlp/mlp.onnx", "mlp", pick_fc);
    bench_model(engine, model_dir + "/lstm/lstm.onnx", "lstm", pick_fc);
    bench_model(engine, model_dir + "/mobilenet/mobilenet.onnx", "mobilenet (1x1 convs)", pick_1x1);
  }
  for (const std::string& p : pruned) bench_model(engine, p, p.c_str(), nullptr);
  if (!mobilenet_v2.empty()) {
    if (FILE* f = std::fopen(mobilenet_v2.c_str(), "rb")) {
      std::fclose(f);
      bench_model(engine, mobilenet_v2, "mobilenet_v2 (1x1 convs)", pick_1x1);
    } else {
      std::printf("mobilenet_v2: skipped (%s not found; bench/export_models.py exports it)\n",
                  mobilenet_v2.c_str());
    }
  }
  return 0;
}
