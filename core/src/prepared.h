// PreparedModel internals shared by engine.cc and session.cc.
#pragma once

#include <minnow/engine.h>

#include "node_view.h"
#include "registry.h"

#include <map>
#include <mutex>

namespace minnow {

// A kernel prepared by a backend for one node; holds the backend (and so its library).
struct PreparedKernel {
  std::shared_ptr<BackendEntry> backend;
  mn_kernel k{};
  // The activation node (Relu / Clip) whose clamp this kernel applies to its output
  // (mn_kernel.fuse_clamp accepted it), or -1. That node is not run; its output is this
  // kernel's output 0. Set once, under the cache mutex, while a model is prepared.
  int fused_node = -1;
  // The Add node whose other input (addend_tensor) this kernel adds to its output 0 before
  // the clamp (mn_kernel.fuse_add accepted it), or -1; the session passes the addend after
  // the node's own inputs. fused_node is then the activation after that Add, if any.
  int fused_add_node = -1;
  int32_t addend_tensor = -1;
  // The node whose output this kernel computes itself from that node's inputs
  // (mn_kernel.fuse_producer accepted it), or -1; producer_act_node: the activation
  // between them whose clamp the producer applied (its output is this kernel's input), or
  // -1. Neither runs; the session passes the producer's inputs after this node's own (and
  // a fused addend), from producer_first_extra on, and this kernel's input
  // producer_input without data.
  int fused_producer_node = -1;
  int producer_act_node = -1;
  int32_t producer_input = -1, producer_first_extra = -1;
  ~PreparedKernel() {
    if (k.destroy) k.destroy(k.state);
  }
};

// Ops the core evaluates itself while planning (their outputs are values known from
// shapes or attributes), so they need no kernel.
bool core_evaluated_op(const ir::Node& node);

struct PreparedModel::Impl {
  std::shared_ptr<Registry> registry;
  std::vector<TensorState> static_states;  // shapes inferred with symbolic dims unknown
  std::vector<std::shared_ptr<PreparedKernel>> kernels;  // per node; null: core-evaluated
  std::vector<KernelChoice> choices;
  BackendPolicy policy;
  // Kernels prepared for other policies (sessions that force / forbid a backend).
  mutable std::mutex cache_mutex;
  mutable std::map<std::pair<int, std::string>, std::shared_ptr<PreparedKernel>> cache;

  // Offers each chosen kernel the clamp of the Relu / Clip that alone consumes its output
  // (fuse_activations in engine.cc); marks the choices of the nodes it absorbed.
  void fuse_activations(const Model& model, const std::vector<std::shared_ptr<PreparedKernel>>& kernels,
                        std::vector<KernelChoice>* choices) const;
  // Offers each kernel the node that alone writes one of its inputs (mn_kernel.
  // fuse_producer, same backend); marks the producers it absorbed (fuse_producers in
  // engine.cc). Runs after fuse_activations: a producer's clamp is part of what it hands on.
  void fuse_producers(const Model& model, const std::vector<std::shared_ptr<PreparedKernel>>& kernels,
                      std::vector<KernelChoice>* choices) const;
  // Tells each kernel with mn_kernel.set_producer which kernel of its backend writes each
  // of its inputs (after the fusions: the kernel that runs for the writer).
  void tell_producers(const Model& model, const std::vector<std::shared_ptr<PreparedKernel>>& kernels) const;
  // Chooses and prepares a kernel for every node under `policy`.
  Status select(const Model& model, const BackendPolicy& policy,
                std::vector<std::shared_ptr<PreparedKernel>>* kernels,
                std::vector<KernelChoice>* choices) const;
};

}  // namespace minnow
