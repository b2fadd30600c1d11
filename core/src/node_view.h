// Building the C views (mn_node, mn_tensor) of one node from the IR and the current
// tensor states. Used for shape inference, bidding, prepare and run (internal).
#pragma once

#include <minnow/model.h>
#include <minnow/plugin.h>
#include <minnow/status.h>

#include <memory>
#include <string>
#include <vector>

namespace minnow {

class Registry;

// What is known about one tensor while planning or running.
struct TensorState {
  DataType dtype = DataType::kUndefined;
  int rank = -1;          // -1: unknown
  Shape dims;             // -1 entries: unknown
  void* value = nullptr;  // known data (constants, plan-time values), else null
  std::shared_ptr<void> owned;  // storage for plan-time values
  bool is_constant = false;
  // dims are an upper bound: the actual dims are known only when running (a kernel reports
  // them for an output its shape function bounded; consumers of such a tensor inherit it).
  bool bounded = false;
  bool shape_known() const {
    if (rank < 0) return false;
    for (int64_t d : dims)
      if (d < 0) return false;
    return true;
  }
};

// Initial states: constants with their values, graph inputs with declared shapes.
std::vector<TensorState> initial_tensor_states(const Model& model);

void fill_mn_tensor(const ir::TensorInfo& info, const TensorState& st, mn_tensor* out);

// A node's mn_node with stable storage for inputs, outputs and attribute lookups.
class NodeView {
 public:
  NodeView(const Model& model, int node_index, const std::vector<TensorState>& states);
  NodeView(const NodeView&) = delete;
  NodeView& operator=(const NodeView&) = delete;
  const mn_node* node() const { return &node_; }
  std::vector<mn_tensor>& inputs() { return inputs_; }
  std::vector<mn_tensor>& outputs() { return outputs_; }
  void refresh();  // re-sync mn_node pointers after inputs/outputs were edited

 struct AttrCtx {
    const ir::Node* node;
    const Model* model;
    std::vector<std::pair<std::string, mn_tensor>> tensor_attrs;
    // C string arrays of STRINGS attributes (pointing into the IR's strings).
    std::vector<std::pair<std::string, std::vector<const char*>>> string_lists;
  };

 private:
  mn_node node_{};
  AttrCtx ctx_;
  std::vector<mn_tensor> inputs_, outputs_;
};

// Runs the node's shape function; updates the states of its outputs. Outputs of a node
// with a bounded input are bounded too; a value computed from bounds (a Shape of a bounded
// tensor) is provisional: it plans the bounds downstream, the real one comes at run time.
Status infer_node_shapes(const Registry& registry, const Model& model, int node_index,
                         std::vector<TensorState>& states);

}  // namespace minnow
