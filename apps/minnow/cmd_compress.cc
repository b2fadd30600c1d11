// minnow compress: runs a pipeline of transform plugins over a model and reports size
// (and accuracy, with eval data) per step, a per-layer table and the totals.
//
//   minnow compress IN -o OUT [--preset lossless|fast|smallest] [--sparse-format csr|1x4|4x1|1x8|auto]
//     [--pipeline "fuse,prune:sparsity=0.9:gradual=3,distill:epochs=3,quantize:bits=4,huffman"]
//     [--calib IMAGES] [--train-images IDX [--train-labels IDX]] [--shape NxCxHxW]
//     [--mean M --std S] [--eval-images IDX --eval-labels IDX] [--seed S] [--opt k=v] [--json]
//
// A pipeline step is NAME[:VALUE][:KEY=VALUE]...; a bare VALUE is the step's main option
// (prune: sparsity, quantize: bits, distill: epochs). `gradual=G` on a prune followed by
// distill runs G rounds of (prune to an increasing sparsity, distill) (Zhu & Gupta's
// cubic schedule). The input is never modified and the output is written atomically.
// Image files are idx3 (plain or gzipped) or, with --shape, raw little-endian float32
// already preprocessed (a file that starts with the idx3 magic is still read as idx, so
// raw calibration images and idx evaluation images can be given together).
#include "common.h"

#include <dataset.h>
#include <evaluate.h>
#include <flops.h>
#include <ir_util.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <unistd.h>

