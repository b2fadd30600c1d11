// One converter per Caffe layer type (grouped by kind in caffe_layers_*.cc). Each reads
// the layer's bottoms, parameters and blobs through Ctx, emits standard nodes (or nodes
// in domain "caffe" for SSD / LSTM / Normalize) and declares its tops with their shapes.
#pragma once

#include "caffe_convert.h"

namespace minnow {
namespace caffe {

using LayerFn = void (*)(Ctx&, const LayerDef&);

// Converter for a layer type, or null if unsupported.
LayerFn find_converter(const std::string& type);
// Layer types that only matter for training (losses, accuracy, Silence): dropped.
bool is_training_only(const std::string& type);
// Data-source layers (Data, ImageData ...): a deploy net replaces them with inputs.
bool is_data_layer(const std::string& type);

// caffe_layers_conv.cc
void convert_convolution(Ctx&, const LayerDef&);
void convert_deconvolution(Ctx&, const LayerDef&);
void convert_inner_product(Ctx&, const LayerDef&);
void convert_pooling(Ctx&, const LayerDef&);
// caffe_layers_elementwise.cc
void convert_relu(Ctx&, const LayerDef&);
void convert_prelu(Ctx&, const LayerDef&);
void convert_sigmoid(Ctx&, const LayerDef&);
void convert_tanh(Ctx&, const LayerDef&);
void convert_absval(Ctx&, const LayerDef&);
void convert_elu(Ctx&, const LayerDef&);
void convert_power(Ctx&, const LayerDef&);
void convert_dropout(Ctx&, const LayerDef&);
void convert_eltwise(Ctx&, const LayerDef&);
void convert_batchnorm(Ctx&, const LayerDef&);
void convert_scale(Ctx&, const LayerDef&);
void convert_bias(Ctx&, const LayerDef&);
void convert_softmax(Ctx&, const LayerDef&);
// caffe_layers_shape.cc
void convert_concat(Ctx&, const LayerDef&);
void convert_slice(Ctx&, const LayerDef&);
void convert_split(Ctx&, const LayerDef&);
void convert_flatten(Ctx&, const LayerDef&);
void convert_reshape(Ctx&, const LayerDef&);
void convert_permute(Ctx&, const LayerDef&);
// caffe_layers_caffe_ops.cc (domain "caffe")
void convert_normalize(Ctx&, const LayerDef&);
void convert_prior_box(Ctx&, const LayerDef&);
void convert_detection_output(Ctx&, const LayerDef&);
void convert_lstm(Ctx&, const LayerDef&);

}  // namespace caffe
}  // namespace minnow
