// minnow run: one inference; prints the outputs (or saves them).
#include "common.h"

#include "tensor_io.h"

#include <cmath>
#include <cstdio>

namespace minnow {
namespace cli {

namespace {

void print_tensor(const std::string& name, const Tensor& t, size_t max_values) {
  std::printf("%s %s %s\n", name.c_str(), dtype_name(t.dtype()), shape_to_string(t.shape()).c_str());
  int64_t n = t.elements();
  std::printf("  ");
  for (int64_t i = 0; i < n && size_t(i) < max_values; ++i) {
    switch (t.dtype()) {
      case DataType::kFloat32: std::printf("%.6g ", t.data<float>()[i]); break;
      case DataType::kInt64: std::printf("%lld ", static_cast<long long>(t.data<int64_t>()[i])); break;
      case DataType::kInt32: std::printf("%d ", t.data<int32_t>()[i]); break;
      case DataType::kBool: case DataType::kUInt8: std::printf("%u ", t.data<uint8_t>()[i]); break;
      default: std::printf("? ");
    }
  }
  if (size_t(n) > max_values) std::printf("... (%lld values)", static_cast<long long>(n));
  std::printf("\n");
  // Class scores: show the top class per row.
  if (t.dtype() == DataType::kFloat32 && t.shape().size() == 2 && t.shape()[1] > 1) {
    for (int64_t r = 0; r < t.shape()[0] && r < 16; ++r) {
      const float* row = t.data<float>() + r * t.shape()[1];
      int64_t best = 0;
      for (int64_t c = 1; c < t.shape()[1]; ++c)
        if (row[c] > row[best]) best = c;
      std::printf("  row %lld: argmax %lld (%.6g)\n", static_cast<long long>(r), static_cast<long long>(best), row[best]);
    }
  }
}

}  // namespace

void register_run_command(CLI::App& app, GlobalOptions& g) {
  auto* cmd = app.add_subcommand("run", "Run a model once and print (or save) its outputs");
  static std::string path, out_dir;
  static InputSpec spec;
  static int threads = 1;
  static size_t max_values = 20;
  static std::string backend;
  cmd->add_option("model", path, "Model file (.minnow, or any format a frontend reads)")->required();
  add_input_options(cmd, &spec);
  static ImportSpec import_spec;
  add_import_options(cmd, &import_spec);
  cmd->add_option("-t,--threads", threads, "Threads")->capture_default_str()->check(CLI::Range(1, 1024));
  cmd->add_option("-o,--output-dir", out_dir, "Save each output as <name>.npy in this folder");
  cmd->add_option("--max-values", max_values, "Values printed per output")->capture_default_str();
  cmd->add_option("--backend", backend, "Use only this backend");
  cmd->callback([&g] {
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
      print_tensor(name, outputs[i], max_values);
      if (!out_dir.empty()) {
        std::string safe;
        for (char c : name) safe += (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.') ? c : '_';
        auto bytes = write_npy(outputs[i]);
        check(write_file_atomic(out_dir + "/" + safe + ".npy", bytes.data(), bytes.size()));
      }
    }
  });
}

}  // namespace cli
}  // namespace minnow
