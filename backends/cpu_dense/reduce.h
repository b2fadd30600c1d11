// Reductions over a set of axes (ReduceMean / ReduceMax / ReduceSum, ArgMax): the shared
// parsing of axes (attribute, or input for ReduceSum >= 13 and every Reduce* >= 18),
// keepdims and noop_with_empty_axes, and the walk that visits every input element with
// the offset of the output element it reduces into.
#pragma once

#include <vector>

#include "data_ops.h"
#include "unary.h"

namespace minnow {
namespace cpu_dense {

struct ReducePlan {
  Dims out;            // output dims (with keepdims applied)
  bool reduced[MN_MAX_RANK] = {false};
  int64_t count = 1;   // input elements per output element
  bool identity = false;
};

// `axes` as given (possibly negative); empty means all dims unless noop_with_empty_axes.
inline ReducePlan plan_reduce(const OpKernel& k, const Dims& xd, const std::vector<int64_t>& axes,
                              bool keepdims, bool noop_empty) {
  ReducePlan p;
  if (axes.empty() && noop_empty) {
    p.identity = true;
    p.out = xd;
    return p;
  }
  for (int64_t a : axes) {
    if (a < -xd.rank || a >= xd.rank)
      k.fail("axis " + std::to_string(a) + " out of range for rank " + std::to_string(xd.rank));
    p.reduced[a < 0 ? a + xd.rank : a] = true;
  }
  for (int i = 0; i < xd.rank; ++i) {
    if (axes.empty()) p.reduced[i] = true;
    if (p.reduced[i]) {
      p.count *= xd[i];
      if (keepdims) p.out[p.out.rank++] = 1;
    } else {
      p.out[p.out.rank++] = xd[i];
    }
  }
  return p;
}

// fn(input_index, output_index) for every input element, in input order.
template <class Fn>
void for_each_reduced(const Dims& xd, const ReducePlan& p, Fn&& fn) {
  int64_t ostride[MN_MAX_RANK];  // output element stride per input dim (0 if reduced)
  int64_t acc = 1;
  for (int i = xd.rank - 1; i >= 0; --i) {
    ostride[i] = p.reduced[i] ? 0 : acc;
    if (!p.reduced[i]) acc *= xd[i];
  }
  const int64_t n = xd.numel();
  int64_t idx[MN_MAX_RANK] = {0}, o = 0;
  for (int64_t i = 0; i < n; ++i) {
    fn(i, o);
    for (int d = xd.rank - 1; d >= 0; --d) {  // odometer step, keeping `o` in sync
      if (++idx[d] < xd[d]) {
        o += ostride[d];
        break;
      }
      o -= ostride[d] * (xd[d] - 1);
      idx[d] = 0;
    }
  }
}

// The axes a Reduce* node names: input 1 when `input_form`, else the attribute.
inline std::vector<int64_t> reduce_axes(const OpKernel& k, bool input_form,
                                        const std::vector<int64_t>& attr, const mn_tensor* in,
                                        int num_inputs) {
  if (!input_form) return attr;
  if (num_inputs > 1 && present(in[1])) return read_ints(k, in[1], "axes");
  return {};
}

}  // namespace cpu_dense
}  // namespace minnow
