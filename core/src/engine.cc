#include <minnow/engine.h>

#include "log.h"
#include "prepared.h"

#include <cstddef>
#include <limits>

#include <boost/dll/runtime_symbol_info.hpp>
#include <boost/filesystem.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <sstream>

namespace minnow {

namespace {

std::vector<std::string> split_paths(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ':'))
    if (!item.empty()) out.push_back(item);
  return out;
}

struct OptionArrays {
  std::vector<const char*> keys, values;
  mn_options opts{};
  explicit OptionArrays(const std::vector<std::pair<std::string, std::string>>& o) {
    for (const auto& kv : o) {
      keys.push_back(kv.first.c_str());
      values.push_back(kv.second.c_str());
    }
    opts.struct_size = sizeof(mn_options);
    opts.count = static_cast<int32_t>(o.size());
    opts.keys = keys.data();
    opts.values = values.data();
  }
};

std::vector<uint8_t> take_blob(mn_blob& b) {
  std::vector<uint8_t> v(b.data, b.data + b.size);
  if (b.free_fn) b.free_fn(b.data, b.size);
  b.data = nullptr;
  return v;
}

}  // namespace

bool core_evaluated_op(const ir::Node& node) {
  return node.domain.empty() && (node.op == "Shape" || node.op == "Constant");
}

Engine::~Engine() = default;

std::string Engine::default_plugin_folder() const {
  // Relative to libminnow itself, so a relocated install still finds its plugins.
  boost::filesystem::path lib = boost::dll::this_line_location();
  return (lib.parent_path() / "minnow" / "plugins").string();
}

Result<std::shared_ptr<Engine>> Engine::create(const EngineOptions& options) {
  std::shared_ptr<Engine> e(new Engine());
  e->registry_ = std::make_shared<Registry>();
  register_standard_ops(*e->registry_);
  for (const auto& p : options.plugin_paths) MINNOW_RETURN_IF_ERROR(e->registry_->load_path(p));
  if (options.use_environment)
    if (const char* env = std::getenv("MINNOW_PLUGIN_PATH"))
      for (const auto& p : split_paths(env)) {
        Status s = e->registry_->load_path(p, false);
        if (!s) e->registry_->warn("MINNOW_PLUGIN_PATH: " + s.message());
      }
  if (options.use_default_folder) {
    Status s = e->registry_->load_path(e->default_plugin_folder(), true);
    if (!s) e->registry_->warn(s.message());
  }
  return e;
}

Status Engine::load_plugin(const std::string& path) { return registry_->load_path(path); }

std::vector<PluginDescription> Engine::plugins() const {
  std::vector<PluginDescription> out;
  for (const auto& l : registry_->libraries())
    out.push_back(PluginDescription{l->name, l->version, l->description, l->path, l->provides});
  return out;
}

std::vector<std::string> Engine::warnings() const { return registry_->warnings(); }

