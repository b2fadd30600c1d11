// minnow run: one inference; prints the outputs (or saves them).
#include "common.h"

#include "tensor_io.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>

namespace minnow {
namespace cli {

namespace {

double value_at(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case DataType::kFloat32: return t.data<float>()[i];
    case DataType::kFloat64: return t.data<double>()[i];
    case DataType::kInt64: return double(t.data<int64_t>()[i]);
    case DataType::kInt32: return t.data<int32_t>()[i];
    case DataType::kInt8: return t.data<int8_t>()[i];
    case DataType::kBool: case DataType::kUInt8: return t.data<uint8_t>()[i];
    default: return NAN;
  }
}

// Classifier-like: [N, C] or [N, C, 1, 1 ...] with C > 1.
int64_t classes_of(const Tensor& t) {
  const Shape& s = t.shape();
  if (t.dtype() != DataType::kFloat32 || s.size() < 2 || s[1] <= 1) return 0;
  for (size_t d = 2; d < s.size(); ++d)
    if (s[d] != 1) return 0;
  return s[1];
}

// Top k (class, score) of row r, best first.
std::vector<std::pair<int64_t, float>> top_k(const Tensor& t, int64_t classes, int64_t r, int k) {
  std::vector<std::pair<int64_t, float>> v;
  const float* row = t.data<float>() + r * classes;
  for (int64_t c = 0; c < classes; ++c) v.emplace_back(c, row[c]);
  k = int(std::min<int64_t>(k, classes));
  std::partial_sort(v.begin(), v.begin() + k, v.end(), [](auto& a, auto& b) { return a.second > b.second || (a.second == b.second && a.first < b.first); });
  v.resize(size_t(k));
  return v;
}

void print_tensor(const std::string& name, const Tensor& t, size_t max_values, int k) {
  std::printf("%s %s %s\n  ", name.c_str(), dtype_name(t.dtype()), shape_to_string(t.shape()).c_str());
  int64_t n = t.elements();
  for (int64_t i = 0; i < n && size_t(i) < max_values; ++i) std::printf("%.6g ", value_at(t, i));
  if (size_t(n) > max_values) std::printf("... (%lld values)", static_cast<long long>(n));
  std::printf("\n");
  if (int64_t classes = classes_of(t)) {
    for (int64_t r = 0; r < t.shape()[0] && r < 16; ++r) {
      auto top = top_k(t, classes, r, std::max(k, 1));
      std::printf("  row %lld: argmax %lld (%.6g)", static_cast<long long>(r), static_cast<long long>(top[0].first), top[0].second);
      if (k > 1) {
        std::printf("; top-%d:", k);
        for (auto& p : top) std::printf(" %lld (%.4g)", static_cast<long long>(p.first), p.second);
      }
      std::printf("\n");
    }
  }
}

void print_json(const std::vector<std::string>& names, const std::vector<Tensor>& outs, size_t max_values, int k) {
  std::printf("{\"outputs\": [");
  for (size_t i = 0; i < outs.size(); ++i) {
    const Tensor& t = outs[i];
    std::printf("%s{\"name\": \"%s\", \"dtype\": \"%s\", \"shape\": [", i ? ", " : "", json_escape(names[i]).c_str(), dtype_name(t.dtype()));
    for (size_t d = 0; d < t.shape().size(); ++d) std::printf("%s%lld", d ? ", " : "", static_cast<long long>(t.shape()[d]));
    std::printf("], \"values\": [");
    for (int64_t e = 0; e < t.elements() && size_t(e) < max_values; ++e) {
      double v = value_at(t, e);
      std::printf(std::isfinite(v) ? "%s%.9g" : "%snull", e ? ", " : "", v);
    }
    std::printf("]");
    if (int64_t classes = classes_of(t)) {
      std::printf(", \"top_k\": [");
      for (int64_t r = 0; r < t.shape()[0]; ++r) {
        auto top = top_k(t, classes, r, std::max(k, 1));
        std::printf("%s[", r ? ", " : "");
        for (size_t j = 0; j < top.size(); ++j) std::printf("%s[%lld, %.9g]", j ? ", " : "", static_cast<long long>(top[j].first), top[j].second);
        std::printf("]");
      }
      std::printf("]");
    }
    std::printf("}");
  }
  std::printf("]}\n");
}

}  // namespace

void register_run_command(CLI::App& app, GlobalOptions& g) {
  auto* cmd = app.add_subcommand("run", "Run a model once and print (or save) its outputs");
  static std::string path, out_dir;
  static InputSpec spec;
  static int threads = 1;
  static size_t max_values = 20;
  static std::string backend;
  static int k = 1;
  static bool json = false;
  cmd->add_option("model", path, "Model file (.minnow, or any format a frontend reads)")->required();
  add_input_options(cmd, &spec);
  static ImportSpec import_spec;
  add_import_options(cmd, &import_spec);
  cmd->add_option("-t,--threads", threads, "Threads")->capture_default_str()->check(CLI::Range(1, 1024));
  cmd->add_option("-o,--output-dir", out_dir, "Save each output as <name>.npy in this folder");
  cmd->add_option("--max-values", max_values, "Values printed per output")->capture_default_str();
  cmd->add_option("--backend", backend, "Use only this backend");
  cmd->add_option("-k,--top-k", k, "Classifier outputs: show the k best classes")->capture_default_str()->check(CLI::Range(1, 1000));
  cmd->add_flag("--json", json, "Print the outputs as JSON");
  cmd->callback([&g] {
    if (!out_dir.empty()) {
      std::error_code ec;
      std::filesystem::create_directories(out_dir, ec);
      if (ec) throw CliError("cannot create output folder '" + out_dir + "': " + ec.message());
    }
    auto engine = make_engine(g);
    auto model = check(engine->load_model(path, import_options(import_spec)));
    auto inputs = load_inputs(*model, spec);
    BackendPolicy policy;
    policy.force = backend;
    auto pm = check(engine->prepare(model, policy));
    SessionOptions so;
    so.threads = threads;
    auto session = check(Session::create(pm, so));
    auto outputs = check(session->run(inputs));
    for (size_t i = 0; i < outputs.size(); ++i) {
      std::string name = session->output_name(i);
      if (!json) print_tensor(name, outputs[i], max_values, k);
      if (!out_dir.empty()) save_output_npy(out_dir, name, outputs[i]);
    }
    if (json) {
      std::vector<std::string> names;
      for (size_t i = 0; i < outputs.size(); ++i) names.push_back(session->output_name(i));
      print_json(names, outputs, max_values, k);
    }
  });
}

}  // namespace cli
}  // namespace minnow
