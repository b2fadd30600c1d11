// The C ABI glue every transform plugin shares: parse the model bytes, run the C++
// transform on the IR, append its compression-log record, serialise, and turn any
// exception into an mn_error naming the transform.
//
//   void my_transform(minnow::compress::TransformContext& ctx) { ... edit ctx.model ... }
//   MINNOW_DEFINE_TRANSFORM("prune", "0.1.0", "magnitude pruning", my_transform)
#pragma once

#include "options.h"

#include <minnow/ir.h>
#include <minnow/plugin.h>

#include <sstream>
#include <string>
#include <vector>

namespace minnow {
namespace compress {

struct TransformContext {
  ir::ModelIR model;
  Options options;
  std::ostringstream report;      // human-readable, returned to the caller
  std::string parameters = "{}";  // JSON of the parameters used, for the compression log
  std::string metric;             // set with metric_before/after when the transform measured one
  float metric_before = NAN, metric_after = NAN;
  const mn_host_api* host = nullptr;
  std::string name, version;
  uint64_t seed = 1;              // option "seed"
};

using TransformFn = void (*)(TransformContext&);

mn_status run_transform(const char* name, const char* version, TransformFn fn,
                        const mn_host_api* host, const uint8_t* model, size_t size,
                        const mn_options* options, mn_blob* out_model, mn_blob* out_report,
                        mn_error* err);

// Serialises `m` with its last compression record's size_after equal to the size of the
// bytes returned, in the compact layout when `m.compact` and a fixed point exists there
// (almost always), else in the plain layout. Throws when the IR does not serialise.
std::vector<uint8_t> serialize_recording_size(ir::ModelIR& m);

// Registers one transform table (name/description must be string literals).
mn_status register_transform(const mn_registrar* reg, const mn_transform* table, mn_error* err);

}  // namespace compress
}  // namespace minnow

#define MINNOW_DEFINE_TRANSFORM(NAME, VERSION, DESCRIPTION, FN)                              \
  namespace {                                                                                 \
  mn_status mn_transform_apply_(void*, const mn_host_api* host, const uint8_t* model,         \
                                size_t size, const mn_options* options, mn_blob* out_model,  \
                                mn_blob* out_report, mn_error* err) {                        \
    return ::minnow::compress::run_transform(NAME, VERSION, FN, host, model, size, options,  \
                                             out_model, out_report, err);                    \
  }                                                                                           \
  mn_status mn_transform_register_(const mn_host_api*, const mn_registrar* reg,               \
                                   mn_error* err) {                                          \
    static const mn_transform table = {sizeof(mn_transform), NAME, DESCRIPTION, nullptr,      \
                                       mn_transform_apply_};                                  \
    return ::minnow::compress::register_transform(reg, &table, err);                        \
  }                                                                                           \
  }                                                                                           \
  extern "C" __attribute__((visibility("default"))) const mn_plugin_info*                     \
  minnow_plugin_entry(void) {                                                                 \
    static const mn_plugin_info info = {MINNOW_ABI_MAJOR, MINNOW_ABI_MINOR,                   \
                                        "transform_" NAME, VERSION, DESCRIPTION,              \
                                        mn_transform_register_};                              \
    return &info;                                                                             \
  }