Status PreparedModel::Impl::select(const Model& model, const BackendPolicy& pol,
                                   std::vector<std::shared_ptr<PreparedKernel>>* kernels,
                                   std::vector<KernelChoice>* choices) const {
  const auto& g = model.graph();
  kernels->assign(g.nodes.size(), nullptr);
  choices->clear();
  for (const auto& name : std::vector<std::string>{pol.force})
    if (!name.empty() && !registry->backend(name))
      return not_found("backend '" + name + "' is not loaded");
  for (int n : model.topo_order()) {
    const ir::Node& node = g.nodes[n];
    NodeView view(model, n, static_states);
    std::string forced = pol.force;
    for (const auto& nf : pol.node_force)
      if (nf.first == node.name) forced = nf.second;
    struct Candidate {
      double cost;
      std::shared_ptr<BackendEntry> backend;
      std::string reason;  // the winner's own words (e.g. cpu_sparse: how sparse, break-even)
    };
    std::vector<Candidate> cands;
    std::string why_not;
    for (const auto& b : registry->backends()) {
      if (!forced.empty() && b->name != forced) continue;
      if (std::find(pol.forbid.begin(), pol.forbid.end(), b->name) != pol.forbid.end()) continue;
      mn_bid bid{};
      bid.struct_size = sizeof(mn_bid);
      bid.cost = -1;
      try {
        b->table.bid(b->table.user, view.node(), &bid);
      } catch (...) {  // plugin.hpp guards C++ plugins; a raw one that throws is declined
        bid.cost = -1;
        std::snprintf(bid.reason, sizeof bid.reason, "exception escaped the bid (plugin '%s')", b->library->name.c_str());
      }
      bid.reason[sizeof(bid.reason) - 1] = 0;
      if (bid.cost >= 0) {
        cands.push_back({bid.cost, b, bid.reason});
      } else {
        why_not += (why_not.empty() ? "" : "; ") + b->name + ": " + (bid.reason[0] ? bid.reason : "declined");
      }
    }
    std::stable_sort(cands.begin(), cands.end(), [](const Candidate& a, const Candidate& b) { return a.cost < b.cost; });
    KernelChoice choice;
    choice.node = n;
    if (cands.empty()) {
      if (core_evaluated_op(node)) {
        choice.backend = "core";
        choice.kernel = "plan_time_value";
        choice.reason = "value computed while planning";
        choices->push_back(choice);
        continue;
      }
      if (registry->backends().empty())
        return unsupported(node.describe() + ": no backend is loaded (add the plugin folder to MINNOW_PLUGIN_PATH)");
      return unsupported(node.describe() + ": no backend can run it" + (why_not.empty() ? "" : " (" + why_not + ")"));
    }
    Status last_error;
    for (const auto& c : cands) {
      std::shared_ptr<PreparedKernel> pk;
      {
        std::lock_guard<std::mutex> lock(cache_mutex);
        auto it = cache.find({n, c.backend->name});
        if (it != cache.end()) pk = it->second;
      }
      if (!pk) {
        pk = std::make_shared<PreparedKernel>();
        pk->backend = c.backend;
        mn_error err{};
        mn_status st;
        try {
          st = c.backend->table.prepare(c.backend->table.user, view.node(), &pk->k, &err);
        } catch (...) {
          st = MN_ERR_INTERNAL;
          pk->k = mn_kernel{};
          std::snprintf(err.message, sizeof err.message, "exception escaped prepare");
        }
        err.message[sizeof(err.message) - 1] = 0;
        if (st != MN_OK || !pk->k.run) {
          std::string msg = st != MN_OK ? std::string(err.message) : "backend returned no kernel";
          last_error = invalid_argument(node.describe() + ": backend '" + c.backend->name + "' (plugin '" + c.backend->library->name + "') failed to prepare it: " + msg);
          pk->k.destroy = nullptr;
          log_message(LogLevel::kInfo, last_error.message());
          continue;
        }
        std::lock_guard<std::mutex> lock(cache_mutex);
        auto ins = cache.emplace(std::make_pair(n, c.backend->name), pk);
        pk = ins.first->second;
      }
      (*kernels)[n] = pk;
      choice.backend = c.backend->name;
      choice.kernel = pk->k.name ? pk->k.name : "?";
      choice.cost = c.cost;
      choice.reason = cands.size() > 1 ? "lowest cost of " + std::to_string(cands.size()) + " bids" : "only bid";
      if (!c.reason.empty()) choice.reason = c.reason + "; " + choice.reason;
      choice.declined = why_not;
      break;
    }
    if (!(*kernels)[n]) return last_error;
    choices->push_back(choice);
  }
  fuse_activations(model, *kernels, choices);
  fuse_producers(model, *kernels, choices);
  tell_producers(model, *kernels);
  return Status::ok();
}

