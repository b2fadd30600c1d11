#include "common.h"

namespace minnow {
namespace cpu_dense {

std::string Dims::str() const {
  std::string s = "[";
  for (int i = 0; i < rank; ++i) {
    if (i) s += ",";
    s += std::to_string(d[i]);
  }
  return s + "]";
}

std::string shape_str(const mn_tensor& t) {
  if (t.rank < 0) return "[?]";
  std::string s = "[";
  for (int i = 0; i < t.rank; ++i) {
    if (i) s += ",";
    s += t.dims[i] < 0 ? std::string("?") : std::to_string(t.dims[i]);
  }
  return s + "]";
}

const char* dtype_name(int32_t dtype) {
  switch (dtype) {
    case MN_UNDEFINED: return "undefined";
    case MN_F32: return "float32";
    case MN_F16: return "float16";
    case MN_I8: return "int8";
    case MN_U8: return "uint8";
    case MN_I32: return "int32";
    case MN_I64: return "int64";
    case MN_BOOL: return "bool";
    case MN_I16: return "int16";
    case MN_U16: return "uint16";
    case MN_U32: return "uint32";
    case MN_U64: return "uint64";
    case MN_F64: return "float64";
    case MN_BF16: return "bfloat16";
    case MN_STRING: return "string";
    default: return "unknown dtype";
  }
}

std::string node_label(const Node& node) {
  return "node '" + node.name() + "' (" + node.op() + ")";
}

void require_inputs(const Node& node, int min_count, int max_count) {
  // Trailing omitted optional inputs may or may not be listed; count the present prefix.
  int n = node.num_inputs();
  if (n < min_count)
    node.fail("expects at least " + std::to_string(min_count) + " inputs, got " +
              std::to_string(n));
  if (max_count >= 0 && n > max_count)
    node.fail("expects at most " + std::to_string(max_count) + " inputs, got " + std::to_string(n));
  for (int i = 0; i < min_count; ++i)
    if (!node.has_input(i)) node.fail("required input " + std::to_string(i) + " is missing");
  if (node.num_outputs() < 1) node.fail("has no output");
}

void require_input_dtype(const Node& node, int i, std::initializer_list<int32_t> allowed) {
  int32_t dt = node.input(i).dtype();
  for (int32_t a : allowed)
    if (dt == a) return;
  std::string list;
  for (int32_t a : allowed) list += std::string(list.empty() ? "" : "/") + dtype_name(a);
  node.fail("input " + std::to_string(i) + " has dtype " + dtype_name(dt) +
                ", cpu_dense supports " + list,
            MN_ERR_UNSUPPORTED);
}

void require_same_dtype(const Node& node, int a, int b) {
  if (node.input(a).dtype() != node.input(b).dtype())
    node.fail(std::string("inputs ") + std::to_string(a) + " and " + std::to_string(b) +
              " differ in dtype (" + dtype_name(node.input(a).dtype()) + " vs " +
              dtype_name(node.input(b).dtype()) + ")");
}

int normalize_axis(const Node& node, int64_t axis, int rank, const char* what) {
  if (axis < -rank || axis >= rank)
    node.fail(std::string(what) + " " + std::to_string(axis) + " out of range for rank " +
              std::to_string(rank));
  return static_cast<int>(axis < 0 ? axis + rank : axis);
}

void OpKernel::check_output(const mn_tensor* outputs, int num_outputs, int i, int32_t dtype,
                            const Dims& expected) const {
  if (i >= num_outputs) fail("output " + std::to_string(i) + " missing at run time");
  const mn_tensor& o = outputs[i];
  if (o.dtype != dtype)
    fail("output " + std::to_string(i) + " has dtype " + dtype_name(o.dtype) + ", expected " +
         dtype_name(dtype));
  if (Dims::of(o) != expected || o.rank < 0)
    fail("output " + std::to_string(i) + " has shape " + shape_str(o) + ", kernel computes " +
         expected.str());
  if (!o.data && expected.numel() > 0) fail("output " + std::to_string(i) + " has no data");
}

void OpKernel::check_dtype(const mn_tensor& t, int32_t dtype, const char* what) const {
  if (t.dtype != dtype)
    fail(std::string(what) + " has dtype " + dtype_name(t.dtype) + ", expected " +
         dtype_name(dtype));
}

}  // namespace cpu_dense
}  // namespace minnow
