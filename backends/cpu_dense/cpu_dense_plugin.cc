// Entry point of the cpu_dense plugin: registers one backend, "cpu_dense".
#include "ops.h"

#include <minnow/services.h>

namespace minnow {
namespace cpu_dense {
const mn_matmul_service* dense_matmul_service();  // matmul_service.cc
}  // namespace cpu_dense
}  // namespace minnow

namespace {

using minnow::cpu_dense::make_backend;

// The backend table lives as long as the library: a function-local static, made on the
// first registration (no global constructor). The host gets it without a destroy
// function, so a second registration (another engine in the same process, the library
// being loaded once) can never see a table someone else destroyed; the backend object is
// freed when the library is unloaded.
struct BackendHolder {
  mn_backend shared;                // handed to hosts; destroy == nullptr
  void (*destroy)(void*) = nullptr;  // the real one, for the library's unload

  BackendHolder() {
    minnow::plugin::export_backend(make_backend(), &shared);
    destroy = shared.destroy;
    shared.destroy = nullptr;
  }
  ~BackendHolder() {
    if (destroy) destroy(shared.user);
  }
};

mn_status register_cpu_dense(const mn_host_api* /*host*/, const mn_registrar* registrar,
                             mn_error* err) {
  return minnow::plugin::guarded(err, [&]() -> mn_status {
    if (!registrar || !registrar->add_backend)
      throw minnow::plugin::PluginError("registrar has no add_backend", MN_ERR_INVALID_ARGUMENT);
    static BackendHolder holder;
    mn_status s = registrar->add_backend(registrar->host, &holder.shared);
    if (s != MN_OK) return s;
    // The weight-GEMM service op plugins (LSTM, GRU ...) use; older registrars lack it.
    if (registrar->struct_size > offsetof(mn_registrar, add_service) && registrar->add_service)
      s = registrar->add_service(registrar->host, MN_SERVICE_MATMUL_DENSE,
                                 minnow::cpu_dense::dense_matmul_service());
    return s;
  });
}

}  // namespace

MINNOW_DEFINE_PLUGIN("cpu_dense", "0.1.0", "dense CPU reference kernels for ONNX ops",
                     register_cpu_dense)