namespace {

// The clamp an activation node applies, when it is one a producer can absorb: Relu, or
// Clip with constant float bounds (attributes before opset 11, inputs 1 and 2 after;
// absent = unbounded).
bool activation_clamp(const ir::Node& node, const std::vector<TensorState>& st, float* lo, float* hi) {
  if (!node.domain.empty() || node.inputs.empty() || node.outputs.size() != 1) return false;
  *lo = -std::numeric_limits<float>::infinity();
  *hi = std::numeric_limits<float>::infinity();
  if (node.op == "Relu") {
    *lo = 0.0f;
    return true;
  }
  if (node.op != "Clip") return false;
  if (const ir::Attribute* a = node.attr("min")) *lo = a->f;
  if (const ir::Attribute* a = node.attr("max")) *hi = a->f;
  for (size_t i = 1; i < 3 && i < node.inputs.size(); ++i) {
    const int32_t t = node.inputs[i];
    if (t < 0) continue;
    const TensorState& ts = st[size_t(t)];
    if (!ts.value || ts.dtype != DataType::kFloat32 || shape_elements(ts.dims) != 1) return false;
    (i == 1 ? *lo : *hi) = *static_cast<const float*>(ts.value);
  }
  return !(*lo > *hi) && *lo == *lo && *hi == *hi;  // ordered, no NaN
}

// Node b's choice shows it does not run: another node's kernel does its work.
void mark_fused(std::vector<KernelChoice>* choices, int b, const std::string& reason) {
  for (KernelChoice& c : *choices)
    if (c.node == b) {
      c.kernel = "fused";
      c.reason = reason;
    }
}
}  // namespace

