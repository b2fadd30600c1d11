// minnow eval: a classifier's accuracy, or a detector's mAP, on an idx image set
// (Fashion-MNIST, MNIST, the ssd_fmnist canvases).
#include "common.h"

#include "detection_eval.h"
#include "tensor_io.h"

#include <chrono>
#include <cstdio>
#include <functional>

#include <unistd.h>

namespace minnow {
namespace cli {

namespace {

struct EvalArgs {
  std::string path, images, labels, ground_truth, task = "classification", preset;
  float mean = 0.f, std_dev = 1.f, scale = 255.f;
  int threads = 1, batch = 0, label_offset = 1;
  int64_t limit = 0;
  bool json = false, no_progress = false;
};

// Runs the model over the images in batches; `on_batch(start, n, session)` reads the
// outputs of images [start, start + n) and returns the progress figure to show.
void run_batches(const EvalArgs& a, GlobalOptions& g, const IdxImages& im, int64_t count, int64_t default_batch,
                 const char* figure, const std::function<double(int64_t, int64_t, Session&)>& on_batch) {
  auto engine = make_engine(g);
  auto model = check(engine->load_model(a.path));
  const auto& gr = model->graph();
  if (gr.inputs.size() != 1 || gr.outputs.empty()) throw CliError(a.path + ": eval needs a model with one input");
  const auto& in_info = gr.tensors[gr.inputs[0]];
  if (in_info.dtype != DataType::kFloat32) throw CliError(a.path + ": input '" + in_info.name + "' is not float32");
  Shape in_shape = in_info.static_shape();
  if (in_shape.empty()) throw CliError(a.path + ": input '" + in_info.name + "' has no batch dimension");
  int64_t per_image = 1;
  for (size_t d = 1; d < in_shape.size(); ++d) per_image *= in_shape[d];
  if (per_image != im.rows * im.cols)
    throw CliError(a.path + ": input '" + in_info.name + "' takes " + std::to_string(per_image) + " values per image, images have " + std::to_string(im.rows * im.cols) + " pixels");
  int64_t b = in_shape[0] >= 0 ? in_shape[0] : (a.batch > 0 ? a.batch : default_batch);
  if (in_shape[0] >= 0 && a.batch > 0 && a.batch != in_shape[0])
    throw CliError(a.path + ": the model's batch is fixed at " + std::to_string(in_shape[0]));

  auto pm = check(engine->prepare(model));
  SessionOptions so;
  so.threads = a.threads;
  auto session = check(Session::create(pm, so));
  const bool progress = !a.no_progress && isatty(fileno(stderr));
  for (int64_t start = 0; start < count; start += b) {
    int64_t n = std::min(b, count - start);
    Shape s = in_shape;
    s[0] = in_shape[0] >= 0 ? in_shape[0] : n;  // a fixed batch is padded with zeros
    Tensor x(DataType::kFloat32, s);
    float* dst = x.data<float>();
    const uint8_t* src = im.pixels.data() + start * per_image;
    for (int64_t i = 0; i < n * per_image; ++i) dst[i] = (float(src[i]) / a.scale - a.mean) / a.std_dev;
    check(session->set_input(0, x));
    check(session->run());
    double so_far = on_batch(start, n, *session);
    if (progress) {  // a progress bar on a terminal only, so logs and pipes stay clean
      int64_t done = start + n;
      int filled = int(40 * done / count);
      std::fprintf(stderr, "\r[%s%s] %lld/%lld  %s %.4f", std::string(size_t(filled), '#').c_str(),
                   std::string(size_t(40 - filled), '.').c_str(), (long long)done, (long long)count, figure, so_far);
      if (done == count) std::fprintf(stderr, "\n");
    }
  }
}

void eval_classification(const EvalArgs& a, GlobalOptions& g, const IdxImages& im) {
  if (a.labels.empty()) throw CliError("--task classification needs --labels");
  auto lab_bytes = check(read_maybe_gzip(a.labels));
  std::vector<uint8_t> lab = check(parse_idx_labels(lab_bytes.data(), lab_bytes.size(), a.labels));
  if (int64_t(lab.size()) != im.count)
    throw CliError(a.images + " has " + std::to_string(im.count) + " images but " + a.labels + " has " + std::to_string(lab.size()) + " labels");
  const int64_t count = a.limit > 0 ? std::min<int64_t>(a.limit, im.count) : im.count;
  int64_t correct = 0;
  auto t0 = std::chrono::steady_clock::now();
  run_batches(a, g, im, count, 100, "accuracy so far", [&](int64_t start, int64_t n, Session& session) {
    Tensor y = check(session.output(0));
    if (y.dtype() != DataType::kFloat32 || y.shape().size() < 2 || y.shape()[0] < n)
      throw CliError(a.path + ": output 0 must be float32 [batch, classes], got " + shape_to_string(y.shape()));
    int64_t classes = y.elements() / y.shape()[0];
    for (int64_t r = 0; r < n; ++r) {
      const float* row = y.data<float>() + r * classes;
      int64_t best = 0;
      for (int64_t c = 1; c < classes; ++c)
        if (row[c] > row[best]) best = c;
      correct += best == lab[start + r];
    }
    return double(correct) / double(start + n);
  });
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  double acc = count ? double(correct) / double(count) : 0.0;
  if (a.json)
    std::printf("{\"accuracy\": %.6f, \"correct\": %lld, \"count\": %lld, \"seconds\": %.3f}\n", acc, (long long)correct, (long long)count, secs);
  else
    std::printf("%s: accuracy %.4f (%lld / %lld) in %.2f s\n", a.path.c_str(), acc, (long long)correct, (long long)count, secs);
}

// The detector's output: float32 [1, 1, K, 7] rows (image_id, label, score, xmin, ymin,
// xmax, ymax) as caffe::DetectionOutput writes them (`minnow import --ssd-priors`).
void eval_detection(const EvalArgs& a, GlobalOptions& g, const IdxImages& im) {
  if (a.ground_truth.empty()) throw CliError("--task detection needs --ground-truth");
  std::vector<GtImage> gt = check(read_detection_ground_truth(a.ground_truth, a.label_offset));
  const int64_t count = a.limit > 0 ? std::min<int64_t>(a.limit, im.count) : im.count;
  gt.resize(size_t(count));  // images past --limit do not count; missing ones have no boxes
  std::vector<Detection> dets;
  auto t0 = std::chrono::steady_clock::now();
  run_batches(a, g, im, count, 1, "detections", [&](int64_t start, int64_t n, Session& session) {
    Tensor y = check(session.output(0));
    const Shape& s = y.shape();
    if (y.dtype() != DataType::kFloat32 || s.size() != 4 || s[3] != 7)
      throw CliError(a.path + ": output 0 must be DetectionOutput's float32 [1, 1, K, 7] (import the detector with --ssd-priors), got " +
                     shape_to_string(s) + " " + dtype_name(y.dtype()));
    const int64_t rows = y.elements() / 7;
    for (int64_t r = 0; r < rows; ++r) {
      const float* v = y.data<float>() + r * 7;
      if (v[1] < 0 || v[0] < 0 || int64_t(v[0]) >= n) continue;  // "no detection" rows, batch padding
      dets.push_back(Detection{start + int64_t(v[0]), int(v[1]), v[2], {v[3], v[4], v[5], v[6]}});
    }
    return double(dets.size());
  });
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  MapResult m = voc_map(dets, gt, 0.5);
  if (a.json) {
    std::printf("{\"map50\": %.6f, \"count\": %lld, \"detections\": %zu, \"seconds\": %.3f, \"ap\": {", m.map, (long long)count, dets.size(), secs);
    bool first = true;
    for (const auto& kv : m.ap) std::printf("%s\"%d\": %.6f", first ? "" : ", ", kv.first, kv.second), first = false;
    std::printf("}}\n");
  } else {
    std::printf("%s: mAP@0.5 %.4f over %lld images (%zu detections) in %.2f s\n", a.path.c_str(), m.map, (long long)count, dets.size(), secs);
    for (const auto& kv : m.ap) std::printf("  class %d: AP %.4f\n", kv.first, kv.second);
  }
}

}  // namespace

void register_eval_command(CLI::App& app, GlobalOptions& g) {
  auto* cmd = app.add_subcommand("eval", "Measure a classifier's accuracy or a detector's mAP on an idx image set");
  static EvalArgs a;
  cmd->add_option("model", a.path, "Model file")->required();
  cmd->add_option("--task", a.task, "classification (--labels) or detection (--ground-truth: VOC mAP at IoU 0.5)")->capture_default_str()->check(CLI::IsMember({"classification", "detection"}));
  cmd->add_option("--images", a.images, "idx3 image file (.gz or uncompressed)")->required()->check(CLI::ExistingFile);
  cmd->add_option("--labels", a.labels, "classification: idx1 label file (.gz or uncompressed)")->check(CLI::ExistingFile);
  cmd->add_option("--ground-truth", a.ground_truth, "detection: JSON [{\"image\", \"boxes_xyxy_norm\", \"labels\"}, ...]")->check(CLI::ExistingFile);
  cmd->add_option("--label-offset", a.label_offset, "detection: detector label = ground-truth label + this (1: label 0 is the background)")->capture_default_str();
  cmd->add_option("--preset", a.preset, "Preprocessing preset: fashion-mnist (mean 0.2860, std 0.3530)")->check(CLI::IsMember({"fashion-mnist", "mnist"}));
  cmd->add_option("--scale", a.scale, "x = (u / scale - mean) / std")->capture_default_str();
  cmd->add_option("--mean", a.mean, "x = (u / scale - mean) / std")->capture_default_str();
  cmd->add_option("--std", a.std_dev, "x = (u / scale - mean) / std")->capture_default_str();
  cmd->add_option("--batch", a.batch, "Images per run (default for a model with a symbolic batch: 100 classification, 1 detection; else its batch)")->check(CLI::PositiveNumber);
  cmd->add_option("--limit", a.limit, "Evaluate only the first N images")->check(CLI::PositiveNumber);
  cmd->add_option("-t,--threads", a.threads, "Threads")->capture_default_str()->check(CLI::Range(1, 1024));
  cmd->add_flag("--no-progress", a.no_progress, "No progress bar");
  cmd->add_flag("--json", a.json, "Print {\"accuracy\": …, \"correct\": …, \"count\": …} or {\"map50\": …, \"ap\": {class: …}, …}");
  cmd->callback([&g] {
    if (a.preset == "fashion-mnist") a.mean = 0.2860f, a.std_dev = 0.3530f, a.scale = 255.f;
    if (a.preset == "mnist") a.mean = 0.1307f, a.std_dev = 0.3081f, a.scale = 255.f;
    if (a.std_dev == 0.f || a.scale == 0.f) throw CliError("--std and --scale must be non-zero");
    auto img_bytes = check(read_maybe_gzip(a.images));
    IdxImages im = check(parse_idx_images(img_bytes.data(), img_bytes.size(), a.images));
    if (a.task == "detection") eval_detection(a, g, im);
    else eval_classification(a, g, im);
  });
}

}  // namespace cli
}  // namespace minnow
