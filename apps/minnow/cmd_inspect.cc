// minnow inspect: what a model holds; with --plan, which kernel runs each node and why.
#include "common.h"

#include <cstdio>
#include <map>

namespace minnow {
namespace cli {

namespace {

std::string dims_text(const ir::TensorInfo& t) {
  if (!t.has_shape) return "?";
  std::string s = "[";
  for (size_t i = 0; i < t.shape.size(); ++i) {
    if (i) s += ",";
    s += t.shape[i].value >= 0 ? std::to_string(t.shape[i].value) : (t.shape[i].symbol.empty() ? "?" : t.shape[i].symbol);
  }
  return s + "]";
}

const char* encoding_name(const ir::EncodingStage& s) {
  switch (s.index()) {
    case 0: return "dense";
    case 1: return "sparse";
    case 2: return "codebook";
    default: return "huffman";
  }
}

}  // namespace

void register_inspect_command(CLI::App& app, GlobalOptions& g) {
  auto* cmd = app.add_subcommand("inspect", "Show a model's inputs, outputs, ops, weights, metadata and compression log");
  static std::string path;
  static bool plan = false, nodes = false, verbose = false;
  cmd->add_option("model", path, "Model file (.minnow, or any format a frontend reads)")->required();
  cmd->add_flag("--plan", plan, "Show the backend and kernel chosen for each node, and why");
  cmd->add_flag("--nodes", nodes, "List every node");
  cmd->add_flag("-v,--verbose", verbose, "With --plan: also what every other backend said");
  cmd->callback([&g] {
    auto engine = make_engine(g);
    auto model = check(engine->load_model(path));
    const auto& ir = model->ir();
    const auto& gr = ir.graph;
    std::printf("model: %s\n", path.c_str());
    std::printf("format %u.%u%s, producer: %s, graph '%s'\n", ir.format_major, ir.format_minor,
                ir.compact ? " (compact: description deflated)" : "", ir.producer.c_str(), gr.name.c_str());
    for (int32_t i : gr.inputs)
      std::printf("input  %-20s %-8s %s\n", gr.tensors[i].name.c_str(), dtype_name(gr.tensors[i].dtype), dims_text(gr.tensors[i]).c_str());
    // Shapes the file does not declare come from shape inference (op definitions only; no
    // kernels are prepared unless --plan asks for them).
    auto shapes = engine->infer_shapes(*model);
    for (int32_t o : gr.outputs) {
      std::string dims = dims_text(gr.tensors[o]);
      if (shapes.is_ok() && dims == "?" && shapes.value()[o].rank_known)
        dims = shape_to_string(shapes.value()[o].dims) + " (inferred)";
      std::printf("output %-20s %-8s %s\n", gr.tensors[o].name.c_str(), dtype_name(gr.tensors[o].dtype), dims.c_str());
    }
    std::map<std::string, int> ops;
    for (const auto& n : gr.nodes) ops[(n.domain.empty() ? "" : n.domain + "::") + n.op]++;
    std::printf("nodes: %zu (", gr.nodes.size());
    bool first = true;
    for (const auto& kv : ops) {
      std::printf("%s%s %d", first ? "" : ", ", kv.first.c_str(), kv.second);
      first = false;
    }
    std::printf(")\n");
    size_t nconst = 0, params = 0;
    std::map<std::string, int> encodings;
    for (size_t t = 0; t < gr.tensors.size(); ++t)
      if (const Tensor* c = model->constant(static_cast<int>(t))) {
        ++nconst;
        params += static_cast<size_t>(c->elements());
        std::string chain;
        for (const auto& st : gr.tensors[t].encodings) chain += (chain.empty() ? "" : "+") + std::string(encoding_name(st));
        encodings[chain]++;
      }
    std::printf("constants: %zu tensors, %zu values, %s stored", nconst, params, human_bytes(static_cast<double>(model->weight_bytes())).c_str());
    for (const auto& kv : encodings) std::printf(", %d %s", kv.second, kv.first.c_str());
    std::printf("\n");
    if (model->file_size()) std::printf("file size: %s\n", human_bytes(static_cast<double>(model->file_size())).c_str());
    for (const auto& kv : ir.metadata) std::printf("metadata %s = %s\n", kv.first.c_str(), kv.second.c_str());
    for (const auto& r : ir.compression_log)
      std::printf("compression: %s %s %s: %s -> %s%s\n", r.plugin.c_str(), r.plugin_version.c_str(), r.parameters.c_str(),
                  human_bytes(static_cast<double>(r.size_before)).c_str(), human_bytes(static_cast<double>(r.size_after)).c_str(),
                  r.metric.empty() ? "" : (", " + r.metric + " " + std::to_string(r.metric_before) + " -> " + std::to_string(r.metric_after)).c_str());
    if (nodes && !plan)
      for (int n : model->topo_order()) {
        const auto& node = gr.nodes[n];
        std::string ins, outs;
        for (int32_t i : node.inputs) ins += (ins.empty() ? "" : ", ") + (i < 0 ? std::string("-") : gr.tensors[i].name);
        for (int32_t o : node.outputs) outs += (outs.empty() ? "" : ", ") + gr.tensors[o].name;
        std::printf("  %-24s %-18s (%s) -> (%s)\n", node.name.c_str(), node.op.c_str(), ins.c_str(), outs.c_str());
      }
    if (plan) {
      auto pm = engine->prepare(model);
      if (!pm.is_ok()) throw CliError(pm.status().message());
      std::printf("plan:\n  %-24s %-18s %-10s %-24s %10s  %s\n", "node", "op", "backend", "kernel", "cost", "why");
      for (const auto& c : pm.value()->choices()) {
        const auto& node = gr.nodes[c.node];
        std::printf("  %-24s %-18s %-10s %-24s %10.0f  %s\n", node.name.c_str(), node.op.c_str(), c.backend.c_str(),
                    c.kernel.c_str(), c.cost, c.reason.c_str());
        if (verbose && !c.declined.empty()) std::printf("  %-24s declined: %s\n", "", c.declined.c_str());
      }
    }
  });
}

}  // namespace cli
}  // namespace minnow