void PreparedModel::Impl::fuse_activations(const Model& model,
                                           const std::vector<std::shared_ptr<PreparedKernel>>& kernels,
                                           std::vector<KernelChoice>* choices) const {
  const auto& g = model.graph();
  std::vector<int> consumers(g.tensors.size(), 0), consumer(g.tensors.size(), -1);
  for (size_t n = 0; n < g.nodes.size(); ++n)
    for (int32_t in : g.nodes[n].inputs)
      if (in >= 0) ++consumers[size_t(in)], consumer[size_t(in)] = int(n);
  std::vector<bool> is_output(g.tensors.size(), false);
  for (int32_t o : g.outputs) is_output[size_t(o)] = true;
  // Where each node runs, and which node writes each tensor (an addend must be ready
  // before the kernel that adds it runs).
  std::vector<int> position(g.nodes.size(), -1), producer(g.tensors.size(), -1);
  {
    int pos = 0;
    for (int n : model.topo_order()) position[size_t(n)] = pos++;
  }
  for (size_t n = 0; n < g.nodes.size(); ++n)
    for (int32_t o : g.nodes[n].outputs)
      if (o >= 0) producer[size_t(o)] = int(n);
  auto plain_f32 = [&](int32_t t) {
    const TensorState& ts = static_states[size_t(t)];
    if (ts.dtype != DataType::kFloat32 || ts.bounded || ts.rank < 0) return false;
    for (int64_t d : ts.dims)
      if (d < 0) return false;
    return true;
  };
  auto mark = [&](int b, const std::string& reason) { mark_fused(choices, b, reason); };
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    const auto& pk = kernels[n];
    if (!pk || g.nodes[n].outputs.empty()) continue;
    const int32_t y = g.nodes[n].outputs[0];
    if (y < 0 || consumers[size_t(y)] != 1 || is_output[size_t(y)]) continue;
    const std::string producer_text = g.nodes[n].describe() + " (" + (pk->k.name ? pk->k.name : "?") + ")";

    // 1. An Add of output 0 and a tensor of the same static shape that is ready before
    //    this node runs (a residual connection): the kernel adds it as it writes.
    int32_t out = y;  // what an activation would consume
    {
      const int b = consumer[size_t(y)];
      const ir::Node& add = g.nodes[size_t(b)];
      const bool add_op = add.domain.empty() && add.op == "Add" && add.inputs.size() == 2 &&
                          add.outputs.size() == 1 && add.outputs[0] >= 0 && kernels[size_t(b)];
      int32_t r = -1;
      if (add_op) r = add.inputs[0] == y ? add.inputs[1] : add.inputs[0];
      bool ok = add_op && r >= 0 && r != y && !is_output[size_t(add.outputs[0])] && plain_f32(y) &&
                plain_f32(r) && plain_f32(add.outputs[0]) && static_states[size_t(r)].dims == static_states[size_t(y)].dims &&
                static_states[size_t(add.outputs[0])].dims == static_states[size_t(y)].dims;
      // Ready before node n: a graph input, a constant, or written by a node that runs earlier.
      if (ok && producer[size_t(r)] >= 0) ok = position[size_t(producer[size_t(r)])] < position[n];
      if (ok) {
        bool fused = false;
        std::lock_guard<std::mutex> lock(cache_mutex);
        if (pk->fused_add_node == b) {
          fused = true;
        } else if (pk->fused_add_node < 0 && pk->fused_node < 0 &&
                   pk->k.struct_size >= offsetof(mn_kernel, fuse_add) + sizeof(pk->k.fuse_add) && pk->k.fuse_add &&
                   pk->k.fuse_add(pk->k.state, int32_t(g.nodes[n].inputs.size())) == MN_OK) {
          pk->fused_add_node = b;
          pk->addend_tensor = r;
          fused = true;
        }
        if (fused) {
          mark(b, "addend '" + g.tensors[size_t(r)].name + "' added by " + producer_text + " as it writes");
          out = add.outputs[0];
        }
      }
    }
    if (pk->fused_add_node >= 0 && out == y) continue;  // fused with another Add for another selection
    if (consumers[size_t(out)] != 1 || is_output[size_t(out)]) continue;

    // 2. A Relu / constant-bound Clip of that output: the kernel clamps as it writes.
    const int b = consumer[size_t(out)];
    const ir::Node& act = g.nodes[size_t(b)];
    float lo, hi;
    if (act.inputs[0] != out || !kernels[size_t(b)] || is_output[size_t(act.outputs[0])] ||
        !activation_clamp(act, static_states, &lo, &hi))
      continue;
    const TensorState& ys = static_states[size_t(out)];
    const TensorState& zs = static_states[size_t(act.outputs[0])];
    if (ys.dtype != DataType::kFloat32 || zs.dtype != DataType::kFloat32 || ys.bounded || zs.bounded) continue;
    bool fused = false;
    {
      std::lock_guard<std::mutex> lock(cache_mutex);
      if (pk->fused_node == b) {
        fused = true;
      } else if (pk->fused_node < 0 && pk->k.struct_size >= offsetof(mn_kernel, fuse_clamp) + sizeof(pk->k.fuse_clamp) &&
                 pk->k.fuse_clamp && pk->k.fuse_clamp(pk->k.state, lo, hi) == MN_OK) {
        pk->fused_node = b;
        fused = true;
      }
    }
    if (fused) mark(b, "clamp applied by " + producer_text + " as it writes");
  }
}

