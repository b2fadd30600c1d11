// minnow eval: accuracy of a classifier on an idx image set (Fashion-MNIST, MNIST).
#include "common.h"

#include "tensor_io.h"

#include <chrono>
#include <cstdio>

#include <unistd.h>

namespace minnow {
namespace cli {

void register_eval_command(CLI::App& app, GlobalOptions& g) {
  auto* cmd = app.add_subcommand("eval", "Measure a classifier's accuracy on an idx image set");
  static std::string path, images, labels, task = "classification", preset;
  static float mean = 0.f, std_dev = 1.f, scale = 255.f;
  static int threads = 1, batch = 0;
  static int64_t limit = 0;
  static bool json = false, no_progress = false;
  cmd->add_option("model", path, "Model file")->required();
  cmd->add_option("--task", task, "classification")->capture_default_str()->check(CLI::IsMember({"classification"}));
  cmd->add_option("--images", images, "idx3 image file (.gz or uncompressed)")->required()->check(CLI::ExistingFile);
  cmd->add_option("--labels", labels, "idx1 label file (.gz or uncompressed)")->required()->check(CLI::ExistingFile);
  cmd->add_option("--preset", preset, "Preprocessing preset: fashion-mnist (mean 0.2860, std 0.3530)")->check(CLI::IsMember({"fashion-mnist", "mnist"}));
  cmd->add_option("--scale", scale, "x = (u / scale - mean) / std")->capture_default_str();
  cmd->add_option("--mean", mean, "x = (u / scale - mean) / std")->capture_default_str();
  cmd->add_option("--std", std_dev, "x = (u / scale - mean) / std")->capture_default_str();
  cmd->add_option("--batch", batch, "Images per run (default: 100 for a model with a symbolic batch, else its batch)")->check(CLI::PositiveNumber);
  cmd->add_option("--limit", limit, "Evaluate only the first N images")->check(CLI::PositiveNumber);
  cmd->add_option("-t,--threads", threads, "Threads")->capture_default_str()->check(CLI::Range(1, 1024));
  cmd->add_flag("--no-progress", no_progress, "No progress bar");
  cmd->add_flag("--json", json, "Print {\"accuracy\": …, \"correct\": …, \"count\": …}");
  cmd->callback([&g] {
    if (preset == "fashion-mnist") mean = 0.2860f, std_dev = 0.3530f, scale = 255.f;
    if (preset == "mnist") mean = 0.1307f, std_dev = 0.3081f, scale = 255.f;
    if (std_dev == 0.f || scale == 0.f) throw CliError("--std and --scale must be non-zero");
    auto img_bytes = check(read_maybe_gzip(images));
    auto lab_bytes = check(read_maybe_gzip(labels));
    IdxImages im = check(parse_idx_images(img_bytes.data(), img_bytes.size(), images));
    std::vector<uint8_t> lab = check(parse_idx_labels(lab_bytes.data(), lab_bytes.size(), labels));
    if (int64_t(lab.size()) != im.count)
      throw CliError(images + " has " + std::to_string(im.count) + " images but " + labels + " has " + std::to_string(lab.size()) + " labels");
    int64_t count = limit > 0 ? std::min<int64_t>(limit, im.count) : im.count;

    auto engine = make_engine(g);
    auto model = check(engine->load_model(path));
    const auto& gr = model->graph();
    if (gr.inputs.size() != 1 || gr.outputs.empty()) throw CliError(path + ": eval needs a model with one input");
    const auto& in_info = gr.tensors[gr.inputs[0]];
    if (in_info.dtype != DataType::kFloat32) throw CliError(path + ": input '" + in_info.name + "' is not float32");
    Shape in_shape = in_info.static_shape();
    if (in_shape.empty()) throw CliError(path + ": input '" + in_info.name + "' has no batch dimension");
    int64_t per_image = 1;
    for (size_t d = 1; d < in_shape.size(); ++d) per_image *= in_shape[d];
    if (per_image != im.rows * im.cols)
      throw CliError(path + ": input '" + in_info.name + "' takes " + std::to_string(per_image) + " values per image, images have " + std::to_string(im.rows * im.cols) + " pixels");
    int64_t b = in_shape[0] >= 0 ? in_shape[0] : (batch > 0 ? batch : 100);
    if (in_shape[0] >= 0 && batch > 0 && batch != in_shape[0])
      throw CliError(path + ": the model's batch is fixed at " + std::to_string(in_shape[0]));

    auto pm = check(engine->prepare(model));
    SessionOptions so;
    so.threads = threads;
    auto session = check(Session::create(pm, so));
    int64_t correct = 0;
    const bool progress = !no_progress && isatty(fileno(stderr));
    auto t0 = std::chrono::steady_clock::now();
    for (int64_t start = 0; start < count; start += b) {
      int64_t n = std::min(b, count - start);
      Shape s = in_shape;
      s[0] = in_shape[0] >= 0 ? in_shape[0] : n;  // a fixed batch is padded with zeros
      Tensor x(DataType::kFloat32, s);
      float* dst = x.data<float>();
      const uint8_t* src = im.pixels.data() + start * per_image;
      for (int64_t i = 0; i < n * per_image; ++i) dst[i] = (float(src[i]) / scale - mean) / std_dev;
      check(session->set_input(0, x));
      check(session->run());
      Tensor y = check(session->output(0));
      if (y.dtype() != DataType::kFloat32 || y.shape().size() < 2 || y.shape()[0] != s[0])
        throw CliError(path + ": output 0 must be float32 [batch, classes], got " + shape_to_string(y.shape()));
      int64_t classes = y.elements() / y.shape()[0];
      for (int64_t r = 0; r < n; ++r) {
        const float* row = y.data<float>() + r * classes;
        int64_t best = 0;
        for (int64_t c = 1; c < classes; ++c)
          if (row[c] > row[best]) best = c;
        correct += best == lab[start + r];
      }
      if (progress) {  // a progress bar on a terminal only, so logs and pipes stay clean
        int64_t done = start + n;
        int filled = int(40 * done / count);
        std::fprintf(stderr, "\r[%s%s] %lld/%lld  accuracy so far %.4f", std::string(size_t(filled), '#').c_str(),
                     std::string(size_t(40 - filled), '.').c_str(), (long long)done, (long long)count,
                     double(correct) / double(done));
        if (done == count) std::fprintf(stderr, "\n");
      }
    }
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    double acc = count ? double(correct) / double(count) : 0.0;
    if (json)
      std::printf("{\"accuracy\": %.6f, \"correct\": %lld, \"count\": %lld, \"seconds\": %.3f}\n", acc, (long long)correct, (long long)count, secs);
    else
      std::printf("%s: accuracy %.4f (%lld / %lld) in %.2f s\n", path.c_str(), acc, (long long)correct, (long long)count, secs);
  });
}

}  // namespace cli
}  // namespace minnow
