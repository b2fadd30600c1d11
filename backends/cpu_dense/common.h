// Shared helpers for the cpu_dense reference kernels: shapes, attribute checks, errors.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <minnow/plugin.hpp>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace minnow {
namespace cpu_dense {

using plugin::Kernel;
using plugin::Node;
using plugin::PluginError;
using plugin::RunContext;
using plugin::TensorRef;

// A fixed-capacity shape, so kernels can work with shapes at run time without allocating.
struct Dims {
  int rank = 0;
  int64_t d[MN_MAX_RANK] = {0};

  static Dims of(const mn_tensor& t) {
    Dims s;
    s.rank = t.rank < 0 ? 0 : t.rank;
    for (int i = 0; i < s.rank; ++i) s.d[i] = t.dims[i];
    return s;
  }
  int64_t operator[](int i) const { return d[i]; }
  int64_t& operator[](int i) { return d[i]; }
  int64_t numel() const {
    int64_t n = 1;
    for (int i = 0; i < rank; ++i) n *= d[i];
    return n;
  }
  // Product of d[begin, end).
  int64_t prod(int begin, int end) const {
    int64_t n = 1;
    for (int i = begin; i < end; ++i) n *= d[i];
    return n;
  }
  bool operator==(const Dims& o) const {
    if (rank != o.rank) return false;
    for (int i = 0; i < rank; ++i)
      if (d[i] != o.d[i]) return false;
    return true;
  }
  bool operator!=(const Dims& o) const { return !(*this == o); }
  std::string str() const;
};

std::string shape_str(const mn_tensor& t);
const char* dtype_name(int32_t dtype);

// Elements of a tensor whose shape is fully known.
inline int64_t numel(const mn_tensor& t) {
  int64_t n = 1;
  for (int i = 0; i < t.rank; ++i) n *= t.dims[i];
  return n;
}

// Elements for a cost estimate at bid time, where dims may still be unknown (< 0):
// an unknown dim counts as 1, so an estimate is always available.
inline double numel_estimate(const mn_tensor& t) {
  double n = 1;
  for (int i = 0; i < t.rank; ++i) n *= t.dims[i] < 0 ? 1.0 : static_cast<double>(t.dims[i]);
  return n;
}
inline double dim_estimate(const mn_tensor& t, int i) {
  if (t.rank < 0 || i >= t.rank || t.dims[i] < 0) return 1.0;
  return static_cast<double>(t.dims[i]);
}

// NaN test that also compiles (as false) for integer element types.
template <class T>
inline bool is_nan(T v) {
  if constexpr (std::is_floating_point<T>::value)
    return std::isnan(v);
  else
    return false;
}

inline bool rank_known(const mn_tensor& t) { return t.rank >= 0; }
inline bool dim_known(const mn_tensor& t, int i) { return t.rank > i && t.dims[i] >= 0; }
inline bool present(const mn_tensor& t) { return t.dtype != MN_UNDEFINED; }

// "node 'x' (Op)" — the prefix every error message of a node carries.
std::string node_label(const Node& node);

// Refuse (at bid) / reject (at prepare) unless input `i` exists and has one of `allowed`.
void require_input_dtype(const Node& node, int i, std::initializer_list<int32_t> allowed);
void require_inputs(const Node& node, int min_count, int max_count);
// Bid helper: the element types the reference kernels of binary/unary ops cover.
void require_same_dtype(const Node& node, int a, int b);

// Normalises a possibly negative axis against `rank`, or fails naming the op.
int normalize_axis(const Node& node, int64_t axis, int rank, const char* what = "axis");

// Kernels hand their loop body to RunContext::parallel_for as an rvalue
// (std::move(body)): its forwarding-reference template does not accept a named lambda.
//
// Items per parallel_for chunk so that one chunk is about `target` units of work:
// big enough to amortise the scheduling, small enough to balance.
inline size_t grain_for(double work_per_item, double target = 32768.0) {
  if (work_per_item <= 0) return 1 << 16;
  double g = target / work_per_item;
  return g < 1.0 ? 1 : static_cast<size_t>(g);
}

// Elements per parallel chunk for cheap element-wise loops.
constexpr size_t kElementwiseGrain = 16384;

// Base of every kernel here: remembers which node it runs, so run-time errors name it.
class OpKernel : public Kernel {
 public:
  OpKernel(const Node& node, const char* kernel_name)
      : label_(node_label(node)), kernel_name_(kernel_name) {}
  const char* name() const override { return kernel_name_; }
  [[noreturn]] void fail(const std::string& what) const { throw PluginError(label_ + ": " + what); }
  // Output `i` must have the element type and shape this kernel computed.
  void check_output(const mn_tensor* outputs, int num_outputs, int i, int32_t dtype,
                    const Dims& expected) const;
  void check_dtype(const mn_tensor& t, int32_t dtype, const char* what) const;
  const std::string& label() const { return label_; }

 private:
  std::string label_;
  const char* kernel_name_;
};

}  // namespace cpu_dense
}  // namespace minnow
