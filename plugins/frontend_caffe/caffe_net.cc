// Prototxt -> NetDef (see caffe_net.h).
#include "caffe_net.h"

#include "caffe_error.h"
#include "caffe_weights.h"

namespace minnow {
namespace caffe {

namespace {

std::vector<int64_t> blob_shape(const TextMsg& shape_msg) { return shape_msg.get_ints("dim"); }

// NetStateRule: a rule with `phase` matches only that phase; we import the TEST phase
// (what a deploy net is). Stage / level rules are not evaluated: they select variants of
// training nets, and a deploy prototxt does not use them.
bool rule_matches_test(const TextMsg& rule) {
  std::string phase = rule.get_string("phase", "");
  return phase.empty() || phase == "TEST" || phase == "1";
}

bool in_test_phase(const TextMsg& layer) {
  auto inc = layer.get_msgs("include");
  if (!inc.empty()) {
    bool any = false;
    for (const auto* r : inc) any = any || rule_matches_test(*r);
    if (!any) return false;
  }
  for (const auto* r : layer.get_msgs("exclude"))
    if (rule_matches_test(*r) && r->has("phase")) return false;
  return true;
}

void check_name(const std::string& s, const std::string& what, const std::string& where) {
  if (s.empty()) throw CaffeError(where + ": empty " + what);
}

}  // namespace

NetDef parse_net(const std::string& text, const std::string& origin) {
  NetDef net;
  net.root = parse_text(text, origin);
  const TextMsg& root = *net.root;
  net.name = root.get_string("name", "net");

  // Old header: input: "data" followed by input_dim x4 per input, or input_shape {}.
  auto input_names = root.get_strings("input");
  auto input_dims = root.get_ints("input_dim");
  auto input_shapes = root.get_msgs("input_shape");
  if (!input_names.empty()) {
    if (!input_shapes.empty()) {
      if (input_shapes.size() != input_names.size())
        throw CaffeError(root.where(root.find("input_shape")) + ": " + std::to_string(input_names.size()) +
                         " inputs but " + std::to_string(input_shapes.size()) + " input_shape entries");
      for (size_t i = 0; i < input_names.size(); ++i) net.inputs.push_back({input_names[i], blob_shape(*input_shapes[i])});
    } else {
      if (input_dims.size() != 4 * input_names.size())
        throw CaffeError(root.where(root.find("input")) + ": " + std::to_string(input_names.size()) +
                         " inputs need " + std::to_string(4 * input_names.size()) + " input_dim values, found " +
                         std::to_string(input_dims.size()));
      for (size_t i = 0; i < input_names.size(); ++i)
        net.inputs.push_back({input_names[i], {input_dims.begin() + 4 * i, input_dims.begin() + 4 * i + 4}});
    }
  } else if (!input_dims.empty() || !input_shapes.empty()) {
    throw CaffeError(origin + ": input_dim / input_shape given without an 'input:' name");
  }

  bool has_new = root.has("layer"), has_v1 = root.has("layers");
  if (has_new && has_v1)
    throw CaffeError(origin + ": the net mixes 'layer' and V1 'layers' entries; use one form");
  auto layer_msgs = root.get_msgs(has_v1 ? "layers" : "layer");
  if (layer_msgs.empty()) throw CaffeError(origin + ": no layers (is this a Caffe prototxt?)");

  for (const TextMsg* lm : layer_msgs) {
    LayerDef l;
    l.msg = lm;
    l.where = lm->where();
    l.name = lm->get_string("name", "");
    l.type = lm->get_string("type", "");
    if (has_v1 && lm->has("layer"))
      throw CaffeError(l.where + ": this is the V0 net format (layers { layer { ... } }), which Caffe itself "
                       "upgrades; convert it with Caffe's upgrade_net_proto_text first", CaffeError::kUnsupported);
    if (has_v1) {
      // V1 types are enum identifiers (CONVOLUTION); a quoted new name is accepted too.
      std::string mapped = v1_type_name(l.type);
      if (!mapped.empty()) l.type = mapped;
    }
    check_name(l.type, "layer type (layer '" + l.name + "')", l.where);
    if (l.name.empty()) l.name = l.type + "_" + std::to_string(net.layers.size());
    l.bottoms = lm->get_strings("bottom");
    l.tops = lm->get_strings("top");
    for (const auto& b : l.bottoms) check_name(b, "bottom name in layer '" + l.name + "'", l.where);
    for (const auto& t : l.tops) check_name(t, "top name in layer '" + l.name + "'", l.where);
    if (!in_test_phase(*lm)) continue;
    if (l.type == "Input") {
      const TextMsg* ip = lm->get_msg("input_param");
      auto shapes = ip ? ip->get_msgs("shape") : std::vector<const TextMsg*>{};
      if (shapes.empty()) throw CaffeError(l.where + ": Input layer '" + l.name + "' has no input_param { shape { dim: ... } }");
      if (shapes.size() != 1 && shapes.size() != l.tops.size())
        throw CaffeError(l.where + ": Input layer '" + l.name + "' has " + std::to_string(l.tops.size()) + " tops but " +
                         std::to_string(shapes.size()) + " shapes");
      for (size_t i = 0; i < l.tops.size(); ++i)
        net.inputs.push_back({l.tops[i], blob_shape(*shapes[shapes.size() == 1 ? 0 : i])});
      continue;
    }
    net.layers.push_back(std::move(l));
  }
  for (const auto& in : net.inputs) {
    if (in.shape.empty()) throw CaffeError(origin + ": input '" + in.name + "' has no dims");
    for (int64_t d : in.shape)
      if (d <= 0) throw CaffeError(origin + ": input '" + in.name + "' has a dim " + std::to_string(d) + " (must be > 0)");
  }
  return net;
}

}  // namespace caffe
}  // namespace minnow