void PreparedModel::Impl::tell_producers(const Model& model,
                                         const std::vector<std::shared_ptr<PreparedKernel>>& kernels) const {
  const auto& g = model.graph();
  // The node whose kernel runs for each node: itself, or the kernel that absorbed it (a
  // fused clamp or Add); -1 where none does (a fused producer computed by its consumer:
  // its output is never stored).
  std::vector<int> runs_as(g.nodes.size(), -1);
  for (size_t n = 0; n < g.nodes.size(); ++n)
    if (kernels[n]) runs_as[n] = int(n);
  for (size_t q = 0; q < g.nodes.size(); ++q) {
    if (!kernels[q]) continue;
    if (kernels[q]->fused_node >= 0) runs_as[size_t(kernels[q]->fused_node)] = int(q);
    if (kernels[q]->fused_add_node >= 0) runs_as[size_t(kernels[q]->fused_add_node)] = int(q);
  }
  for (size_t q = 0; q < g.nodes.size(); ++q) {
    if (!kernels[q]) continue;
    if (kernels[q]->fused_producer_node >= 0) runs_as[size_t(kernels[q]->fused_producer_node)] = -1;
    if (kernels[q]->producer_act_node >= 0) runs_as[size_t(kernels[q]->producer_act_node)] = -1;
  }
  std::vector<int> writer(g.tensors.size(), -1);
  for (size_t n = 0; n < g.nodes.size(); ++n)
    for (int32_t o : g.nodes[n].outputs)
      if (o >= 0) writer[size_t(o)] = int(n);
  std::lock_guard<std::mutex> lock(cache_mutex);
  for (size_t b = 0; b < g.nodes.size(); ++b) {
    const auto& pk = kernels[b];
    if (!pk || runs_as[b] != int(b) || pk->k.struct_size < offsetof(mn_kernel, set_producer) + sizeof(pk->k.set_producer) ||
        !pk->k.set_producer)
      continue;
    const ir::Node& node = g.nodes[b];
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      const int32_t t = node.inputs[i];
      if (t < 0 || writer[size_t(t)] < 0) continue;
      const int p = runs_as[size_t(writer[size_t(t)])];
      if (p < 0 || p == int(b) || runs_as[size_t(p)] != p) continue;  // not stored, or its kernel absorbed
      const auto& pp = kernels[size_t(p)];
      if (pp && pp->backend == pk->backend) pk->k.set_producer(pk->k.state, int32_t(i), pp->k.state);
    }
  }
}

