// The cpu_sparse backend's ops: each has a bid (throws PluginError to decline, with the
// reason) and a make (prepare: packs the weights once). Shared helpers for them.
#pragma once

#include "kernels.h"
#include "thresholds.h"

#include <minnow/plugin.hpp>
#include <minnow/services.h>

#include <memory>
#include <limits>
#include <string>

namespace minnow {
namespace cpu_sparse {

using plugin::Kernel;
using plugin::Node;
using plugin::PluginError;
using plugin::RunContext;

std::string shape_str(const mn_tensor& t);
std::string node_label(const Node& node);  // "node 'x' (Op)"

// Name of the kernel for a kind and block shape, static storage ("f32_sparse_fc_1x4").
const char* kernel_name(Kind kind, BlockShape shape);
// The kernel name of a fully connected layer on tiled panels (SparseMatrix::tiled).
inline const char* tiled_fc_kernel_name(const SparseMatrix& w) {
  if (w.tile_interleave == 4)
    return w.tile_width == 16 ? "f32_sparse_fc_1x4_tiled16__avx512" : "f32_sparse_fc_1x4_tiled8__avx2";
  return w.tile_width == 16 ? "f32_sparse_fc_csr_tiled16__avx512" : "f32_sparse_fc_csr_tiled8__avx2";
}

// Block rows per parallel_for chunk so one chunk is about 64k multiply-adds.
size_t block_row_grain(const SparseMatrix& w, double columns);
// The same for the rows-form kernels, in rows_units(w) (panels or block rows).
size_t rows_unit_grain(const SparseMatrix& w, double m);

struct BidResult {
  double cost;  // ns, in cpu_dense's units
  std::string reason;
};

BidResult fc_bid(const Node& node);  // Gemm and MatMul
std::unique_ptr<Kernel> fc_make(const Node& node);
BidResult conv_bid(const Node& node);
std::unique_ptr<Kernel> conv_make(const Node& node);

// The weight-matmul service (MN_SERVICE_MATMUL_SPARSE) for op plugins such as LSTM.
const mn_matmul_service* matmul_service();

// Base of the kernels here: remembers the node so run-time errors name it.
class SparseKernel : public Kernel {
 public:
  SparseKernel(const Node& node, const char* name) : label_(node_label(node)), name_(name) {}
  const char* name() const override { return name_; }
  [[noreturn]] void fail(const std::string& what) const { throw PluginError(label_ + ": " + what); }
  // A Relu / Clip that alone consumes the output is clamped in the kernels' stores (every
  // kernel of both forms has the epilogue), so that node is not run.
  bool fuse_clamp(float lo, float hi) override {
    lo_ = lo;
    hi_ = hi;
    return true;
  }

 protected:
  void set_name(const char* name) { name_ = name; }  // once the layout is chosen
  template <class Args>
  void clamp_into(Args* a) const {
    a->lo = lo_;
    a->hi = hi_;
  }

 private:
  std::string label_;
  const char* name_;
  float lo_ = -std::numeric_limits<float>::infinity(), hi_ = std::numeric_limits<float>::infinity();
};

}  // namespace cpu_sparse
}  // namespace minnow
