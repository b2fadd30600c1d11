#include "ssd_priors.h"

#include <minnow/model_builder.h>

#include <nlohmann/json.hpp>

#include <fstream>

namespace minnow {
namespace cli {

namespace {

using json = nlohmann::json;

struct PriorParams {
  int64_t fm_w = 0, fm_h = 0;  // feature map size
  float step = 0, offset = 0.5f;
  std::vector<float> min_size, max_size, aspect_ratio, variance;
  bool flip = true, clip = false;
};

// A size: a number (square) or [w, h].
void size_of(const json& v, int64_t* w, int64_t* h) {
  if (v.is_number()) {
    *w = *h = v.get<int64_t>();
    return;
  }
  if (!v.is_array() || v.size() != 2) throw std::runtime_error("a size must be a number or [w, h]");
  *w = v[0].get<int64_t>();
  *h = v[1].get<int64_t>();
}

// A float list from a number or an array of numbers.
std::vector<float> floats_of(const json& v) {
  std::vector<float> out;
  if (v.is_number()) out.push_back(v.get<float>());
  else
    for (const auto& x : v) out.push_back(x.get<float>());
  return out;
}

// One PriorBox per feature map: the "caffe_prior_box_params" list when present, else the
// parallel top-level lists (feature_maps, steps, min_sizes, max_sizes, aspect_ratios).
std::vector<PriorParams> read_prior_params(const json& j) {
  std::vector<PriorParams> out;
  if (j.contains("caffe_prior_box_params")) {
    for (const auto& p : j.at("caffe_prior_box_params")) {
      PriorParams q;
      size_of(p.at("feature_map"), &q.fm_w, &q.fm_h);
      q.step = p.value("step", 0.f);
      q.offset = p.value("offset", 0.5f);
      q.min_size = floats_of(p.at("min_size"));
      if (p.contains("max_size")) q.max_size = floats_of(p.at("max_size"));
      if (p.contains("aspect_ratio")) q.aspect_ratio = floats_of(p.at("aspect_ratio"));
      if (p.contains("variance")) q.variance = floats_of(p.at("variance"));
      q.flip = p.value("flip", true);
      q.clip = p.value("clip", false);
      out.push_back(q);
    }
    return out;
  }
  const auto& fm = j.at("feature_maps");
  for (size_t i = 0; i < fm.size(); ++i) {
    PriorParams q;
    size_of(fm[i], &q.fm_w, &q.fm_h);
    if (j.contains("steps")) q.step = j.at("steps").at(i).get<float>();
    q.offset = j.value("offset", 0.5f);
    q.min_size = floats_of(j.at("min_sizes").at(i));
    if (j.contains("max_sizes")) q.max_size = floats_of(j.at("max_sizes").at(i));
    if (j.contains("aspect_ratios")) q.aspect_ratio = floats_of(j.at("aspect_ratios").at(i));
    if (j.contains("variances")) q.variance = floats_of(j.at("variances"));
    q.flip = j.value("flip", true);
    q.clip = j.value("clip", false);
    out.push_back(q);
  }
  return out;
}

int32_t default_opset(const ir::ModelIR& m) {
  for (const auto& o : m.opsets)
    if (o.domain.empty() || o.domain == "ai.onnx") return o.version;
  return 13;
}

}  // namespace

Result<std::vector<uint8_t>> append_ssd_postprocess(const std::vector<uint8_t>& bytes, const std::string& json_path,
                                                    const SsdPriorsOptions& opt) {
  std::ifstream in(json_path);
  if (!in) return not_found("--ssd-priors: cannot open '" + json_path + "'");
  json j;
  std::vector<PriorParams> priors;
  int64_t img_w = 0, img_h = 0, num_classes = 0, background = 0;
  bool share = true, var_in_target = false, softmax = true;
  float nms = 0.45f, conf_thr = 0.01f;
  int64_t top_k = -1, keep_top_k = -1;
  std::string code;
  try {
    in >> j;
    priors = read_prior_params(j);
    size_of(j.at("img_size"), &img_w, &img_h);
    softmax = !j.value("conf_is_probability", false);
    num_classes = j.at("num_classes").get<int64_t>();
    background = j.value("background_label_id", int64_t(0));
    code = j.value("code_type", std::string("CENTER_SIZE"));
    var_in_target = j.value("variance_encoded_in_target", false);
    const json& d = j.at("detection_output");
    nms = d.at("nms_threshold").get<float>();
    conf_thr = d.value("confidence_threshold", 0.f);
    top_k = d.value("top_k", int64_t(-1));
    keep_top_k = d.value("keep_top_k", int64_t(-1));
    share = d.value("share_location", true);
  } catch (const std::exception& e) {
    return invalid_argument("--ssd-priors '" + json_path + "': " + e.what());
  }
  if (priors.empty()) return invalid_argument("--ssd-priors '" + json_path + "': no feature maps");
  if (img_w <= 0 || img_h <= 0 || num_classes <= 1) return invalid_argument("--ssd-priors '" + json_path + "': img_size and num_classes must be positive (num_classes counts the background)");
  for (const auto& p : priors)
    if (p.fm_w <= 0 || p.fm_h <= 0 || p.min_size.empty())
      return invalid_argument("--ssd-priors '" + json_path + "': every feature map needs a positive size and a min_size");

  auto parsed = parse_model(bytes.data(), bytes.size(), nullptr, "imported model");
  if (!parsed) return parsed.status();
  ir::ModelIR m = std::move(parsed.value());
  auto find_output = [&](const std::string& name) {
    for (int32_t o : m.graph.outputs)
      if (m.graph.tensors[o].name == name) return true;
    return false;
  };
  for (const std::string& name : {opt.loc, opt.conf})
    if (!find_output(name)) {
      std::string have;
      for (int32_t o : m.graph.outputs) have += (have.empty() ? "'" : ", '") + m.graph.tensors[o].name + "'";
      return invalid_argument("--ssd-priors: the model has no output '" + name + "' (its outputs: " + have + "); name them with --ssd-loc / --ssd-conf");
    }
  if (m.graph.find_tensor(opt.output) >= 0)
    return invalid_argument("--ssd-priors: the model already has a tensor named '" + opt.output + "'");
  const int32_t opset = default_opset(m);
  bool has_caffe = false;
  for (const auto& o : m.opsets) has_caffe = has_caffe || o.domain == "caffe";
  if (!has_caffe) m.opsets.push_back(ir::OpsetImport{"caffe", 1});

  ModelBuilder b(std::move(m));
  // Shape-only placeholders: [1, 0, H, W] holds no data, PriorBox reads only H and W.
  b.add_constant("ssd_image_hw", Tensor(DataType::kFloat32, Shape{1, 0, img_h, img_w}));
  std::vector<std::string> prior_names;
  for (size_t i = 0; i < priors.size(); ++i) {
    const PriorParams& p = priors[i];
    const std::string fm = "ssd_map" + std::to_string(i) + "_hw", out = "ssd_priors" + std::to_string(i);
    b.add_constant(fm, Tensor(DataType::kFloat32, Shape{1, 0, p.fm_h, p.fm_w}));
    std::vector<Attr> a{Attr::Floats("min_size", p.min_size), Attr::Int("flip", p.flip), Attr::Int("clip", p.clip),
                        Attr::Int("img_h", img_h), Attr::Int("img_w", img_w), Attr::Float("offset", p.offset)};
    if (!p.max_size.empty()) a.push_back(Attr::Floats("max_size", p.max_size));
    if (!p.aspect_ratio.empty()) a.push_back(Attr::Floats("aspect_ratio", p.aspect_ratio));
    if (!p.variance.empty()) a.push_back(Attr::Floats("variance", p.variance));
    if (p.step > 0) a.push_back(Attr::Float("step", p.step));
    b.add_node("PriorBox", {fm, "ssd_image_hw"}, {out}, a, "ssd_prior_box" + std::to_string(i), "caffe", 1);
    prior_names.push_back(out);
  }
  std::string all_priors = prior_names[0];
  if (prior_names.size() > 1) {
    all_priors = "ssd_priors";
    b.add_node("Concat", prior_names, {all_priors}, {Attr::Int("axis", 2)}, "ssd_priors_concat", "", opset);
  }
  std::string prob = opt.conf;
  if (softmax) {  // DetectionOutput takes probabilities, as Caffe's net gives it after mbox_conf_softmax
    prob = "ssd_conf_prob";
    b.add_node("Softmax", {opt.conf}, {prob}, {Attr::Int("axis", -1)}, "ssd_conf_softmax", "", opset);
  }
  std::vector<Attr> d{Attr::Int("num_classes", num_classes), Attr::Int("share_location", share),
                      Attr::Int("background_label_id", background), Attr::Float("nms_threshold", nms),
                      Attr::Float("confidence_threshold", conf_thr), Attr::Int("top_k", top_k),
                      Attr::Int("keep_top_k", keep_top_k), Attr::String("code_type", code),
                      Attr::Int("variance_encoded_in_target", var_in_target)};
  b.add_node("DetectionOutput", {opt.loc, prob, all_priors}, {opt.output}, d, "ssd_detection_output", "caffe", 1);
  b.ir().graph.outputs.clear();
  b.add_output(opt.output);
  return b.serialize();
}

}  // namespace cli
}  // namespace minnow