void PreparedModel::Impl::fuse_producers(const Model& model,
                                         const std::vector<std::shared_ptr<PreparedKernel>>& kernels,
                                         std::vector<KernelChoice>* choices) const {
  const auto& g = model.graph();
  std::vector<int> consumers(g.tensors.size(), 0), producer(g.tensors.size(), -1);
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    for (int32_t in : g.nodes[n].inputs)
      if (in >= 0) ++consumers[size_t(in)];
    for (int32_t o : g.nodes[n].outputs)
      if (o >= 0) producer[size_t(o)] = int(n);
  }
  std::vector<bool> is_output(g.tensors.size(), false);
  for (int32_t o : g.outputs) is_output[size_t(o)] = true;
  // Activation node -> the node clamping for it; nodes that do not run (absorbed).
  std::vector<int> clamped_by(g.nodes.size(), -1);
  std::vector<bool> absorbed(g.nodes.size(), false);
  for (size_t q = 0; q < g.nodes.size(); ++q) {
    if (!kernels[q]) continue;
    if (kernels[q]->fused_node >= 0 && kernels[q]->fused_add_node < 0) clamped_by[size_t(kernels[q]->fused_node)] = int(q);
    if (kernels[q]->fused_node >= 0) absorbed[size_t(kernels[q]->fused_node)] = true;
    if (kernels[q]->fused_add_node >= 0) absorbed[size_t(kernels[q]->fused_add_node)] = true;
  }
  auto static_f32 = [&](int32_t t) {
    const TensorState& ts = static_states[size_t(t)];
    if (ts.dtype != DataType::kFloat32 || ts.bounded || ts.rank < 0 || ts.value) return false;
    for (int64_t d : ts.dims)
      if (d < 0) return false;
    return true;
  };
  auto text = [&](int n) {
    const auto& pk = kernels[size_t(n)];
    return g.nodes[size_t(n)].describe() + " (" + (pk && pk->k.name ? pk->k.name : "?") + ")";
  };
  auto mark = [&](int b, const std::string& reason) { mark_fused(choices, b, reason); };
  for (size_t b = 0; b < g.nodes.size(); ++b) {
    const auto& pk = kernels[b];
    if (!pk || absorbed[b] || pk->k.struct_size < offsetof(mn_kernel, fuse_producer) + sizeof(pk->k.fuse_producer) ||
        !pk->k.fuse_producer)
      continue;
    const ir::Node& node = g.nodes[b];
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      const int32_t t = node.inputs[i];
      if (t < 0 || consumers[size_t(t)] != 1 || is_output[size_t(t)] || producer[size_t(t)] < 0 || !static_f32(t))
        continue;
      // The producer: the node writing t, or the one before an activation it clamps.
      int p = producer[size_t(t)], act = -1;
      if (clamped_by[size_t(p)] >= 0) act = p, p = clamped_by[size_t(p)];
      const auto& pp = kernels[size_t(p)];
      const ir::Node& pn = g.nodes[size_t(p)];
      // (A producer that computes its own producer's output, or that another consumer took, stays.)
      if (!pp || pp->backend != pk->backend || pp->fused_add_node >= 0 || pp->fused_producer_node >= 0 || absorbed[size_t(p)] ||
          pn.outputs.empty() || pn.inputs.empty())
        continue;
      const int32_t y = pn.outputs[0];
      if (act >= 0 ? (g.nodes[size_t(act)].inputs[0] != y || consumers[size_t(y)] != 1 || is_output[size_t(y)] ||
                      !static_f32(y))
                   : y != t)
        continue;
      if (pn.inputs[0] < 0 || !static_f32(pn.inputs[0])) continue;  // X: a run-time tensor of static shape
      bool fused = false;
      {
        std::lock_guard<std::mutex> lock(cache_mutex);
        if (pk->fused_producer_node == p) {
          fused = true;
        } else if (pk->fused_producer_node < 0) {
          const int32_t first_extra = int32_t(node.inputs.size()) + (pk->fused_add_node >= 0 ? 1 : 0);
          const char* name = nullptr;
          if (pk->k.fuse_producer(pk->k.state, int32_t(i), pp->k.state, first_extra, &name) == MN_OK) {
            if (name) pk->k.name = name;
            pk->fused_producer_node = p;
            pk->producer_act_node = act;
            pk->producer_input = int32_t(i);
            pk->producer_first_extra = first_extra;
            fused = true;
          }
        }
      }
      if (!fused) continue;
      absorbed[size_t(p)] = true;
      for (KernelChoice& c : *choices)
        if (c.node == int(b)) c.kernel = pk->k.name ? pk->k.name : "?";
      const std::string by = "computed by " + text(int(b)) + " as it reads it";
      mark(p, by);
      if (act >= 0) mark(act, "clamp applied within " + text(int(b)));
      break;
    }
  }
}

PreparedModel::~PreparedModel() = default;
const std::vector<KernelChoice>& PreparedModel::choices() const { return impl_->choices; }
const BackendPolicy& PreparedModel::policy() const { return impl_->policy; }

Shape PreparedModel::inferred_shape(int tensor, bool* rank_known) const {
  const auto& st = impl_->static_states;
  bool known = tensor >= 0 && size_t(tensor) < st.size() && st[tensor].rank >= 0;
  if (rank_known) *rank_known = known;
  return known ? st[tensor].dims : Shape{};
}

DataType PreparedModel::inferred_dtype(int tensor) const {
  const auto& st = impl_->static_states;
  return tensor >= 0 && size_t(tensor) < st.size() ? st[tensor].dtype : DataType::kUndefined;
}

// Static shape inference, node by node in topological order (shared by prepare and
// infer_shapes).
static Status infer_static_shapes(const Registry& registry, const Model& model, std::vector<TensorState>* states) {
  *states = initial_tensor_states(model);
  for (int n : model.topo_order())
    MINNOW_RETURN_IF_ERROR(infer_node_shapes(registry, model, n, *states).with_context(model.origin()));
  return Status::ok();
}

