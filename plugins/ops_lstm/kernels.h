// Kernel factories of the ops_lstm plugin (one file each), used by the backend.
#pragma once

#include <minnow/plugin.hpp>

#include <memory>

namespace minnow {
namespace ops_lstm {

// ONNX RNN / LSTM / GRU (onnx_recurrent.cc). Throws PluginError on bad nodes.
std::unique_ptr<plugin::Kernel> make_onnx_recurrent(const plugin::Node& n, const mn_host_api* host);
// caffe::LSTM (caffe_lstm.cc; the op's contract is documented there).
std::unique_ptr<plugin::Kernel> make_caffe_lstm(const plugin::Node& n, const mn_host_api* host);
// Validation shared by the shape function, the bid and the kernel of caffe::LSTM.
void check_caffe_lstm(const plugin::Node& n);

}  // namespace ops_lstm
}  // namespace minnow
