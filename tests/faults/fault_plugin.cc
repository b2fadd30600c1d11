// A deliberately broken plugin, written against the raw C ABI (not plugin.hpp, whose
// wrapper would hide most of these faults): backend "fault_backend" runs the ops of
// domain "fault", each of which misbehaves in one way the core must contain:
//   fault::Throw        kernel lets a C++ exception escape through the C boundary
//   fault::Error        kernel returns MN_ERR_INVALID_ARGUMENT with a message
//   fault::NullKernel   prepare returns MN_OK but no run function
//   fault::PrepareFails prepare returns an error
//   fault::BadShape     kernel reports (writes into its mn_tensor) an output shape other
//                       than the one the op's shape function declared
//   fault::HugeScratch  kernel asks for SIZE_MAX bytes of scratch
//   fault::HugeShape    shape function declares an output whose element count overflows
//   fault::ShapeThrows  shape function lets an exception escape
//   fault::PrepareThrows prepare lets an exception escape
//   fault::Identity     a correct copy (the control: runs next to the faulty ones)
#include <minnow/plugin.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>

namespace {

int64_t elements(const mn_tensor& t) {
  int64_t n = 1;
  for (int i = 0; i < t.rank; ++i) n *= t.dims[i];
  return n;
}

std::string op_of(const mn_node* n) { return n->op ? n->op : ""; }

mn_status identity_run(void*, const mn_run_ctx*, const mn_tensor* in, int32_t, mn_tensor* out, int32_t, mn_error*) {
  std::memcpy(out[0].data, in[0].data, size_t(elements(in[0])) * 4);
  return MN_OK;
}

mn_status throw_run(void*, const mn_run_ctx*, const mn_tensor*, int32_t, mn_tensor*, int32_t, mn_error*) {
  throw std::runtime_error("fault plugin: exception thrown straight through the C ABI");
}

mn_status error_run(void*, const mn_run_ctx*, const mn_tensor*, int32_t, mn_tensor*, int32_t, mn_error* err) {
  std::snprintf(err->message, sizeof err->message, "fault plugin: the kernel refuses to run");
  return MN_ERR_INVALID_ARGUMENT;
}

mn_status bad_shape_run(void* s, const mn_run_ctx* c, const mn_tensor* in, int32_t ni, mn_tensor* out, int32_t no,
                        mn_error* e) {
  identity_run(s, c, in, ni, out, no, e);  // writes only what it was given room for ...
  out[0].dims[0] *= 2;                     // ... but claims twice as many rows
  return MN_OK;
}

size_t huge_scratch(void*, const mn_tensor*, int32_t, const mn_tensor*, int32_t) { return SIZE_MAX; }

void bid(void*, const mn_node* n, mn_bid* out) {
  if (n->domain && std::strcmp(n->domain, "fault") == 0) {
    out->cost = 1;
    std::snprintf(out->reason, sizeof out->reason, "fault backend");
  } else {
    std::snprintf(out->reason, sizeof out->reason, "fault backend runs only fault:: ops");
  }
}

mn_status prepare(void*, const mn_node* n, mn_kernel* k, mn_error* err) {
  std::string op = op_of(n);
  std::memset(k, 0, sizeof *k);
  k->struct_size = sizeof *k;
  k->inplace_input = -1;
  k->name = "fault_kernel";
  if (op == "PrepareFails") {
    std::snprintf(err->message, sizeof err->message, "fault plugin: cannot prepare node '%s'", n->name);
    return MN_ERR_UNSUPPORTED;
  }
  if (op == "NullKernel") return MN_OK;  // run stays null
  if (op == "PrepareThrows") throw std::runtime_error("fault plugin: exception from prepare");
  k->run = op == "Throw" ? throw_run : op == "Error" ? error_run : op == "BadShape" ? bad_shape_run : identity_run;
  if (op == "HugeScratch") k->scratch_bytes = huge_scratch;
  return MN_OK;
}

mn_status shape(void*, const mn_node* n, const mn_shape_ctx* ctx, mn_error*) {
  const mn_tensor& x = n->inputs[0];
  if (op_of(n) == "ShapeThrows") throw std::runtime_error("fault plugin: exception from the shape function");
  if (op_of(n) == "HugeShape") {
    const int64_t dims[3] = {int64_t(1) << 31, int64_t(1) << 31, int64_t(1) << 31};  // 2^93 elements
    return ctx->set_output(ctx->host, 0, x.dtype, 3, dims);
  }
  return ctx->set_output(ctx->host, 0, x.dtype, x.rank, x.dims);
}

mn_status register_plugin(const mn_host_api*, const mn_registrar* reg, mn_error* err) {
  static mn_backend backend;
  std::memset(&backend, 0, sizeof backend);
  backend.struct_size = sizeof backend;
  backend.name = "fault_backend";
  backend.bid = bid;
  backend.prepare = prepare;
  if (reg->add_backend(reg->host, &backend) != MN_OK) {
    std::snprintf(err->message, sizeof err->message, "add_backend failed");
    return MN_ERR_INTERNAL;
  }
  static const char* const kOps[] = {"Throw", "Error", "NullKernel", "PrepareFails", "BadShape", "HugeScratch", "HugeShape", "ShapeThrows", "PrepareThrows", "Identity"};
  for (const char* op : kOps) {
    mn_op_def def;
    std::memset(&def, 0, sizeof def);
    def.struct_size = sizeof def;
    def.domain = "fault";
    def.name = op;
    def.since_version = 1;
    def.max_version = 1;
    def.infer_shapes = shape;
    if (reg->add_op(reg->host, &def) != MN_OK) {
      std::snprintf(err->message, sizeof err->message, "add_op %s failed", op);
      return MN_ERR_INTERNAL;
    }
  }
  return MN_OK;
}

const mn_plugin_info kInfo = {MINNOW_ABI_MAJOR, MINNOW_ABI_MINOR, "fault_plugin", "0.0.1",
                              "misbehaving kernels for the fault-containment tests", register_plugin};

}  // namespace

extern "C" MINNOW_PLUGIN_EXPORT const mn_plugin_info* minnow_plugin_entry(void) { return &kInfo; }
