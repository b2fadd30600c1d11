// Layers with no standard-op equivalent, emitted in domain "caffe" with Caffe's own
// parameter names as attributes:
//   caffe::Normalize        (ops_caffe plugin in this folder)
//   caffe::PriorBox, caffe::DetectionOutput (ops_ssd plugin), caffe::LSTM (ops_lstm plugin)
// The shapes tracked here follow Caffe's Reshape() for each layer.
#include "caffe_layers.h"

#include <cmath>

namespace minnow {
namespace caffe {

namespace {

const TextMsg& param_or_empty(const LayerDef& l, const char* field) {
  static const TextMsg kEmpty;
  const TextMsg* p = l.param(field);
  return p ? *p : kEmpty;
}

std::string code_type_name(const std::string& v) {
  if (v == "1") return "CORNER";
  if (v == "2") return "CENTER_SIZE";
  if (v == "3") return "CORNER_SIZE";
  return v;
}

}  // namespace

// Normalize (SSD): y = x / sqrt(sum x^2 + eps) * scale, the sum over C*H*W per sample
// (across_spatial) or over C per position; scale has one value (channel_shared) or C.
void convert_normalize(Ctx& c, const LayerDef& l) {
  c.require(l, 1, 1, 1, 1);
  const TextMsg& p = param_or_empty(l, "norm_param");
  std::string x = c.in(l, 0);
  Shape s = c.shape(x);
  if (s.size() < 2) c.fail(l, "input must have a channel axis (rank >= 2)");
  bool shared = p.get_bool("channel_shared", true);
  const CaffeBlob& b = c.blob(l, 0, shared ? 1 : s[1], "the scale");
  std::string scale = c.constant(l, "scale", {shared ? 1 : s[1]}, b.data);
  c.node(l, "Normalize", {x, scale}, {c.out(l, 0, s)},
         {Attr::Int("across_spatial", p.get_bool("across_spatial", true) ? 1 : 0),
          Attr::Float("eps", static_cast<float>(p.get_float("eps", 1e-10)))},
         "caffe");
}

// PriorBox: inputs (feature map, image); output [1, 2, H*W*num_priors*4] (boxes, then
// variances). Attributes are Caffe's prior_box_param, with img_size / step resolved to
// their _h / _w forms (0 = take from the image input / image size over feature size);
// img_h / img_w are ints, step_h / step_w floats, as ops_ssd reads them.
void convert_prior_box(Ctx& c, const LayerDef& l) {
  c.require(l, 2, 2, 1, 1);
  const TextMsg& p = param_or_empty(l, "prior_box_param");
  std::string feat = c.in(l, 0), img = c.in(l, 1);
  const Shape& fs = c.shape(feat);
  if (fs.size() != 4 || c.shape(img).size() != 4) c.fail(l, "both bottoms must be N x C x H x W");
  auto min_size = p.get_floats("min_size"), max_size = p.get_floats("max_size"), ar_in = p.get_floats("aspect_ratio");
  auto variance = p.get_floats("variance");
  bool flip = p.get_bool("flip", true), clip = p.get_bool("clip", false);
  if (min_size.empty()) c.fail(l, "needs at least one min_size");
  if (!max_size.empty() && max_size.size() != min_size.size()) c.fail(l, "needs as many max_size as min_size values");
  for (size_t i = 0; i < max_size.size(); ++i)
    if (max_size[i] <= min_size[i]) c.fail(l, "max_size must be greater than min_size");
  if (variance.empty()) variance = {0.1f};
  if (variance.size() != 1 && variance.size() != 4) c.fail(l, "variance needs 1 or 4 values");
  // Caffe's list of aspect ratios: 1, then each new one (and its inverse with flip).
  std::vector<float> ars{1.f};
  for (float ar : ar_in) {
    bool seen = false;
    for (float a : ars) seen = seen || std::fabs(ar - a) < 1e-6f;
    if (seen) continue;
    ars.push_back(ar);
    if (flip) ars.push_back(1.f / ar);
  }
  int64_t num_priors = static_cast<int64_t>(ars.size() * min_size.size() + max_size.size());
  // img_size / img_h / img_w are integers in caffe.proto (uint32).
  int64_t img_h = p.get_int("img_h", p.get_int("img_size", 0)), img_w = p.get_int("img_w", p.get_int("img_size", 0));
  if (img_h < 0 || img_w < 0) c.fail(l, "image size must not be negative");
  float step_h = static_cast<float>(p.get_float("step_h", p.get_float("step", 0)));
  float step_w = static_cast<float>(p.get_float("step_w", p.get_float("step", 0)));
  Shape ys{1, 2, fs[2] * fs[3] * num_priors * 4};
  c.node(l, "PriorBox", {feat, img}, {c.out(l, 0, ys)},
         {Attr::Floats("min_size", min_size), Attr::Floats("max_size", max_size), Attr::Floats("aspect_ratio", ar_in),
          Attr::Int("flip", flip ? 1 : 0), Attr::Int("clip", clip ? 1 : 0), Attr::Floats("variance", variance),
          Attr::Int("img_h", img_h), Attr::Int("img_w", img_w), Attr::Float("step_h", step_h),
          Attr::Float("step_w", step_w), Attr::Float("offset", static_cast<float>(p.get_float("offset", 0.5)))},
         "caffe");
}

// DetectionOutput: inputs (loc, conf, priors); output [1, 1, num_detections, 7] with rows
// (image, label, score, xmin, ymin, xmax, ymax); the count is known only at run time.
void convert_detection_output(Ctx& c, const LayerDef& l) {
  c.require(l, 3, 3, 1, 1);
  const TextMsg& p = param_or_empty(l, "detection_output_param");
  if (!p.has("num_classes")) c.fail(l, "num_classes is required");
  static const TextMsg kEmpty;
  const TextMsg* nms = p.get_msg("nms_param");
  if (!nms) nms = &kEmpty;
  std::vector<std::string> ins{c.in(l, 0), c.in(l, 1), c.in(l, 2)};
  c.node(l, "DetectionOutput", ins, {c.out(l, 0, {1, 1, -1, 7})},
         {Attr::Int("num_classes", p.get_int("num_classes", 0)),
          Attr::Int("share_location", p.get_bool("share_location", true) ? 1 : 0),
          Attr::Int("background_label_id", p.get_int("background_label_id", 0)),
          Attr::Float("nms_threshold", static_cast<float>(nms->get_float("nms_threshold", 0.3))),
          Attr::Int("top_k", nms->get_int("top_k", -1)), Attr::Float("eta", static_cast<float>(nms->get_float("eta", 1.0))),
          Attr::String("code_type", code_type_name(p.get_string("code_type", "CORNER"))),
          Attr::Int("variance_encoded_in_target", p.get_bool("variance_encoded_in_target", false) ? 1 : 0),
          Attr::Int("keep_top_k", p.get_int("keep_top_k", -1)),
          Attr::Float("confidence_threshold", static_cast<float>(p.get_float("confidence_threshold", -1e30)))},
         "caffe");
}

// LSTM: inputs (x [T, N, ...], cont [T, N], W_xc [4H, I], b_c [4H], W_hc [4H, H]), Caffe's
// gate order i, f, o, g; output h [T, N, H]. cont_t = 0 resets the state before step t
// (h_{t-1} and c_{t-1} are multiplied by cont_t), as Caffe's unrolled net does.
void convert_lstm(Ctx& c, const LayerDef& l) {
  c.require(l, 2, 3, 1, 1);
  const TextMsg& p = param_or_empty(l, "recurrent_param");
  if (l.bottoms.size() == 3) c.unsupported(l, "the static input (third bottom)");
  if (p.get_bool("expose_hidden", false)) c.unsupported(l, "expose_hidden: true");
  int64_t h = p.get_int("num_output", 0);
  if (h <= 0) c.fail(l, "num_output must be given and > 0");
  std::string x = c.in(l, 0), cont = c.in(l, 1);
  Shape xs = c.shape(x), cs = c.shape(cont);
  if (xs.size() < 3) c.fail(l, "x must be T x N x ...");
  if (cs.size() != 2 || cs[0] != xs[0] || cs[1] != xs[1]) c.fail(l, "cont must be T x N matching x");
  int64_t in = 1;
  for (size_t i = 2; i < xs.size(); ++i) in *= xs[i];
  std::string wx = c.constant(l, "W_xc", {4 * h, in}, c.blob(l, 0, 4 * h * in, "W_xc").data);
  std::string b = c.constant(l, "b_c", {4 * h}, c.blob(l, 1, 4 * h, "b_c").data);
  std::string wh = c.constant(l, "W_hc", {4 * h, h}, c.blob(l, 2, 4 * h * h, "W_hc").data);
  c.node(l, "LSTM", {x, cont, wx, b, wh}, {c.out(l, 0, {xs[0], xs[1], h})}, {Attr::Int("num_output", h)}, "caffe");
}

// ---- the table ------------------------------------------------------------------------

namespace {
struct Entry {
  const char* type;
  LayerFn fn;
};
const Entry kConverters[] = {
    {"Convolution", convert_convolution}, {"Deconvolution", convert_deconvolution},
    {"InnerProduct", convert_inner_product}, {"Pooling", convert_pooling},
    {"ReLU", convert_relu}, {"PReLU", convert_prelu}, {"Sigmoid", convert_sigmoid}, {"TanH", convert_tanh},
    {"AbsVal", convert_absval}, {"ELU", convert_elu}, {"Power", convert_power}, {"Dropout", convert_dropout},
    {"Eltwise", convert_eltwise}, {"BatchNorm", convert_batchnorm}, {"Scale", convert_scale}, {"Bias", convert_bias},
    {"Softmax", convert_softmax}, {"Concat", convert_concat}, {"Slice", convert_slice}, {"Split", convert_split},
    {"Flatten", convert_flatten}, {"Reshape", convert_reshape}, {"Permute", convert_permute},
    {"Normalize", convert_normalize}, {"PriorBox", convert_prior_box},
    {"DetectionOutput", convert_detection_output}, {"LSTM", convert_lstm},
};
const char* const kTrainingOnly[] = {"SoftmaxWithLoss", "EuclideanLoss", "SigmoidCrossEntropyLoss", "HingeLoss",
                                     "InfogainLoss", "MultinomialLogisticLoss", "ContrastiveLoss", "Accuracy",
                                     "Silence", "MultiBoxLoss"};
const char* const kDataLayers[] = {"Data", "ImageData", "HDF5Data", "MemoryData", "WindowData", "DummyData",
                                   "AnnotatedData"};
}  // namespace

LayerFn find_converter(const std::string& type) {
  for (const auto& e : kConverters)
    if (type == e.type) return e.fn;
  return nullptr;
}

bool is_training_only(const std::string& type) {
  for (const char* t : kTrainingOnly)
    if (type == t) return true;
  return false;
}

bool is_data_layer(const std::string& type) {
  for (const char* t : kDataLayers)
    if (type == t) return true;
  return false;
}

}  // namespace caffe
}  // namespace minnow
