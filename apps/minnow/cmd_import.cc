// minnow import: a foreign model (ONNX, Caffe ...) to a .minnow file, through a frontend.
#include "common.h"
#include "ssd_priors.h"

#include <cstdio>

namespace minnow {
namespace cli {

void register_import_command(CLI::App& app, GlobalOptions& g) {
  auto* cmd = app.add_subcommand("import", "Convert a model (ONNX, Caffe ...) to a .minnow file");
  static std::string in, out;
  static std::vector<std::string> opts;
  cmd->add_option("model", in, "Model to import")->required();
  cmd->add_option("-o,--output", out, "Output .minnow file")->required();
  cmd->add_option("--opt", opts, "Frontend option KEY=VALUE (repeatable)");
  static std::string weights;
  cmd->add_option("--weights", weights, "Weights file for formats that keep them apart (Caffe: the .caffemodel)");
  static std::string ssd_priors;
  static SsdPriorsOptions ssd;
  cmd->add_option("--ssd-priors", ssd_priors, "Append SSD PriorBox + DetectionOutput from this prior configuration (priorbox.json; README: SSD walkthrough)")->check(CLI::ExistingFile);
  cmd->add_option("--ssd-loc", ssd.loc, "With --ssd-priors: the output holding box offsets")->capture_default_str();
  cmd->add_option("--ssd-conf", ssd.conf, "With --ssd-priors: the output holding class logits")->capture_default_str();
  cmd->callback([&g] {
    auto engine = make_engine(g);
    std::vector<std::pair<std::string, std::string>> kv;
    for (const auto& o : opts) {
      auto eq = o.find('=');
      if (eq == std::string::npos) throw CliError("--opt expects KEY=VALUE, got '" + o + "'");
      kv.emplace_back(o.substr(0, eq), o.substr(eq + 1));
    }
    if (!weights.empty()) kv.emplace_back("weights", weights);
    auto bytes = check(engine->import_model(in, kv));
    if (!ssd_priors.empty()) bytes = check(append_ssd_postprocess(bytes, ssd_priors, ssd));
    // Verify what we are about to write loads, then write atomically.
    auto model = check(Model::load_memory(bytes.data(), bytes.size(), in));
    check(write_file_atomic(out, bytes.data(), bytes.size()));
    std::printf("imported %s -> %s: %zu nodes, %s\n", in.c_str(), out.c_str(), model->graph().nodes.size(),
                human_bytes(static_cast<double>(bytes.size())).c_str());
  });
}

}  // namespace cli
}  // namespace minnow
