// The plugin as the core sees it: the exported entry point, registration, the backend
// table and its bids for ops it does not have.
#include <dlfcn.h>
#include <doctest/doctest.h>
#include <minnow/services.h>

#include <cstring>
#include <minnow/plugin.hpp>
#include <string>
#include <vector>

#include "ops.h"
#include "test_util.h"

using namespace cdt;

namespace {

struct Registered {
  std::vector<const mn_backend*> backends;
  std::vector<std::string> services;
  int others = 0;  // ops, transforms, frontends: none expected
};

mn_status add_backend(void* host, const mn_backend* b) {
  static_cast<Registered*>(host)->backends.push_back(b);
  return MN_OK;
}
mn_status add_other(void* host, const void*) {
  ++static_cast<Registered*>(host)->others;
  return MN_OK;
}

}  // namespace

TEST_SUITE("plugin") {
#ifdef CPU_DENSE_PLUGIN_PATH
  TEST_CASE("the plugin module exports its entry point and registers one backend") {
    void* lib = dlopen(CPU_DENSE_PLUGIN_PATH, RTLD_NOW | RTLD_LOCAL);
    if (!lib) FAIL(std::string(dlerror()));
    auto entry = reinterpret_cast<mn_plugin_entry_fn>(dlsym(lib, MINNOW_PLUGIN_ENTRY_SYMBOL));
    REQUIRE(static_cast<bool>(entry));
    // Nothing but the entry point is exported.
    CHECK(dlsym(lib, "_ZN6minnow9cpu_dense12make_backendEv") == nullptr);
    const mn_plugin_info* info = entry();
    REQUIRE(info != nullptr);
    CHECK(info->abi_major == MINNOW_ABI_MAJOR);
    CHECK(info->abi_minor == MINNOW_ABI_MINOR);
    CHECK(std::string(info->name) == "cpu_dense");
    CHECK(std::string(info->version) == "0.1.0");

    Registered reg;
    mn_registrar r;
    std::memset(&r, 0, sizeof(r));
    r.struct_size = sizeof(r);
    r.host = &reg;
    r.add_backend = add_backend;
    r.add_op = [](void* h, const mn_op_def* d) { return add_other(h, d); };
    r.add_transform = [](void* h, const mn_transform* t) { return add_other(h, t); };
    r.add_frontend = [](void* h, const mn_frontend* f) { return add_other(h, f); };
    r.add_service = [](void* h, const char* name, const void*) {
      static_cast<Registered*>(h)->services.push_back(name);
      return MN_OK;
    };
    mn_host_api host;
    std::memset(&host, 0, sizeof(host));
    host.struct_size = sizeof(host);
    host.abi_major = MINNOW_ABI_MAJOR;
    host.abi_minor = MINNOW_ABI_MINOR;
    mn_error err;
    err.message[0] = 0;
    REQUIRE(info->register_plugin(&host, &r, &err) == MN_OK);
    REQUIRE(info->register_plugin(&host, &r, &err) == MN_OK);  // a second engine
    REQUIRE(reg.backends.size() == 2);
    CHECK(reg.others == 0);
    // Besides the backend, each registration offers the dense weight-matmul service.
    CHECK(reg.services ==
          std::vector<std::string>{MN_SERVICE_MATMUL_DENSE, MN_SERVICE_MATMUL_DENSE});
    const mn_backend* b = reg.backends[0];
    CHECK(reg.backends[1] == b);  // one table, valid for the library's lifetime
    CHECK(b->struct_size == sizeof(mn_backend));
    CHECK(std::string(b->name) == "cpu_dense");
    CHECK(!b->destroy);  // shared: hosts must not free it

    // The registered table bids and runs like the one the tests use.
    std::vector<Tensor> in{Tensor::f32({3}, {-1, 0, 1})}, out{Tensor::out({3})};
    std::vector<mn_tensor> iv{in[0].view(false)}, ov{out[0].view(false)};
    FakeNode node("Relu", 14);
    mn_node n = node.build(iv, ov);
    mn_bid bd;
    std::memset(&bd, 0, sizeof(bd));
    bd.struct_size = sizeof(bd);
    b->bid(b->user, &n, &bd);
    CHECK(bd.cost >= 1.0);
    mn_kernel k;
    REQUIRE(b->prepare(b->user, &n, &k, &err) == MN_OK);
    CHECK(std::string(k.name) == "f32_relu__hwy");
    k.destroy(k.state);
    // The registration's error path: no add_backend.
    mn_registrar bad = r;
    bad.add_backend = nullptr;
    CHECK(info->register_plugin(&host, &bad, &err) != MN_OK);
    CHECK(std::strlen(err.message) > 0);
    dlclose(lib);
  }
#endif

  TEST_CASE("bids for unknown ops, other domains and versions are refusals with a reason") {
    std::vector<Tensor> in{Tensor::f32({2})}, out{Tensor::out({2})};
    mn_bid b = bid(FakeNode("NoSuchOp", 13), in, out);
    CHECK(b.cost < 0);
    CHECK(std::string(b.reason) == "op NoSuchOp not implemented");
    b = bid(FakeNode("Relu", 13).domain("com.example"), in, out);
    CHECK(b.cost < 0);
    CHECK(std::string(b.reason).find("domain") != std::string::npos);
    b = bid(FakeNode("Relu", 99), in, out);
    CHECK(b.cost < 0);
    CHECK(std::string(b.reason).find("version 99") != std::string::npos);
    b = bid(FakeNode("Relu", 13).domain("ai.onnx"), in, out);
    CHECK(b.cost >= 1.0);

    // prepare of an unknown op is an error status, not a crash
    std::vector<mn_tensor> iv{in[0].view(false)}, ov{out[0].view(false)};
    FakeNode node("NoSuchOp", 13);
    mn_node n = node.build(iv, ov);
    mn_kernel k;
    mn_error err;
    CHECK(backend().prepare(backend().user, &n, &k, &err) == MN_ERR_UNSUPPORTED);
  }

  TEST_CASE("every op in the table refuses a node without inputs or outputs") {
    size_t count = 0;
    const minnow::cpu_dense::OpEntry* ops = minnow::cpu_dense::op_table(&count);
    CHECK(count >= 44);
    std::vector<Tensor> none, out{Tensor::out({2})};
    for (size_t i = 0; i < count; ++i) {
      CAPTURE(ops[i].op);
      CHECK(ops[i].since_version >= 1);
      CHECK(ops[i].max_version == minnow::cpu_dense::kMaxOpset);
      CHECK(bid(FakeNode(ops[i].op, ops[i].max_version), none, out).cost < 0);
      CHECK(bid(FakeNode(ops[i].op, ops[i].max_version), none, none).cost < 0);
      std::vector<Tensor> one{Tensor::f32({2})};
      CHECK(bid(FakeNode(ops[i].op, ops[i].max_version), one, none).cost < 0);
      // an op appears once
      for (size_t j = 0; j < i; ++j) CHECK(std::string(ops[j].op) != ops[i].op);
    }
  }
}