namespace minnow {
namespace cli {
namespace {

using KV = std::vector<std::pair<std::string, std::string>>;

struct Step {
  std::string name;
  KV options;
  std::string label;  // as shown in the report
};

const char* main_option(const std::string& t) {
  if (t == "prune") return "sparsity";
  if (t == "quantize") return "bits";
  if (t == "distill") return "epochs";
  if (t == "prune-channels") return "ratio";
  return nullptr;
}

std::vector<Step> parse_pipeline(const std::string& text) {
  std::vector<Step> steps;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item.empty()) continue;
    std::stringstream is(item);
    std::string part;
    Step s;
    std::getline(is, s.name, ':');
    while (std::getline(is, part, ':')) {
      auto eq = part.find('=');
      if (eq == std::string::npos) {
        const char* key = main_option(s.name);
        if (!key) throw CliError("pipeline step '" + item + "': '" + part + "' needs KEY=VALUE");
        s.options.emplace_back(key, part);
      } else {
        s.options.emplace_back(part.substr(0, eq), part.substr(eq + 1));
      }
    }
    s.label = item;
    steps.push_back(s);
  }
  if (steps.empty()) throw CliError("empty pipeline");
  return steps;
}

std::string take(KV& kv, const std::string& key, const std::string& def) {
  for (auto it = kv.begin(); it != kv.end(); ++it)
    if (it->first == key) {
      std::string v = it->second;
      kv.erase(it);
      return v;
    }
  return def;
}

// The presets (docs/COMPRESSION.md): one pipeline each, the same for every model.
// fast: no data. Only wide layers (fan-in >= 256) are pruned, to 50 %, since nothing
// re-trains them; 4-bit codebooks (per-channel int8 under 1,000 weights), int8 biases.
constexpr const char* kFastPipeline =
    "fuse:names=short,prune:sparsity=0.5:scope=layer:min_cols=256,quantize:bits=4:small_size=1000:bias_bits=8,huffman";
// smallest: distillation with gradual magnitude pruning inside it, each layer to its own
// sparsity chosen by measured sensitivity (KL to the teacher when that layer alone is
// pruned, on 1,024 training images), towards 94 % overall but only as far as the summed
// predicted cost stays under 0.75 (how much a model can lose is measured, not assumed),
// over the first half of 4 epochs (lr 3e-3 decaying to 1e-4); the sparsity is held where
// the student's agreement with the teacher falls below 94 %; weights whose neurons sum
// fewer than 16 inputs, i.e. depthwise filters, are not pruned: they hold few bytes and
// much accuracy. Then 3-bit codebooks (int8 under 500 weights or a fan-in under 16, int8
// biases) that one more epoch fine-tunes (centroids and int8 levels), Huffman, the compact
// layout.
constexpr const char* kSmallestPipeline =
    "fuse:names=short,distill:epochs=4:sparsity=0.94:lr=0.003:lr_end=0.0001:prune_end=0.5:min_agreement=0.94:"
    "min_cols=16:allocate=sensitivity:max_cost=0.75,quantize:bits=3:layout=dense:small_size=500:small_cols=16:bias_bits=8,"
    "distill:epochs=1:lr_end=0.0001,huffman";

// prune:gradual=G followed by distill -> G rounds of prune(s_k) + distill(epochs / G).
std::vector<Step> expand_gradual(const std::vector<Step>& in) {
  std::vector<Step> out;
  for (size_t i = 0; i < in.size(); ++i) {
    Step s = in[i];
    if (s.name != "prune") { out.push_back(s); continue; }
    int g = std::atoi(take(s.options, "gradual", "1").c_str());
    if (g <= 1 || i + 1 >= in.size() || in[i + 1].name != "distill") { out.push_back(s); continue; }
    double target = std::atof(take(s.options, "sparsity", "0.5").c_str());
    Step d = in[i + 1];
    int epochs = std::atoi(take(d.options, "epochs", "1").c_str());
    int per = std::max(1, epochs / g);
    for (int k = 1; k <= g; ++k) {
      double sk = target * (1 - std::pow(1 - double(k) / g, 3));
      Step p = s;
      p.options.emplace_back("sparsity", std::to_string(sk));
      char lab[64];
      std::snprintf(lab, sizeof lab, "prune:%.3f (%d/%d)", sk, k, g);
      p.label = lab;
      out.push_back(p);
      Step dd = d;
      dd.options.emplace_back("epochs", std::to_string(per));
      dd.label = "distill:" + std::to_string(per) + " (" + std::to_string(k) + "/" + std::to_string(g) + ")";
      out.push_back(dd);
    }
    ++i;  // the distill step was consumed
  }
  return out;
}

struct LayerRow {
  std::string name;
  int64_t params = 0;
  double sparsity = 0;
  std::string bits;
  uint64_t before = 0, after = 0;
  // Per sample; 0: not a Conv/Gemm/MatMul, or shapes unknown; before -1: no layer of the
  // input has this weight (a step renamed it, as fuse does when it folds BatchNormalization).
  int64_t flops_before = -1, flops_after = 0;
};

// Tensor shapes from the engine's shape inference, for FLOP counts (empty when it fails:
// the counts then read 0 rather than failing the compression).
compress::ShapeOf shapes_of(const Engine& engine, const Model& model) {
  auto r = engine.infer_shapes(model);
  auto shapes = std::make_shared<std::vector<InferredTensor>>(r ? r.value() : std::vector<InferredTensor>{});
  return [shapes](int t) { return t >= 0 && size_t(t) < shapes->size() ? Shape(shapes->at(size_t(t)).dims) : Shape{}; };
}

std::vector<LayerRow> layer_table(const ir::ModelIR& before, const ir::ModelIR& after, const compress::ShapeOf& shape_before,
                                  const compress::ShapeOf& shape_after) {
  std::vector<LayerRow> rows;
  for (const auto& w : compress::weight_tensors(after)) {
    LayerRow r;
    r.name = w.name;
    r.flops_after = compress::weight_flops(after, after.graph.nodes[size_t(w.node)], w.tensor, shape_after);
    for (const auto& n : before.graph.nodes)
      for (size_t k = 1; k < n.inputs.size() && k < 3; ++k)
        if (n.inputs[k] >= 0 && before.graph.tensors[size_t(n.inputs[k])].name == w.name &&
            (k == 1 || n.op == "LSTM" || n.op == "GRU" || n.op == "RNN"))
          r.flops_before = compress::weight_flops(before, n, n.inputs[k], shape_before);
    const auto& info = after.graph.tensors[size_t(w.tensor)];
    Tensor v = compress::constant_f32(after, w.tensor);
    r.params = v.elements();
    int64_t z = 0;
    for (int64_t k = 0; k < v.elements(); ++k) z += v.data<float>()[k] == 0.f;
    r.sparsity = r.params ? double(z) / double(r.params) : 0;
    r.bits = "32";
    for (const auto& st : info.encodings) {
      if (auto* c = std::get_if<ir::CodebookStage>(&st)) r.bits = std::to_string(c->bits);
      if (auto* d = std::get_if<ir::DenseStage>(&st)) if (d->element_type == DataType::kInt8) r.bits = "8";
      if (std::holds_alternative<ir::HuffmanStage>(st)) r.bits += "+H";
    }
    r.after = compress::stored_bytes(after, w.tensor);
    int bt = before.graph.find_tensor(w.name);
    r.before = bt >= 0 && before.graph.tensors[size_t(bt)].is_constant() ? compress::stored_bytes(before, bt) : uint64_t(r.params) * 4;
    rows.push_back(r);
  }
  return rows;
}

std::string fmt_acc(double a) {
  if (std::isnan(a)) return "-";
  char b[32];
  std::snprintf(b, sizeof b, "%.4f", a);
  return b;
}

}  // namespace

