#include "onnx_support.h"

#include <algorithm>
#include <set>

namespace minnow {
namespace onnx_frontend {

namespace {

const std::vector<std::string> kOps = [] {
  std::vector<std::string> v = {
      // phase 1
      "Gemm", "MatMul", "Conv", "Relu", "Add", "MaxPool", "Softmax", "Reshape", "Flatten",
      // element-wise
      "Sub", "Mul", "Div", "Pow", "Max", "Min", "Sum", "Mean", "PRelu", "Equal", "Less",
      "Greater", "LessOrEqual", "GreaterOrEqual", "Not", "And", "Or", "Xor", "Where",
      "Sigmoid", "Tanh", "Exp", "Log", "Sqrt", "Neg", "Abs", "Clip", "LeakyRelu", "Elu",
      "Selu", "Softplus", "Softsign", "HardSigmoid", "HardSwish", "Identity", "Dropout",
      "Reciprocal", "Floor", "Ceil", "Round", "Sign", "Erf", "Sin", "Cos", "Tan", "Asin",
      "Acos", "Atan", "Sinh", "Cosh", "Asinh", "Acosh", "Atanh", "ThresholdedRelu", "Celu",
      "IsNaN", "IsInf",
      // nn
      "ConvTranspose", "AveragePool", "GlobalAveragePool", "GlobalMaxPool", "LogSoftmax",
      "BatchNormalization", "InstanceNormalization", "LRN", "LayerNormalization",
      // shape / data movement
      "Concat", "Split", "Slice", "Transpose", "Squeeze", "Unsqueeze", "Gather", "Shape",
      "Size", "Expand", "ConstantOfShape", "Constant", "Pad", "Resize", "Upsample", "Cast", "Tile",
      "DepthToSpace", "SpaceToDepth", "Range",
      // reductions
      "ReduceMean", "ReduceMax", "ReduceMin", "ReduceSum", "ReduceProd", "ReduceL1",
      "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare", "ArgMax", "ArgMin",
      "TopK",
      // provided by op plugins (plugins/ops_lstm, plugins/ops_ssd)
      "RNN", "LSTM", "GRU", "NonMaxSuppression",
  };
  std::sort(v.begin(), v.end());
  return v;
}();

const onnx::AttributeProto* find_attr(const onnx::NodeProto& n, const std::string& name) {
  for (const auto& a : n.attribute())
    if (a.name() == name) return &a;
  return nullptr;
}

std::string attr_s(const onnx::NodeProto& n, const std::string& name, const std::string& def) {
  const auto* a = find_attr(n, name);
  return a && a->has_s() ? a->s() : def;
}

bool one_of(const std::string& v, std::initializer_list<const char*> allowed) {
  for (const char* a : allowed)
    if (v == a) return true;
  return false;
}

// Element types the frontend can represent (float16 / double / bfloat16 become float32).
bool importable_type(int64_t t) {
  switch (t) {
    case onnx::TensorProto::FLOAT: case onnx::TensorProto::UINT8: case onnx::TensorProto::INT8:
    case onnx::TensorProto::UINT16: case onnx::TensorProto::INT16: case onnx::TensorProto::INT32:
    case onnx::TensorProto::INT64: case onnx::TensorProto::BOOL: case onnx::TensorProto::FLOAT16:
    case onnx::TensorProto::DOUBLE: case onnx::TensorProto::UINT32: case onnx::TensorProto::UINT64:
    case onnx::TensorProto::BFLOAT16:
      return true;
    default:
      return false;
  }
}

}  // namespace

const std::vector<std::string>& supported_ops() { return kOps; }

bool is_supported_op(const std::string& op) { return std::binary_search(kOps.begin(), kOps.end(), op); }

std::string check_node(const onnx::NodeProto& n, int since) {
  const std::string& op = n.op_type();
  for (const auto& a : n.attribute()) {
    if (a.type() == onnx::AttributeProto::GRAPH || a.type() == onnx::AttributeProto::GRAPHS)
      return "attribute '" + a.name() + "' is a subgraph (control flow is not supported)";
    if (a.type() == onnx::AttributeProto::SPARSE_TENSOR || a.type() == onnx::AttributeProto::SPARSE_TENSORS)
      return "attribute '" + a.name() + "' is a sparse tensor (not supported)";
    if (a.type() == onnx::AttributeProto::TYPE_PROTO || a.type() == onnx::AttributeProto::TYPE_PROTOS)
      return "attribute '" + a.name() + "' is a type (not supported)";
    if (!a.ref_attr_name().empty()) return "attribute '" + a.name() + "' refers to a function attribute";
  }
  if (op == "Resize") {
    std::string mode = attr_s(n, "mode", "nearest");
    if (!one_of(mode, {"nearest", "linear", "cubic"})) return "Resize mode '" + mode + "' (supported: nearest, linear, cubic)";
    std::string ctm = attr_s(n, "coordinate_transformation_mode", "half_pixel");
    if (since >= 11 && !one_of(ctm, {"half_pixel", "asymmetric", "align_corners", "pytorch_half_pixel", "tf_half_pixel_for_nn",
                                     "tf_crop_and_resize"}))
      return "Resize coordinate_transformation_mode '" + ctm + "'";
    std::string nm = attr_s(n, "nearest_mode", "round_prefer_floor");
    if (!one_of(nm, {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"}))
      return "Resize nearest_mode '" + nm + "'";
  } else if (op == "Upsample") {
    std::string mode = attr_s(n, "mode", "nearest");
    if (!one_of(mode, {"nearest", "linear", "bilinear"})) return "Upsample mode '" + mode + "' (supported: nearest, linear)";
    if (since < 7) return "Upsample-1 (height_scale / width_scale attributes; opset 7 and later are supported)";
  } else if (op == "Pad") {
    std::string mode = attr_s(n, "mode", "constant");
    if (!one_of(mode, {"constant", "reflect", "edge"})) return "Pad mode '" + mode + "'";
  } else if (op == "Cast") {
    const auto* to = find_attr(n, "to");
    if (!to) return "Cast without attribute 'to'";
    if (!importable_type(to->i())) return "Cast to element type " + std::to_string(to->i()) + " (strings and complex numbers are not supported)";
  } else if (op == "Constant") {
    if (find_attr(n, "sparse_value")) return "Constant 'sparse_value' (sparse tensors are not supported)";
    if (find_attr(n, "value_string") || find_attr(n, "value_strings")) return "Constant of strings";
  } else if (op == "DepthToSpace") {
    std::string mode = attr_s(n, "mode", "DCR");
    if (!one_of(mode, {"DCR", "CRD"})) return "DepthToSpace mode '" + mode + "'";
  } else if (op == "ConvTranspose" || op == "Conv" || op == "MaxPool" || op == "AveragePool") {
    std::string ap = attr_s(n, "auto_pad", "NOTSET");
    if (!one_of(ap, {"NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"})) return op + " auto_pad '" + ap + "'";
  } else if (op == "BatchNormalization") {
    const auto* tm = find_attr(n, "training_mode");
    if (tm && tm->i() != 0) return "BatchNormalization training_mode=1 (training is not supported)";
    if (since < 9) {
      const auto* sp = find_attr(n, "spatial");
      if (sp && sp->i() == 0) return "BatchNormalization spatial=0";
    }
    for (int i = 1; i < n.output_size(); ++i)
      if (!n.output(i).empty()) return "BatchNormalization training outputs (mean/var) are not supported";
  } else if (op == "Dropout") {
    const auto* tm = find_attr(n, "is_test");
    if (since < 7 && tm && tm->i() == 0) return "Dropout is_test=0 (training)";
  }
  return "";
}

}  // namespace onnx_frontend
}  // namespace minnow
