// Session: shapes for the actual inputs, a memory plan, and sequential execution of the
// chosen kernels on the session's oneTBB arena.
#include <minnow/session.h>

#include "log.h"
#include "planner.h"
#include "prepared.h"

#include <algorithm>
#include <tbb/task_arena.h>

#include "run_team.h"

#include <chrono>
#include <cstddef>
#include <cstring>

namespace minnow {

namespace {

// Plan-time folding evaluates nodes whose inputs are all known values (shape arithmetic:
// Shape -> Gather -> Concat -> Reshape) while planning, up to this many bytes of output.
constexpr size_t kMaxFoldBytes = 64 * 1024;
// A graph input whose value decides shapes (see value_inputs_of) is given to planning
// with its value up to this size; a bigger one is left to run time.
constexpr size_t kMaxValueInputBytes = kMaxFoldBytes;

struct Step {
  int node = -1;
  std::shared_ptr<PreparedKernel> kernel;  // null: a core-evaluated op (Shape) run at run time
  std::unique_ptr<NodeView> view;  // mn_tensors with data pointers for this plan
  double flops = 0;
  // Run-time-sized outputs (plugin ABI 1.2). `reshape`: an input is bounded (or the op is
  // core-evaluated), so the shape function runs again with this run's dims before the
  // kernel. `resizable` bit k: the op bounded output k itself, so the kernel may report it.
  bool reshape = false;
  uint32_t resizable = 0;
};

// Up to this many outputs of one node can be run-time sized (a bit each in Step::resizable).
constexpr int kMaxResizableOutputs = 32;

// What a running kernel reports through mn_run_ctx.set_output_dims.
struct RunHost {
  const mn_tensor* outputs = nullptr;  // the running node's outputs: dims are the bounds
  int32_t num_outputs = 0;
  uint32_t resizable = 0;
  uint32_t reported = 0;
  int32_t threads = 1;  // of the context this host serves (make_ctx)
  RunTeam* team = nullptr;  // the run's threads (threads > 1)
  int64_t dims[kMaxResizableOutputs][MN_MAX_RANK];
  void begin(NodeView& view, uint32_t may_resize) {
    outputs = view.outputs().data();
    num_outputs = static_cast<int32_t>(view.outputs().size());
    resizable = may_resize;
    reported = 0;
  }
};

mn_status host_set_output_dims(void* h, int32_t index, int32_t rank, const int64_t* dims) {
  auto* rh = static_cast<RunHost*>(h);
  if (!rh || index < 0 || index >= rh->num_outputs || index >= kMaxResizableOutputs || !((rh->resizable >> index) & 1u))
    return MN_ERR_INVALID_ARGUMENT;
  const mn_tensor& bound = rh->outputs[index];
  if (rank != bound.rank || rank < 0 || rank > MN_MAX_RANK || (rank > 0 && !dims)) return MN_ERR_INVALID_ARGUMENT;
  for (int d = 0; d < rank; ++d)
    if (dims[d] < 0 || dims[d] > bound.dims[d]) return MN_ERR_INVALID_ARGUMENT;
  for (int d = 0; d < rank; ++d) rh->dims[index][d] = dims[d];
  rh->reported |= 1u << index;
  return MN_OK;
}

// After a kernel ran: the actual dims of the outputs it was allowed to resize (the bound
// where it reported none) go into `states`, which are exact from now on.
void apply_reported_dims(const RunHost& rh, const ir::Node& node, std::vector<TensorState>& states) {
  for (int k = 0; k < rh.num_outputs && k < kMaxResizableOutputs; ++k) {
    if (!((rh.resizable >> k) & 1u)) continue;
    TensorState& ts = states[node.outputs[k]];
    const mn_tensor& t = rh.outputs[k];
    const int64_t* d = ((rh.reported >> k) & 1u) ? rh.dims[k] : t.dims;
    for (int i = 0; i < t.rank && i < static_cast<int>(ts.dims.size()); ++i) ts.dims[i] = d[i];
    ts.bounded = false;
  }
}

}  // namespace

struct Session::Impl {
  std::shared_ptr<const PreparedModel> pm;
  const Model* model = nullptr;
  SessionOptions options;
  std::vector<std::shared_ptr<PreparedKernel>> kernels;  // per node
  std::vector<std::string> backend_names;                // per node
  std::unique_ptr<tbb::task_arena> arena;
  RunTeam team;

  // Inputs and outputs live outside the arena so views of them stay valid.
  std::vector<Tensor> inputs;   // per graph input
  std::vector<bool> input_set;
  // Graph inputs whose values shape functions read (value_inputs_of): planning uses their
  // values once given, and a new value re-plans.
  std::vector<bool> value_input;
  std::vector<bool> input_value_planned;
  std::vector<bool> input_value_given;  // set_input was called
  std::vector<Tensor> outputs;  // per graph output (sized for the bound when bounded)
  std::vector<Shape> output_dims;  // per graph output: its dims after the last run

  // Run-time-sized tensors: with any in the plan, `run_states` holds this run's dims
  // (exact once their producer ran) and `planned_bytes` what each tensor may occupy.
  bool has_bounded = false;
  std::vector<TensorState> run_states;
  std::vector<size_t> planned_bytes;
  RunHost run_host;

  bool planned = false;
  std::vector<TensorState> states;
  std::vector<Step> steps;
  std::shared_ptr<void> arena_mem, scratch_mem;
  MemoryStats stats;
  std::vector<NodeProfile> profile;