void register_compress_command(CLI::App& app, GlobalOptions& g) {
  auto* cmd = app.add_subcommand("compress", "Compress a model with a pipeline of transform plugins");
  static std::string in, out, preset, pipeline, train_images, train_labels, eval_images, eval_labels, raw_shape,
      calib_images;
  static std::string sparse_format;
  static std::vector<std::string> opts;
  static float mean = 0.2860f, stdv = 0.3530f;
  static uint64_t seed = 1;
  static bool json = false;
  cmd->add_option("model", in, "Model to compress (.minnow, or anything a frontend imports)")->required();
  cmd->add_option("-o,--output", out, "Output .minnow file")->required();
  cmd->add_option("--preset", preset, "lossless | fast (post-training) | smallest (needs --train-images)")
      ->check(CLI::IsMember({"lossless", "fast", "smallest"}));
  cmd->add_option("--pipeline", pipeline, "Steps, e.g. \"fuse,prune:sparsity=0.9,quantize:bits=4,huffman\"");
  cmd->add_option("--calib", calib_images,
                  "Calibration images for post-training steps (prune-channels' channel choice and re-fit; "
                  "default: --train-images)")
      ->check(CLI::ExistingFile);
  // Data files are checked up front, even when no step reads them: a mistyped path is an
  // error, not an option silently unused.
  cmd->add_option("--train-images", train_images, "Unlabeled training images for distill (idx, plain or .gz)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--train-labels", train_labels, "Their labels (adds cross-entropy to distillation)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--eval-images", eval_images, "Images for accuracy before/after (idx, plain or .gz)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--eval-labels", eval_labels, "Labels for --eval-images")->check(CLI::ExistingFile);
  cmd->add_option("--shape", raw_shape,
                  "Image files that are not idx are raw float32 of this shape, NxCxHxW (N: any; the count "
                  "comes from the file size), already preprocessed");
  cmd->add_option("--mean", mean, "Preprocessing x = (u / 255 - mean) / std")->capture_default_str();
  cmd->add_option("--std", stdv, "Preprocessing x = (u / 255 - mean) / std")->capture_default_str();
  cmd->add_option("--seed", seed, "Seed for every transform")->capture_default_str();
  cmd->add_option("--opt", opts, "Option for every step that reads it: TRANSFORM.KEY=VALUE (e.g. distill.lr=0.002)");
  cmd->add_option("--sparse-format", sparse_format,
                  "What pruning zeroes together, for prune and distill steps without their own block=: csr "
                  "(unstructured), 1x4 / 4x1 / 1x8 blocks (outputs x inputs; cpu_sparse runs them faster), or auto "
                  "(per layer, the fastest block shape that loses little more than unstructured)")
      ->check(CLI::IsMember({"csr", "1x4", "4x1", "1x8", "auto"}));
  cmd->add_flag("--json", json, "Print a JSON summary");
  cmd->callback([&g] {
    if (!pipeline.empty() && !preset.empty()) throw CliError("give --preset or --pipeline, not both");
    if (pipeline.empty()) {
      std::string p = preset.empty() ? "fast" : preset;
      if (p == "lossless") pipeline = "fuse";
      else if (p == "fast") pipeline = kFastPipeline;
      else pipeline = kSmallestPipeline;
    }
    std::vector<Step> steps = expand_gradual(parse_pipeline(pipeline));
    bool needs_train = false;
    for (const auto& s : steps) needs_train = needs_train || s.name == "distill";
    if (needs_train && train_images.empty()) throw CliError("the pipeline has a distill step: give --train-images");
    auto has_option = [](const Step& s, const char* key) {
      for (const auto& kv : s.options) if (kv.first == key) return true;
      return false;
    };
    for (const auto& s : steps)
      if (s.name == "prune-channels" && calib_images.empty() && train_images.empty() && !has_option(s, "images"))
        throw CliError("the pipeline has a prune-channels step: give --calib (or --train-images) for its calibration images");
    if (eval_images.empty() != eval_labels.empty()) throw CliError("--eval-images and --eval-labels go together");

    auto engine = make_engine(g);
    auto input = check(engine->load_model(in));
    std::vector<uint8_t> bytes = check(serialize_model(input->ir()));
    const ir::ModelIR original = input->ir();
    const uint64_t bytes_before = bytes.size();
    // The teacher for distill: the input as a .minnow file (imported when it is not one).
    std::string teacher = in;
    std::string temp_teacher;
    if (needs_train) {
      char tmpl[] = "/tmp/minnow-teacher-XXXXXX";
      int fd = mkstemp(tmpl);
      if (fd < 0) throw CliError("cannot create a temporary file for the teacher model");
      close(fd);
      temp_teacher = teacher = tmpl;
      check(write_file_atomic(teacher, bytes.data(), bytes.size()));
    }
    std::string plugin_dir;
    if (!g.plugin_paths.empty()) plugin_dir = g.plugin_paths.front();

    compress::Images ev;
    std::vector<int32_t> ev_labels;
    auto measure = [&](const std::vector<uint8_t>& b) -> double {
      if (eval_images.empty()) return NAN;
      auto model = check(Model::load_memory(b.data(), b.size(), "<step>"));
      compress::Runner r(model, plugin_dir, 2);
      return compress::accuracy(r, ev, ev_labels);
    };
    double acc_before = NAN;
    try {
      if (!eval_images.empty()) {
        ev = compress::load_images(eval_images, mean, stdv, raw_shape);
        ev_labels = compress::load_labels(eval_labels);
      }
      acc_before = measure(bytes);
    } catch (const std::exception& e) {
      throw CliError(e.what());
    }
    if (!json) std::printf("%-28s %12s %9s %9s\n", "step", "bytes", "ratio", "accuracy");
    if (!json) std::printf("%-28s %12llu %8.2fx %9s\n", "input", (unsigned long long)bytes_before, 1.0, fmt_acc(acc_before).c_str());
    std::string steps_json;
    double acc = acc_before;
    for (const auto& s : steps) {
      KV kv = s.options;
      kv.emplace_back("seed", std::to_string(seed));
      for (const auto& o : opts) {
        auto eq = o.find('='), dot = o.find('.');
        if (eq == std::string::npos || dot == std::string::npos || dot > eq)
          throw CliError("--opt expects TRANSFORM.KEY=VALUE, got '" + o + "'");
        if (o.substr(0, dot) == s.name) kv.emplace_back(o.substr(dot + 1, eq - dot - 1), o.substr(eq + 1));
      }
      if (!sparse_format.empty() && (s.name == "prune" || s.name == "distill") && !has_option(s, "block"))
        kv.emplace_back("block", sparse_format);
      if (s.name == "distill") {
        kv.emplace_back("images", train_images);
        if (!train_labels.empty()) kv.emplace_back("labels", train_labels);
        kv.emplace_back("teacher", teacher);
        kv.emplace_back("mean", std::to_string(mean));
        kv.emplace_back("std", std::to_string(stdv));
        if (!raw_shape.empty()) kv.emplace_back("raw_shape", raw_shape);
        if (!plugin_dir.empty()) kv.emplace_back("plugin_path", plugin_dir);
        if (!json) kv.emplace_back("progress", "1");
      }
      if (s.name == "prune-channels" && !has_option(s, "images")) {  // calibration images, else the training images
        kv.emplace_back("images", calib_images.empty() ? train_images : calib_images);
        kv.emplace_back("mean", std::to_string(mean));
        kv.emplace_back("std", std::to_string(stdv));
        if (!raw_shape.empty()) kv.emplace_back("raw_shape", raw_shape);
      }
      std::string report;
      auto r = engine->transform(s.name, bytes, kv, &report);
      if (!r) {
        if (!temp_teacher.empty()) std::remove(temp_teacher.c_str());
        throw CliError("step '" + s.label + "': " + r.status().message());
      }
      bytes = std::move(r.value());
      try {
        acc = measure(bytes);
      } catch (const std::exception& e) {
        throw CliError(std::string("evaluating after '") + s.label + "': " + e.what());
      }
      if (!json) {
        std::printf("%-28s %12llu %8.2fx %9s\n", s.label.c_str(), (unsigned long long)bytes.size(),
                    double(bytes_before) / double(bytes.size()), fmt_acc(acc).c_str());
        if (std::getenv("MINNOW_COMPRESS_VERBOSE")) std::printf("%s", report.c_str());
      }
      steps_json += std::string(steps_json.empty() ? "" : ",") + "{\"step\":\"" + json_escape(s.label) +
                    "\",\"bytes\":" + std::to_string(bytes.size()) + ",\"accuracy\":" +
                    (std::isnan(acc) ? std::string("null") : fmt_acc(acc)) + "}";
    }
    if (!temp_teacher.empty()) std::remove(temp_teacher.c_str());
    auto result = check(Model::load_memory(bytes.data(), bytes.size(), out));
    check(write_file_atomic(out, bytes.data(), bytes.size()));
    const compress::ShapeOf shape_before = shapes_of(*engine, *input), shape_after = shapes_of(*engine, *result);
    auto rows = layer_table(original, result->ir(), shape_before, shape_after);
    const int64_t flops_before = compress::model_flops(original, shape_before);
    const int64_t flops_after = compress::model_flops(result->ir(), shape_after);
    const double ratio = double(bytes_before) / double(bytes.size());
    if (json) {
      std::string layers;
      for (const auto& r : rows) {
        const std::string fb = r.flops_before < 0 ? "null" : std::to_string(r.flops_before);
        char b[640];
        std::snprintf(b, sizeof b, "%s{\"name\":\"%s\",\"params\":%lld,\"sparsity\":%.4f,\"bits\":\"%s\",\"bytes_before\":%llu,\"bytes_after\":%llu,\"flops_before\":%s,\"flops_after\":%lld}",
                      layers.empty() ? "" : ",", json_escape(r.name).c_str(), (long long)r.params, r.sparsity, r.bits.c_str(),
                      (unsigned long long)r.before, (unsigned long long)r.after, fb.c_str(), (long long)r.flops_after);
        layers += b;
      }
      std::printf("{\"bytes_before\":%llu,\"bytes_after\":%zu,\"ratio\":%.4f,\"flops_before\":%lld,\"flops_after\":%lld,\"layers\":[%s],\"accuracy_before\":%s,\"accuracy_after\":%s,\"steps\":[%s]}\n",
                  (unsigned long long)bytes_before, bytes.size(), ratio, (long long)flops_before, (long long)flops_after, layers.c_str(),
                  std::isnan(acc_before) ? "null" : fmt_acc(acc_before).c_str(), std::isnan(acc) ? "null" : fmt_acc(acc).c_str(),
                  steps_json.c_str());
      return;
    }
    std::printf("\n%-28s %10s %9s %6s %12s %12s %12s %12s\n", "layer", "params", "sparsity", "bits", "bytes before",
                "bytes after", "FLOPs before", "FLOPs after");
    for (const auto& r : rows)
      std::printf("%-28s %10lld %8.1f%% %6s %12llu %12llu %12s %12lld\n", r.name.c_str(), (long long)r.params, 100 * r.sparsity,
                  r.bits.c_str(), (unsigned long long)r.before, (unsigned long long)r.after,
                  r.flops_before < 0 ? "-" : std::to_string(r.flops_before).c_str(), (long long)r.flops_after);
    std::printf("\ntotal: %llu -> %zu bytes (%.2fx)", (unsigned long long)bytes_before, bytes.size(), ratio);
    if (flops_after > 0)
      std::printf(", FLOPs per sample %lld -> %lld (%.2fx)", (long long)flops_before, (long long)flops_after,
                  double(flops_before) / double(flops_after));
    if (!std::isnan(acc_before)) std::printf(", accuracy %.4f -> %.4f", acc_before, acc);
    std::printf("\nwrote %s\n", out.c_str());
  });
}

}  // namespace cli
}  // namespace minnow
