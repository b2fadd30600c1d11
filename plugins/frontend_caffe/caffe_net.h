// The network description of a deploy .prototxt: inputs and layers in order, in one form
// whichever of Caffe's syntaxes the file uses (new `layer {}` or V1 `layers {}` with enum
// types; `input:` + `input_dim:` / `input_shape {}` header or `Input` layers).
#pragma once

#include "caffe_text.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace minnow {
namespace caffe {

struct InputDef {
  std::string name;
  std::vector<int64_t> shape;
};

struct LayerDef {
  std::string name, type;
  std::vector<std::string> bottoms, tops;
  const TextMsg* msg = nullptr;  // the layer's text, for its *_param messages
  std::string where;             // "file:line"
  // The layer's parameter message (e.g. convolution_param) or null.
  const TextMsg* param(const char* field) const { return msg->get_msg(field); }
};

struct NetDef {
  std::string name;
  std::shared_ptr<TextMsg> root;  // owns the text tree the layers point into
  std::vector<InputDef> inputs;
  std::vector<LayerDef> layers;  // Input layers are turned into `inputs`
};

// Parses prototxt text. Layers excluded from the TEST phase (include/exclude rules) are
// dropped, as Caffe does when it builds a deploy net.
NetDef parse_net(const std::string& text, const std::string& origin);

}  // namespace caffe
}  // namespace minnow
