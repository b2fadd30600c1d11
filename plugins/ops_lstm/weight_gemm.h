// A constant weight matrix multiplied through a backend's matmul service
// (core/include/minnow/services.h). This plugin has no GEMM of its own: at prepare time
// each registered provider (dense, sparse) is offered the weights, and the one reporting
// the lower cost keeps them (the sparse one declines below its sparsity threshold).
#pragma once

#include <minnow/plugin.h>
#include <minnow/services.h>

#include <cstdint>
#include <string>

namespace minnow {
namespace ops_lstm {

// Is any matmul provider registered with this host?
bool matmul_available(const mn_host_api* host);

class WeightGemm {
 public:
  WeightGemm() = default;
  // W is [n, k] row-major (copied / packed by the provider). Throws PluginError naming
  // `what` when no provider is registered or every provider declines.
  WeightGemm(const mn_host_api* host, const float* w, int64_t n, int64_t k, const std::string& what);
  WeightGemm(WeightGemm&& o) noexcept { *this = static_cast<WeightGemm&&>(o); }
  WeightGemm& operator=(WeightGemm&& o) noexcept;
  WeightGemm(const WeightGemm&) = delete;
  WeightGemm& operator=(const WeightGemm&) = delete;
  ~WeightGemm();

  // y[m, n] (row stride ldy) = x[m, k] (row stride ldx) * W^T + beta * y.
  void multiply(const mn_run_ctx* ctx, int64_t m, const float* x, int64_t ldx, float beta, float* y,
                int64_t ldy) const;
  const char* provider() const { return svc_ ? svc_->provider : "none"; }
  int64_t n() const { return n_; }
  int64_t k() const { return k_; }

 private:
  const mn_matmul_service* svc_ = nullptr;
  void* handle_ = nullptr;
  int64_t n_ = 0, k_ = 0;
  std::string what_;
};

}  // namespace ops_lstm
}  // namespace minnow