  Status plan();
  Status run();
  Status fold(int node, std::vector<TensorState>& st);
  Status reshape_step(Step& step);
};

namespace {
void parallel_for_on_arena(void* host, size_t n, size_t grain, mn_range_fn fn, void* user) {
  // One thread, or no more work than one chunk: the caller runs it. Any range is a valid
  // chunk, and a microsecond layer (a batch-1 fc) would otherwise pay for waking the team.
  if (n == 0) return;
  RunTeam* team = static_cast<const RunHost*>(host)->team;
  if (n <= std::max<size_t>(grain, 1) || static_cast<const RunHost*>(host)->threads <= 1 || !team) {
    fn(user, 0, n);
    return;
  }
  team->parallel_for(n, grain, fn, user);
}
// mn_run_ctx.parallel_parts: through the run's team, which sizes the parts by its threads'
// speeds; with one thread even parts in order on the caller (RunTeam::parts_inline).
void parallel_parts_on_arena(void* host, size_t n, size_t grain, size_t parts, mn_part_fn fn, void* user) {
  const auto* rh = static_cast<const RunHost*>(host);
  if (rh->team && rh->threads > 1)
    rh->team->parallel_parts(n, grain, parts, fn, user);
  else
    RunTeam::parts_inline(n, grain, parts, fn, user);
}
}  // namespace

static mn_run_ctx make_ctx(RunHost* host, int threads, void* scratch, size_t scratch_size) {
  mn_run_ctx ctx{};
  ctx.struct_size = sizeof(mn_run_ctx);
  ctx.host = host;
  host->threads = threads;
  ctx.num_threads = threads;
  ctx.parallel_for = &parallel_for_on_arena;
  ctx.scratch = scratch;
  ctx.scratch_size = scratch_size;
  ctx.set_output_dims = &host_set_output_dims;
  ctx.parallel_parts = &parallel_parts_on_arena;
  return ctx;
}

static bool kernel_has_scratch_threads(const mn_kernel& k) {
  return k.struct_size >= offsetof(mn_kernel, scratch_bytes_threads) + sizeof(k.scratch_bytes_threads) &&
         k.scratch_bytes_threads;
}

// The scratch a kernel asks for, for runs on `threads` threads (ABI 1.7), or else the
// same for any thread count.
static size_t kernel_scratch(const mn_kernel& k, const std::vector<mn_tensor>& ins,
                             const std::vector<mn_tensor>& outs, int threads) {
  const int32_t ni = static_cast<int32_t>(ins.size()), no = static_cast<int32_t>(outs.size());
  if (kernel_has_scratch_threads(k)) return k.scratch_bytes_threads(k.state, ins.data(), ni, outs.data(), no, threads);
  return k.scratch_bytes ? k.scratch_bytes(k.state, ins.data(), ni, outs.data(), no) : 0;
}

// "node X failed in backend B (plugin P, kernel K)": how every kernel fault is reported.
static std::string kernel_where(const ir::Node& node, const PreparedKernel& pk) {
  return node.describe() + " failed in backend '" + pk.backend->name + "' (plugin '" +
         pk.backend->library->name + "', kernel " + (pk.k.name ? pk.k.name : "?") + ")";
}

static Status run_kernel(const ir::Node& node, const PreparedKernel& pk, const mn_run_ctx& ctx,
                         NodeView& view) {
  mn_error err{};
  mn_status st;
  // Outputs are handed over writable (mn_tensor*), so a kernel can "report" a shape other
  // than the one its op's shape function declared, or swap a data pointer. The buffers
  // were sized from the declared shape, so either is a plugin bug: detect it, restore the
  // views (they are reused by the next run) and fail the run.
  constexpr size_t kMaxChecked = 16;
  const size_t nout = view.outputs().size();
  mn_tensor given[kMaxChecked];
  for (size_t o = 0; o < nout && o < kMaxChecked; ++o) given[o] = view.outputs()[o];
  try {
    st = pk.k.run(pk.k.state, &ctx, view.inputs().data(), static_cast<int32_t>(view.inputs().size()),
                  view.outputs().data(), static_cast<int32_t>(view.outputs().size()), &err);
  } catch (...) {  // a C plugin must not throw; a C++ one that does is caught here
    st = MN_ERR_INTERNAL;
    std::snprintf(err.message, sizeof err.message, "exception escaped the kernel");
  }
  err.message[sizeof(err.message) - 1] = 0;
  std::string changed;
  for (size_t o = 0; o < nout && o < kMaxChecked; ++o) {
    mn_tensor& t = view.outputs()[o];
    bool same = t.rank == given[o].rank && t.dtype == given[o].dtype && t.data == given[o].data;
    for (int d = 0; same && d < given[o].rank && d < MN_MAX_RANK; ++d) same = t.dims[d] == given[o].dims[d];
    if (!same && changed.empty()) {
      auto dims = [](const mn_tensor& x) {
        if (x.rank < 0 || x.rank > MN_MAX_RANK) return "rank " + std::to_string(x.rank);
        return shape_to_string(Shape(x.dims, x.dims + x.rank));
      };
      changed = "kernel reported output " + std::to_string(o) + " ('" + (given[o].name ? given[o].name : "") +
                "') as " + dims(t) + " " + dtype_name(static_cast<DataType>(t.dtype)) +
                (t.data != given[o].data ? " at another address" : "") + ", but the op's shape function declared " +
                dims(given[o]) + " " + dtype_name(static_cast<DataType>(given[o].dtype)) +
                " and the buffer was sized for that";
    }
    if (!same) t = given[o];
  }
  if (st != MN_OK)
    return Status(st == MN_ERR_OUT_OF_MEMORY ? StatusCode::kOutOfMemory : StatusCode::kInvalidArgument,
                  kernel_where(node, pk) + ": " + (err.message[0] ? err.message : "status " + std::to_string(st)));
  if (!changed.empty()) return internal_error(kernel_where(node, pk) + ": " + changed);
  return Status::ok();
}

// Evaluates a node whose inputs are all known, storing its outputs as plan-time values.
Status Session::Impl::fold(int n, std::vector<TensorState>& st) {
  const ir::Node& node = model->graph().nodes[n];
  const auto& pk = kernels[n];
  NodeView view(*model, n, st);
  std::vector<std::shared_ptr<void>> owned;
  for (size_t o = 0; o < node.outputs.size(); ++o) {
    TensorState& ts = st[node.outputs[o]];
    size_t bytes = static_cast<size_t>(shape_elements(ts.dims)) * dtype_size(ts.dtype);
    owned.push_back(aligned_alloc_shared(bytes));
    view.outputs()[o].data = owned.back().get();
  }
  view.refresh();
  size_t scratch = kernel_scratch(pk->k, view.inputs(), view.outputs(), 1);  // folding runs on one thread
  if (scratch > options.max_arena_bytes)
    return resource_exhausted(node.describe() + ": kernel asks for " + std::to_string(scratch) + " bytes of scratch, above the memory limit of " + std::to_string(options.max_arena_bytes) + " bytes");
  auto scratch_mem = aligned_alloc_shared(scratch);
  RunHost rh;
  uint32_t resizable = 0;
  bool bounded_input = false;
  for (size_t o = 0; o < node.outputs.size() && o < size_t(kMaxResizableOutputs); ++o)
    if (st[node.outputs[o]].bounded) resizable |= 1u << o;
  for (int32_t in : node.inputs) bounded_input = bounded_input || (in >= 0 && st[in].bounded);
  rh.begin(view, resizable);
  mn_run_ctx ctx = make_ctx(&rh, 1, scratch_mem.get(), scratch);
  MINNOW_RETURN_IF_ERROR(run_kernel(node, *pk, ctx, view));
  // With exact inputs the reported dims are exact from now on; from bounded (provisional)
  // inputs the value only plans what follows, and the node runs again when running.
  if (!bounded_input) apply_reported_dims(rh, node, st);
  for (size_t o = 0; o < node.outputs.size(); ++o) {
    TensorState& ts = st[node.outputs[o]];
    ts.owned = owned[o];
    ts.value = owned[o].get();
  }
  return Status::ok();
}

// Which graph inputs' values decide shapes: walking back from every input an op definition
// declares in mn_op_def.value_inputs (Reshape's shape, Slice's starts ...). A tensor's value
// is known at plan time if it is a constant, a graph input given with its value, or the
// output of a node folded while planning, which needs the values of all that node's
// inputs; a core-evaluated op (Shape) gets its value from shapes and stops the walk.
static std::vector<bool> value_inputs_of(const Model& model, const Registry& registry) {
  const auto& g = model.graph();
  std::vector<int> producer(g.tensors.size(), -1);
  for (size_t n = 0; n < g.nodes.size(); ++n)
    for (int32_t o : g.nodes[n].outputs) producer[o] = static_cast<int>(n);
  std::vector<bool> needed(g.tensors.size(), false);
  std::vector<int32_t> work;
  auto need = [&](int32_t t) {
    if (t >= 0 && !needed[t] && !model.constant(t)) needed[t] = true, work.push_back(t);
  };
  for (const ir::Node& node : g.nodes) {
    const OpEntry* op = registry.find_op(node.domain, node.op, node.op_version);
    const uint64_t mask = op ? op->def.value_inputs : 0;
    for (size_t k = 0; k < node.inputs.size() && k < 64; ++k)
      if ((mask >> k) & 1u) need(node.inputs[k]);
  }
  while (!work.empty()) {
    const int32_t t = work.back();
    work.pop_back();
    if (producer[t] < 0 || core_evaluated_op(g.nodes[producer[t]])) continue;
    for (int32_t in : g.nodes[producer[t]].inputs) need(in);
  }
  std::vector<bool> out;
  for (int32_t in : g.inputs) out.push_back(needed[in]);
  return out;
}

Status Session::Impl::plan() {
  const auto& g = model->graph();
  const auto& registry = *pm->impl().registry;
  planned = false;
  has_bounded = false;
  steps.clear();
  std::vector<TensorState> st = initial_tensor_states(*model);
  for (size_t i = 0; i < g.inputs.size(); ++i) {
    TensorState& s = st[g.inputs[i]];
    if (input_set[i]) {
      s.dims = inputs[i].shape();
      s.rank = static_cast<int>(s.dims.size());
      s.dtype = inputs[i].dtype();
      // Inputs whose values decide shapes (value_inputs_of) are known values while
      // planning, so Reshape, Slice, Expand ... fed by a graph input resolve.
      const bool use_value = value_input[i] && input_value_given[i] && inputs[i].bytes() <= kMaxValueInputBytes;
      if (use_value) s.value = inputs[i].raw();
      input_value_planned[i] = use_value;
    }
    if (!s.shape_known())
      return invalid_argument("input '" + g.tensors[g.inputs[i]].name + "' has shape " + shape_to_string(s.dims) + " with unknown dims: set it before running");
  }
  // Shapes, node by node, folding what is computable now.
  std::vector<bool> skip(g.nodes.size(), false);
  for (int n : model->topo_order()) {
    const ir::Node& node = g.nodes[n];
    MINNOW_RETURN_IF_ERROR(infer_node_shapes(registry, *model, n, st));
    size_t out_bytes = 0;
    for (int32_t o : node.outputs) {
      const TensorState& ts = st[o];
      int64_t e = shape_elements(ts.dims);
      if (ts.rank >= 0 && e == -2)  // element count overflows int64: too big, not unknown
        return resource_exhausted(node.describe() + ": output '" + g.tensors[o].name + "' of shape " + shape_to_string(ts.dims) + " has more elements than int64 can count");
      if (ts.rank < 0 || e < 0)
        return invalid_argument(node.describe() + ": output '" + g.tensors[o].name + "' has unresolved shape " + shape_to_string(ts.dims));
      if (e == -2 || uint64_t(e) > options.max_arena_bytes / std::max<size_t>(1, dtype_size(ts.dtype)))
        return resource_exhausted(node.describe() + ": output '" + g.tensors[o].name + "' of shape " + shape_to_string(ts.dims) + " exceeds the memory limit of " + std::to_string(options.max_arena_bytes) + " bytes");
      out_bytes += static_cast<size_t>(e) * dtype_size(ts.dtype);
    }
    bool all_known = true, bounded = false;
    for (int32_t o : node.outputs) all_known = all_known && st[o].value != nullptr;
    for (int32_t o : node.outputs) bounded = bounded || st[o].bounded;
    // Values of bounded tensors are provisional (computed from bounds): they plan what
    // follows, but the node runs again when running.
    if (all_known && !bounded) {
      skip[n] = true;
      continue;
    }
    // A core-evaluated op (Shape) of a run-time-sized tensor gets its value when running.
    if (!kernels[n] && !(bounded && core_evaluated_op(node)))
      return internal_error(node.describe() + ": no kernel and its value is not known at plan time");
    if (!kernels[n]) continue;
    bool inputs_known = true;
    for (int32_t in : node.inputs) inputs_known = inputs_known && (in < 0 || st[in].value != nullptr);
    if (inputs_known && !node.inputs.empty() && out_bytes <= kMaxFoldBytes) {
      MINNOW_RETURN_IF_ERROR(fold(n, st));
      bool still_bounded = false;
      for (int32_t o : node.outputs) still_bounded = still_bounded || st[o].bounded;
      skip[n] = !still_bounded;
    }
  }

  // Adds and activations fused into their producer's kernel (PreparedKernel::
  // fused_add_node, fused_node) are not run: their output is the producer's output
  // (alias_of), which then lives until their consumers are done. A fused Add's other
  // input (the addend) becomes an extra input of the producer's step.
  const size_t nt = g.tensors.size();
  std::vector<int> graph_input_slot(nt, -1), graph_output_slot(nt, -1);
  for (size_t i = 0; i < g.inputs.size(); ++i) graph_input_slot[g.inputs[i]] = static_cast<int>(i);
  for (size_t i = 0; i < g.outputs.size(); ++i) graph_output_slot[g.outputs[i]] = static_cast<int>(i);
  auto graph_io = [&](int32_t t) { return graph_input_slot[t] >= 0 || graph_output_slot[t] >= 0; };
  std::vector<int32_t> alias_of(nt, -1);
  std::vector<int32_t> addend_of(g.nodes.size(), -1);
  for (int n : model->topo_order()) {
    const auto& pk = kernels[n];
    if (!pk || skip[n]) continue;
    const int32_t y = g.nodes[n].outputs[0];
    int32_t out = y;
    if (pk->fused_add_node >= 0 && !skip[pk->fused_add_node]) {
      const int32_t z = g.nodes[pk->fused_add_node].outputs[0], r = pk->addend_tensor;
      if (st[y].bounded || st[z].bounded || st[r].bounded || st[y].dims != st[z].dims || st[r].dims != st[y].dims ||
          graph_output_slot[z] >= 0)
        return internal_error(g.nodes[n].describe() + ": the Add fused into its kernel cannot be planned for these shapes");
      skip[pk->fused_add_node] = true;
      alias_of[z] = y;
      addend_of[n] = r;
      out = z;
    }
    if (pk->fused_node < 0 || skip[pk->fused_node]) continue;
    const ir::Node& act = g.nodes[pk->fused_node];
    const int32_t z = act.outputs[0];
    if (act.inputs[0] != out || st[y].bounded || st[z].bounded || st[y].dims != st[z].dims ||
        graph_output_slot[z] >= 0)
      continue;
    skip[pk->fused_node] = true;
    alias_of[z] = y;
  }
  // Producers a consumer's kernel computes itself (PreparedKernel::fused_producer_node,
  // mn_kernel.fuse_producer) do not run, nor the activation between them; their output is
  // never stored, and their inputs become extra inputs of the consumer's step.
  std::vector<int> absorbed_producer(g.nodes.size(), -1);
  for (int n : model->topo_order()) {
    const auto& pk = kernels[n];
    if (!pk || skip[n] || pk->fused_producer_node < 0) continue;
    const int p = pk->fused_producer_node;
    for (int32_t in : g.nodes[p].inputs)
      if (in >= 0 && st[in].bounded)
        return internal_error(g.nodes[n].describe() + ": the node fused into its kernel cannot be planned for these shapes");
    skip[p] = true;
    if (pk->producer_act_node >= 0) skip[pk->producer_act_node] = true;
    absorbed_producer[n] = p;
  }
  auto resolve = [&](int32_t t) { return t >= 0 && alias_of[t] >= 0 ? alias_of[t] : t; };

  // Concats that need no copy: along an axis with nothing but size-1 dims before it (the
  // channels of one image), each input is one contiguous range of the output. When every
  // input is an arena tensor written by a step and read by nothing but this Concat, the
  // producers write straight into their range of the output (concat_base / concat_offset)
  // and the Concat does not run: squeezenet1_1's eight Concats copied 1.5 MB and less
  // each, single-threaded (~0.3 ms of a 1-thread run).
  std::vector<int32_t> concat_base(nt, -1);
  std::vector<size_t> concat_offset(nt, 0);
  {
    std::vector<int> uses(nt, 0), producer(nt, -1);
    for (int n : model->topo_order()) {
      if (skip[n]) continue;
      for (int32_t in : g.nodes[n].inputs)
        if (in >= 0) ++uses[resolve(in)];
      if (addend_of[n] >= 0) ++uses[resolve(addend_of[n])];
      if (absorbed_producer[n] >= 0)
        for (int32_t in : g.nodes[absorbed_producer[n]].inputs)
          if (in >= 0) ++uses[resolve(in)];
      for (int32_t o : g.nodes[n].outputs)
        if (o >= 0) producer[o] = n;
    }
    for (int n : model->topo_order()) {
      const ir::Node& node = g.nodes[n];
      if (skip[n] || !kernels[n] || !node.domain.empty() || node.op != "Concat" || node.outputs.size() != 1 ||
          node.inputs.empty())
        continue;
      const int32_t z = node.outputs[0];
      const TensorState& zs = st[z];
      if (z < 0 || graph_io(z) || zs.bounded || zs.value || alias_of[z] >= 0 || zs.rank < 1) continue;
      const ir::Attribute* ax = node.attr("axis");
      int64_t axis = ax ? ax->i : 0;
      if (axis < 0) axis += zs.rank;
      if (axis < 0 || axis >= zs.rank) continue;
      bool ok = true;
      for (int64_t d = 0; d < axis; ++d) ok = ok && zs.dims[size_t(d)] == 1;
      std::vector<int32_t> bases;
      for (int32_t in : node.inputs) {
        const int32_t b = resolve(in);
        // (An input written by a Concat elided here already lives in that one's output.)
        ok = ok && in >= 0 && b >= 0 && !graph_io(b) && !graph_io(in) && !st[b].value && !st[b].bounded &&
             st[b].dtype == zs.dtype && producer[b] >= 0 && !skip[producer[b]] && uses[b] == 1 &&
             std::find(bases.begin(), bases.end(), b) == bases.end();
        if (!ok) break;
        bases.push_back(b);
      }
      if (!ok) continue;
      size_t off = 0;
      for (int32_t b : bases) {
        concat_base[b] = z;
        concat_offset[b] = off;
        off += static_cast<size_t>(shape_elements(st[b].dims)) * dtype_size(st[b].dtype);
      }
      skip[n] = true;
    }
  }

  // Which tensors live in the arena, and where each one's lifetime ends.
  std::vector<int> order;
  for (int n : model->topo_order())
    if (!skip[n]) order.push_back(n);
  std::vector<int> request_of(nt, -1);
  std::vector<BufferRequest> reqs;
  std::vector<int> req_tensor;
  auto request = [&](int32_t t, size_t step) {  // tensor t's buffer, born at `step`
    BufferRequest r;
    r.size = static_cast<size_t>(shape_elements(st[t].dims)) * dtype_size(st[t].dtype);
    r.first_use = r.last_use = static_cast<int>(step);
    request_of[t] = static_cast<int>(reqs.size());
    reqs.push_back(r);
    req_tensor.push_back(t);
  };
  for (size_t s = 0; s < order.size(); ++s)
    for (int32_t o : g.nodes[order[s]].outputs) {
      if (graph_output_slot[o] >= 0 || (st[o].value && !st[o].bounded)) continue;
      if (concat_base[o] >= 0) {  // written into an elided Concat's output, born with it
        if (request_of[concat_base[o]] < 0) request(concat_base[o], s);
        continue;
      }
      request(o, s);
    }
  for (size_t s = 0; s < order.size(); ++s) {
    auto used = [&](int32_t in0) {
      const int32_t in = resolve(in0);
      if (in >= 0 && request_of[in] >= 0) reqs[request_of[in]].last_use = std::max(reqs[request_of[in]].last_use, static_cast<int>(s));
    };
    for (int32_t in0 : g.nodes[order[s]].inputs) used(in0);
    used(addend_of[order[s]]);
    if (absorbed_producer[order[s]] >= 0)
      for (int32_t in0 : g.nodes[absorbed_producer[order[s]]].inputs) used(in0);
  }
  for (size_t s = 0; s < order.size(); ++s) {
    const ir::Node& node = g.nodes[order[s]];
    const auto& pk = kernels[order[s]];
    if (!pk) continue;
    int ip = pk->k.inplace_input;
    if (node.outputs.empty()) continue;
    int32_t in = -1, out = node.outputs[0];
    if (ip == MN_INPLACE_ADDEND && addend_of[order[s]] >= 0) {
      // Output 0 written into a fused Add's addend (ABI 1.5): only when the node does not
      // also read that tensor as one of its own inputs, which it would find overwritten.
      in = resolve(addend_of[order[s]]);
      for (int32_t x : node.inputs)
        if (resolve(x) == in) in = -1;
    } else if (ip >= 0 && ip < static_cast<int>(node.inputs.size())) {
      in = resolve(node.inputs[ip]);
    }
    if (in >= 0 && request_of[in] >= 0 && request_of[out] >= 0 && st[in].dtype == st[out].dtype)
      reqs[request_of[out]].inplace_of = request_of[in];
  }
  MemoryPlan mp = plan_memory(reqs);
  if (mp.arena_size > options.max_arena_bytes)
    return resource_exhausted(model->origin() + ": planned arena of " + std::to_string(mp.arena_size) + " bytes exceeds the limit of " + std::to_string(options.max_arena_bytes) + " bytes");
  arena_mem = aligned_alloc_shared(mp.arena_size);
  uint8_t* base = static_cast<uint8_t*>(arena_mem.get());

  // Outputs and inputs: own buffers.
  outputs.clear();
  output_dims.clear();
  size_t io_bytes = 0;
  for (size_t i = 0; i < g.outputs.size(); ++i) {
    const TensorState& s = st[g.outputs[i]];
    outputs.emplace_back(s.dtype, s.dims);
    output_dims.push_back(s.dims);
    io_bytes += outputs.back().bytes();
  }
  for (size_t t = 0; t < nt; ++t) {
    if (st[t].value && !st[t].bounded) continue;
    if (st[t].bounded) st[t].owned.reset(), st[t].value = nullptr;  // provisional: the buffer replaces it
    if (request_of[t] >= 0) st[t].value = base + mp.offsets[request_of[t]];
    else if (graph_input_slot[t] >= 0) st[t].value = inputs[graph_input_slot[t]].raw();
    else if (graph_output_slot[t] >= 0) st[t].value = outputs[graph_output_slot[t]].raw();
  }
  for (size_t t = 0; t < nt; ++t)
    if (concat_base[t] >= 0) st[t].value = static_cast<uint8_t*>(st[concat_base[t]].value) + concat_offset[t];
  for (size_t t = 0; t < nt; ++t)
    if (alias_of[t] >= 0) st[t].value = st[alias_of[t]].value;
  for (const Tensor& in : inputs) io_bytes += in.bytes();

  size_t scratch = 0;
  stats = MemoryStats{};
  for (int n : order) {
    Step step;
    step.node = n;
    step.kernel = kernels[n];
    step.view = std::make_unique<NodeView>(*model, n, st);
    const ir::Node& node = g.nodes[n];
    for (int32_t in : node.inputs) step.reshape = step.reshape || (in >= 0 && st[in].bounded);
    step.reshape = step.reshape || !step.kernel;
    for (size_t o = 0; o < node.outputs.size(); ++o) {
      if (!st[node.outputs[o]].bounded) continue;
      has_bounded = true;
      if (o >= size_t(kMaxResizableOutputs))
        return unsupported(node.describe() + ": more than " + std::to_string(kMaxResizableOutputs) + " outputs with run-time dims");
      if (!step.reshape) step.resizable |= 1u << o;
    }
    if (!step.kernel) {
      steps.push_back(std::move(step));
      continue;
    }
    if (addend_of[n] >= 0) {  // a fused Add's other input, after the node's own
      const int32_t r = resolve(addend_of[n]);
      mn_tensor t;
      fill_mn_tensor(g.tensors[r], st[r], &t);
      step.view->inputs().push_back(t);
      step.view->refresh();
    }
    if (absorbed_producer[n] >= 0) {  // the fused producer's inputs, after those
      if (static_cast<int32_t>(step.view->inputs().size()) != step.kernel->producer_first_extra)
        return internal_error(g.nodes[n].describe() + ": the inputs of the node fused into its kernel do not line up");
      for (int32_t in0 : g.nodes[absorbed_producer[n]].inputs) {
        static const ir::TensorInfo absent_info{};
        mn_tensor t;
        if (in0 >= 0) {
          const int32_t r = resolve(in0);
          fill_mn_tensor(g.tensors[r], st[r], &t);
        } else {
          fill_mn_tensor(absent_info, TensorState{}, &t);
          t.name = "";
        }
        step.view->inputs().push_back(t);
      }
      step.view->refresh();
    }
    const auto& k = step.kernel->k;
    auto& ins = step.view->inputs();
    auto& outs = step.view->outputs();
    {
      size_t need = kernel_scratch(k, ins, outs, options.threads);
      // Scratch is allocated next to the arena: a kernel asking for more than the limit
      // (a huge declared shape, or a plugin bug) is refused like an oversized arena.
      if (need > options.max_arena_bytes || mp.arena_size + need > options.max_arena_bytes)
        return resource_exhausted(g.nodes[n].describe() + ": kernel " + (k.name ? k.name : "?") + " asks for " + std::to_string(need) + " bytes of scratch; with the arena of " + std::to_string(mp.arena_size) + " bytes that exceeds the memory limit of " + std::to_string(options.max_arena_bytes) + " bytes");
      scratch = std::max(scratch, need);
    }
    if (k.flops) step.flops = k.flops(k.state, ins.data(), static_cast<int32_t>(ins.size()), outs.data(), static_cast<int32_t>(outs.size()));
    steps.push_back(std::move(step));
  }
  scratch_mem = aligned_alloc_shared(scratch);
  stats.arena_bytes = mp.arena_size;
  for (const auto& r : reqs) stats.naive_bytes += r.size;
  stats.io_bytes = io_bytes;
  stats.scratch_bytes = scratch;
  for (size_t t = 0; t < nt; ++t)
    if (const Tensor* c = model->constant(static_cast<int>(t))) stats.weight_bytes += c->bytes();
  profile.clear();
  for (const auto& s : steps) {
    const ir::Node& node = g.nodes[s.node];
    NodeProfile p;
    p.node = s.node;
    p.name = node.name;
    p.op = node.op;
    p.backend = s.kernel ? s.kernel->backend->name : "core";
    p.kernel = s.kernel ? (s.kernel->k.name ? s.kernel->k.name : "?") : "run_time_value";
    if (!node.outputs.empty()) p.output_shape = st[node.outputs[0]].dims;
    p.flops = s.flops;
    profile.push_back(p);
  }
  planned_bytes.assign(nt, 0);
  run_states.clear();
  if (has_bounded) {
    for (size_t t = 0; t < nt; ++t)
      if (st[t].rank >= 0 && shape_elements(st[t].dims) >= 0)
        planned_bytes[t] = static_cast<size_t>(shape_elements(st[t].dims)) * dtype_size(st[t].dtype);
    run_states = st;
  }
  states = std::move(st);
  planned = true;
  if (log_enabled(LogLevel::kDebug))
    log_message(LogLevel::kDebug, model->origin() + ": planned " + std::to_string(steps.size()) + " steps, arena " +
                                      std::to_string(stats.arena_bytes) + " bytes (naive " +
                                      std::to_string(stats.naive_bytes) + "), scratch " + std::to_string(scratch));
  return Status::ok();
}

// A step after a run-time-sized tensor: its shape function runs again on this run's dims
// (and values: every input has its data now), its views follow, and what it produces must
// fit what the plan reserved. A core-evaluated op (Shape) writes its value here.
Status Session::Impl::reshape_step(Step& step) {
  const ir::Node& node = model->graph().nodes[step.node];
  constexpr size_t kMaxOut = 64;
  if (node.outputs.size() > kMaxOut) return unsupported(node.describe() + ": too many outputs after a run-time-sized tensor");
  void* buffers[kMaxOut];
  for (size_t k = 0; k < node.outputs.size(); ++k) buffers[k] = run_states[node.outputs[k]].value;
  Status st = infer_node_shapes(*pm->impl().registry, *model, step.node, run_states);
  for (size_t k = 0; k < node.outputs.size(); ++k) {
    TensorState& ts = run_states[node.outputs[k]];
    void* computed = ts.value;
    ts.value = buffers[k];  // the planned buffer stays the tensor's home
    if (!st) continue;
    const std::string& name = model->graph().tensors[node.outputs[k]].name;
    const int64_t e = shape_elements(ts.dims);
    const TensorState& plan = states[node.outputs[k]];
    if (ts.rank != plan.rank || ts.dtype != plan.dtype || e < 0 ||
        static_cast<uint64_t>(e) * dtype_size(ts.dtype) > planned_bytes[node.outputs[k]])
      st = internal_error(node.describe() + ": at run time output '" + name + "' is " + shape_to_string(ts.dims) + " " +
                          dtype_name(ts.dtype) + ", which does not fit the " + shape_to_string(plan.dims) + " " +
                          dtype_name(plan.dtype) + " planned from the bounds of run-time-sized inputs");
    else if (!step.kernel) {
      if (!computed)
        st = internal_error(node.describe() + ": value of output '" + name + "' unknown at run time");
      else if (computed != buffers[k] && e > 0)
        std::memcpy(buffers[k], computed, static_cast<size_t>(e) * dtype_size(ts.dtype));
    }
    ts.owned.reset();
    mn_tensor& t = step.view->outputs()[k];
    t.rank = ts.rank;
    for (int d = 0; d < ts.rank && d < MN_MAX_RANK; ++d) t.dims[d] = ts.dims[d];
  }
  MINNOW_RETURN_IF_ERROR(st);
  for (size_t k = 0; k < node.inputs.size(); ++k) {
    if (node.inputs[k] < 0) continue;
    const TensorState& ts = run_states[node.inputs[k]];
    mn_tensor& t = step.view->inputs()[k];
    t.rank = ts.rank;
    for (int d = 0; d < ts.rank && d < MN_MAX_RANK; ++d) t.dims[d] = ts.dims[d];
  }
  // The op bounded an output again (for these inputs): its kernel reports the dims.
  step.resizable = 0;
  for (size_t k = 0; k < node.outputs.size() && k < size_t(kMaxResizableOutputs); ++k)
    if (run_states[node.outputs[k]].bounded) step.resizable |= 1u << k;
  if (!step.kernel)
    for (int32_t o : node.outputs) run_states[o].bounded = false;
  return Status::ok();
}

Status Session::Impl::run() {
  const auto& g = model->graph();
  for (size_t i = 0; i < g.inputs.size(); ++i)
    if (!input_set[i])
      return invalid_argument("input '" + g.tensors[g.inputs[i]].name + "' was not set");
  if (!planned) MINNOW_RETURN_IF_ERROR(plan());
  Status result;
  const bool prof = options.profile;
  auto run_steps = [&] {
    mn_run_ctx ctx = make_ctx(&run_host, options.threads, scratch_mem.get(), stats.scratch_bytes);
    run_host.team = options.threads > 1 ? &team : nullptr;
    for (size_t s = 0; s < steps.size(); ++s) {
      Step& step = steps[s];
      auto t0 = prof ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point();
      if (step.reshape) {
        result = reshape_step(step);
        if (!result) return;
      }
      if (step.kernel) {
        run_host.begin(*step.view, step.resizable);
        result = run_kernel(g.nodes[step.node], *step.kernel, ctx, *step.view);
        if (!result) return;
        if (step.resizable) apply_reported_dims(run_host, g.nodes[step.node], run_states);
      }
      if (prof) profile[s].ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    }
  };
  // With one thread, parallel_for runs every chunk on the caller (parallel_for_on_arena)
  // and nothing else here touches oneTBB, so entering the arena would only cost time
  // (~0.1-0.2 us a run, most of a batch-1 fc layer's).
  if (options.threads <= 1)
    run_steps();
  else
    team.run(*arena, options.threads, run_steps);
  MINNOW_RETURN_IF_ERROR(result);
  if (has_bounded)
    for (size_t i = 0; i < g.outputs.size(); ++i) output_dims[i] = run_states[g.outputs[i]].dims;
  // Outputs that are not written by a step (plan-time values, or a graph input).
  for (size_t i = 0; i < g.outputs.size(); ++i) {
    const TensorState& s = states[g.outputs[i]];
    if (s.value != outputs[i].raw() && s.value) std::memcpy(outputs[i].raw(), s.value, outputs[i].bytes());
  }
  return Status::ok();
}

Session::Session() : impl_(std::make_unique<Impl>()) {}
Session::~Session() = default;

Result<std::unique_ptr<Session>> Session::create(std::shared_ptr<const PreparedModel> pm,
                                                 const SessionOptions& options) {
  if (!pm) return invalid_argument("Session::create: null model");
  if (options.threads < 1 || options.threads > 1024) return invalid_argument("threads must be between 1 and 1024");
  std::unique_ptr<Session> s(new Session());
  Impl& im = *s->impl_;
  im.pm = pm;
  im.model = &pm->model();
  im.options = options;
  const auto& pol = options.policy;
  if (pol.force.empty() && pol.forbid.empty() && pol.node_force.empty()) {
    im.kernels = pm->impl().kernels;
  } else {
    std::vector<KernelChoice> choices;
    MINNOW_RETURN_IF_ERROR(pm->impl().select(*im.model, pol, &im.kernels, &choices));
  }
  im.arena = std::make_unique<tbb::task_arena>(options.threads);
  const auto& g = im.model->graph();
  for (int32_t in : g.inputs) {
    const auto& info = g.tensors[in];
    Shape shape = info.static_shape();
    int64_t n = shape_elements(shape);
    if (n == -2 || (n > 0 && uint64_t(n) > options.max_arena_bytes / std::max<size_t>(1, dtype_size(info.dtype))))
      return resource_exhausted("input '" + info.name + "' of shape " + shape_to_string(shape) + " exceeds the memory limit of " + std::to_string(options.max_arena_bytes) + " bytes");
    im.inputs.emplace_back(info.dtype, n >= 0 ? shape : Shape{0});
    im.input_set.push_back(n >= 0);
    im.input_value_given.push_back(false);
    im.input_value_planned.push_back(false);
  }
  im.value_input = value_inputs_of(*im.model, *pm->impl().registry);
  // With fully known input shapes, plan now so errors show at creation (unless an input's
  // value decides shapes: then a failure waits for the value).
  bool all_known = true, value_inputs = false;
  for (bool b : im.input_set) all_known = all_known && b;
  for (bool v : im.value_input) value_inputs = value_inputs || v;
  if (all_known) {
    try {
      Status st = im.plan();
      if (!st && !value_inputs) return st;
    } catch (const std::bad_alloc&) {
      return Status(StatusCode::kOutOfMemory, im.model->origin() + ": out of memory while planning");
    }
  }
  return s;
}

size_t Session::num_inputs() const { return impl_->model->graph().inputs.size(); }
size_t Session::num_outputs() const { return impl_->model->graph().outputs.size(); }
std::string Session::input_name(size_t i) const {
  const auto& g = impl_->model->graph();
  return i < g.inputs.size() ? g.tensors[g.inputs[i]].name : "";
}
std::string Session::output_name(size_t i) const {
  const auto& g = impl_->model->graph();
  return i < g.outputs.size() ? g.tensors[g.outputs[i]].name : "";
}

Status Session::set_input(const std::string& name, const Tensor& value) {
  const auto& g = impl_->model->graph();
  for (size_t i = 0; i < g.inputs.size(); ++i)
    if (g.tensors[g.inputs[i]].name == name) return set_input(i, value);
  return not_found("model has no input named '" + name + "'");
}

Status Session::set_input(size_t index, const Tensor& value) {
  Impl& im = *impl_;
  const auto& g = im.model->graph();
  if (index >= g.inputs.size()) return not_found("input index " + std::to_string(index) + " out of range");
  const auto& info = g.tensors[g.inputs[index]];
  if (value.dtype() != info.dtype)
    return invalid_argument("input '" + info.name + "' expects " + dtype_name(info.dtype) + ", got " + dtype_name(value.dtype()));
  if (value.elements() < 0) return invalid_argument("input '" + info.name + "': invalid shape");
  if (value.bytes() > im.options.max_arena_bytes)
    return resource_exhausted("input '" + info.name + "' of shape " + shape_to_string(value.shape()) + " exceeds the memory limit");
  if (info.has_shape) {
    if (info.shape.size() != value.shape().size())
      return invalid_argument("input '" + info.name + "' expects rank " + std::to_string(info.shape.size()) + ", got shape " + shape_to_string(value.shape()));
    for (size_t d = 0; d < info.shape.size(); ++d)
      if (info.shape[d].value >= 0 && info.shape[d].value != value.shape()[d])
        return invalid_argument("input '" + info.name + "' expects shape " + shape_to_string(info.static_shape()) + ", got " + shape_to_string(value.shape()));
  }
  Tensor& slot = im.inputs[index];
  if (slot.shape() != value.shape()) {
    slot = Tensor(value.dtype(), value.shape());
    im.planned = false;  // new shape: re-infer and re-plan
  }
  if (im.input_value_planned[index] && value.bytes() && std::memcmp(slot.raw(), value.raw(), value.bytes()) != 0)
    im.planned = false;  // the plan used this input's value (it decides shapes)
  if (value.bytes()) std::memcpy(slot.raw(), value.raw(), value.bytes());
  im.input_set[index] = true;
  im.input_value_given[index] = true;
  return Status::ok();
}

Status Session::run() {
  try {
    return impl_->run();
  } catch (const std::bad_alloc&) {
    impl_->planned = false;
    return Status(StatusCode::kOutOfMemory, impl_->model->origin() + ": out of memory while planning or running");
  }
}

Result<Tensor> Session::output(size_t index) const {
  const Impl& im = *impl_;
  if (index >= im.outputs.size()) return not_found("output index " + std::to_string(index) + " out of range (run first?)");
  const Tensor& t = im.outputs[index];
  return Tensor::view(t.dtype(), im.output_dims[index], const_cast<void*>(t.raw()));
}

Result<Tensor> Session::output(const std::string& name) const {
  const auto& g = impl_->model->graph();
  for (size_t i = 0; i < g.outputs.size(); ++i)
    if (g.tensors[g.outputs[i]].name == name) return output(i);
  return not_found("model has no output named '" + name + "'");
}

Result<std::vector<Tensor>> Session::run(const std::vector<Tensor>& inputs) {
  if (inputs.size() != num_inputs())
    return invalid_argument("model takes " + std::to_string(num_inputs()) + " inputs, got " + std::to_string(inputs.size()));
  for (size_t i = 0; i < inputs.size(); ++i) MINNOW_RETURN_IF_ERROR(set_input(i, inputs[i]));
  MINNOW_RETURN_IF_ERROR(run());
  std::vector<Tensor> outs;
  for (size_t i = 0; i < impl_->outputs.size(); ++i) outs.push_back(output(i).value().clone());
  return outs;
}

const std::vector<NodeProfile>& Session::profile() const { return impl_->profile; }
MemoryStats Session::memory() const { return impl_->stats; }

Result<Shape> Session::tensor_shape(const std::string& name) const {
  const Impl& im = *impl_;
  int t = im.model->graph().find_tensor(name);
  if (t < 0) return not_found("no tensor named '" + name + "'");
  if (!im.planned) return invalid_argument("shapes are known after the inputs are set");
  return im.has_bounded ? im.run_states[t].dims : im.states[t].dims;
}

}  // namespace minnow
