#include "weight_gemm.h"

#include <minnow/plugin.hpp>

namespace minnow {
namespace ops_lstm {

using plugin::PluginError;

namespace {

const mn_matmul_service* lookup(const mn_host_api* host, const char* name) {
  if (!host || !host->get_service) return nullptr;
  const auto* s = static_cast<const mn_matmul_service*>(host->get_service(host->host, name));
  // A provider built against an older layout lacks fields we call: ignore it.
  if (!s || s->struct_size < offsetof(mn_matmul_service, release) + sizeof(s->release) ||
      !s->prepare_weights || !s->multiply || !s->release)
    return nullptr;
  return s;
}

}  // namespace

bool matmul_available(const mn_host_api* host) {
  return lookup(host, MN_SERVICE_MATMUL_DENSE) || lookup(host, MN_SERVICE_MATMUL_SPARSE);
}

WeightGemm::WeightGemm(const mn_host_api* host, const float* w, int64_t n, int64_t k,
                       const std::string& what)
    : n_(n), k_(k), what_(what) {
  double best = 0;
  for (const char* name : {MN_SERVICE_MATMUL_DENSE, MN_SERVICE_MATMUL_SPARSE}) {
    const mn_matmul_service* s = lookup(host, name);
    if (!s) continue;
    double cost = 0;
    void* h = s->prepare_weights(w, n, k, &cost);
    if (!h) continue;  // declined (e.g. sparse below its threshold)
    if (!handle_ || cost < best) {
      if (handle_) svc_->release(handle_);
      svc_ = s;
      handle_ = h;
      best = cost;
    } else {
      s->release(h);
    }
  }
  if (!handle_)
    throw PluginError(what + ": no matmul service (" MN_SERVICE_MATMUL_DENSE " or " MN_SERVICE_MATMUL_SPARSE
                      ") accepted the weights; load the cpu_dense backend plugin",
                      MN_ERR_UNSUPPORTED);
}

WeightGemm& WeightGemm::operator=(WeightGemm&& o) noexcept {
  if (this != &o) {
    if (handle_) svc_->release(handle_);
    svc_ = o.svc_;
    handle_ = o.handle_;
    n_ = o.n_;
    k_ = o.k_;
    what_ = std::move(o.what_);
    o.svc_ = nullptr;
    o.handle_ = nullptr;
  }
  return *this;
}

WeightGemm::~WeightGemm() {
  if (handle_) svc_->release(handle_);
}

void WeightGemm::multiply(const mn_run_ctx* ctx, int64_t m, const float* x, int64_t ldx, float beta,
                          float* y, int64_t ldy) const {
  mn_status s = svc_->multiply(handle_, ctx, m, x, ldx, beta, y, ldy);
  if (s != MN_OK)
    throw PluginError(what_ + ": matmul provider '" + std::string(svc_->provider) + "' failed (status " +
                          std::to_string(int(s)) + ")",
                      MN_ERR_INTERNAL);
}

}  // namespace ops_lstm
}  // namespace minnow
