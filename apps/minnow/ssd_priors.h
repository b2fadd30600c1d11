// `minnow import --ssd-priors priorbox.json`: appends Caffe-SSD post-processing to an
// imported detector whose graph ends in raw box offsets and class logits (as ssd_fmnist).
#pragma once

#include <minnow/status.h>

#include <cstdint>
#include <string>
#include <vector>

namespace minnow {
namespace cli {

struct SsdPriorsOptions {
  std::string loc = "loc", conf = "conf";  // graph outputs to decode
  std::string output = "detections";       // name of the new (only) graph output
};

// Adds, from the prior configuration in `json_path`: one caffe::PriorBox per feature map
// (fed by zero-channel placeholder constants that carry only the map's and the image's
// H x W, so the priors are computed while planning), their Concat, a Softmax over the
// class logits and a caffe::DetectionOutput. The graph's outputs become that one
// [1, 1, K, 7] tensor (K run-time sized). The JSON format is priorbox.json's (README.md, SSD walkthrough).
Result<std::vector<uint8_t>> append_ssd_postprocess(const std::vector<uint8_t>& model,
                                                    const std::string& json_path,
                                                    const SsdPriorsOptions& options = {});

}  // namespace cli
}  // namespace minnow
