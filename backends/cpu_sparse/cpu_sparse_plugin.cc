// Entry point of the cpu_sparse plugin: one backend, "cpu_sparse", and the service
// MN_SERVICE_MATMUL_SPARSE.
#include "backend.h"
#include "ops.h"

#include <minnow/services.h>

namespace {

// As in cpu_dense: the table lives as long as the library (function-local static, no
// global constructor) and is handed out without a destroy function, so a second engine in
// the same process never sees a destroyed table.
struct BackendHolder {
  mn_backend shared;
  void (*destroy)(void*) = nullptr;
  BackendHolder() {
    minnow::plugin::export_backend(minnow::cpu_sparse::make_backend(), &shared);
    destroy = shared.destroy;
    shared.destroy = nullptr;
  }
  ~BackendHolder() {
    if (destroy) destroy(shared.user);
  }
};

mn_status register_cpu_sparse(const mn_host_api*, const mn_registrar* registrar, mn_error* err) {
  return minnow::plugin::guarded(err, [&]() -> mn_status {
    if (!registrar || !registrar->add_backend || !registrar->add_service)
      throw minnow::plugin::PluginError("registrar lacks add_backend / add_service");
    static BackendHolder holder;
    mn_status s = registrar->add_backend(registrar->host, &holder.shared);
    if (s != MN_OK) return s;
    return registrar->add_service(registrar->host, MN_SERVICE_MATMUL_SPARSE,
                                  minnow::cpu_sparse::matmul_service());
  });
}

}  // namespace

MINNOW_DEFINE_PLUGIN("cpu_sparse", "0.1.0",
                     "sparse CPU kernels (CSR, 1x4/4x1/1x8 blocks; Highway SIMD) for pruned "
                     "Gemm, MatMul and Conv",
                     register_cpu_sparse)