Result<std::vector<InferredTensor>> Engine::infer_shapes(const Model& model) const {
  std::vector<TensorState> states;
  MINNOW_RETURN_IF_ERROR(infer_static_shapes(*registry_, model, &states));
  std::vector<InferredTensor> r(states.size());
  for (size_t t = 0; t < states.size(); ++t) {
    r[t].dtype = states[t].dtype;
    r[t].rank_known = states[t].rank >= 0;
    if (r[t].rank_known) r[t].dims = states[t].dims;
  }
  return r;
}

Result<std::shared_ptr<const PreparedModel>> Engine::prepare(std::shared_ptr<const Model> model,
                                                             const BackendPolicy& policy) const {
  if (!model) return invalid_argument("prepare: null model");
  std::shared_ptr<PreparedModel> pm(new PreparedModel());
  pm->model_ = model;
  pm->impl_ = std::make_unique<PreparedModel::Impl>();
  auto& impl = *pm->impl_;
  impl.registry = registry_;
  impl.policy = policy;
  MINNOW_RETURN_IF_ERROR(infer_static_shapes(*registry_, *model, &impl.static_states));
  MINNOW_RETURN_IF_ERROR(impl.select(*model, policy, &impl.kernels, &impl.choices).with_context(model->origin()));
  return std::shared_ptr<const PreparedModel>(std::move(pm));
}

Result<std::vector<uint8_t>> Engine::import_model(const std::string& path,
                                                  const std::vector<std::pair<std::string, std::string>>& options) const {
  const FrontendEntry* fe = registry_->frontend_for(path);
  if (!fe) return unsupported("'" + path + "': no loaded frontend plugin reads this kind of file");
  OptionArrays oa(options);
  mn_blob out{};
  mn_error err{};
  mn_status st = fe->table.import_model(fe->table.user, registry_->host_api(), path.c_str(), &oa.opts, &out, &err);
  err.message[sizeof(err.message) - 1] = 0;
  if (st != MN_OK) {
    if (out.data && out.free_fn) out.free_fn(out.data, out.size);
    std::string msg = err.message;
    return Status(st == MN_ERR_UNSUPPORTED ? StatusCode::kUnsupported : st == MN_ERR_IO ? StatusCode::kIo : StatusCode::kInvalidArgument,
                  msg.empty() ? "'" + path + "': import failed (frontend '" + fe->name + "')" : msg);
  }
  return take_blob(out);
}

Result<std::shared_ptr<const Model>> Engine::load_model(const std::string& path,
                                                        const std::vector<std::pair<std::string, std::string>>& options) const {
  // Our own format is recognised by its identifier, whatever the extension.
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return io_error("cannot open '" + path + "'");
  unsigned char head[8] = {0};
  size_t got = std::fread(head, 1, 8, f);
  std::fclose(f);
  bool ours = got == 8 && std::memcmp(head + 4, "MNW1", 4) == 0;
  if (ours || !registry_->frontend_for(path)) return Model::load_file(path);
  auto bytes = import_model(path, options);
  if (!bytes) return bytes.status();
  return Model::load_bytes(std::move(bytes.value()), path);
}

Result<std::vector<uint8_t>> Engine::transform(const std::string& name, const std::vector<uint8_t>& model,
                                               const std::vector<std::pair<std::string, std::string>>& options,
                                               std::string* report) const {
  const TransformEntry* te = registry_->transform(name);
  if (!te) return not_found("no loaded plugin provides transform '" + name + "'");
  OptionArrays oa(options);
  mn_blob out{}, rep{};
  mn_error err{};
  mn_status st = te->table.apply(te->table.user, registry_->host_api(), model.data(), model.size(),
                                 &oa.opts, &out, &rep, &err);
  err.message[sizeof(err.message) - 1] = 0;
  std::vector<uint8_t> r = take_blob(rep);
  if (report) report->assign(r.begin(), r.end());
  if (st != MN_OK) {
    take_blob(out);
    return invalid_argument("transform '" + name + "': " + (err.message[0] ? err.message : "failed"));
  }
  return take_blob(out);
}

}  // namespace minnow
