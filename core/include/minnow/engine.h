// The engine: loaded plugins (backends, ops, transforms, frontends) and kernel choice.
#pragma once

#include <minnow/export.h>

#include <minnow/model.h>
#include <minnow/plugin.h>
#include <minnow/status.h>

#include <memory>
#include <string>
#include <vector>

namespace minnow {

class Registry;  // internal
class PreparedModel;

struct EngineOptions {
  // Plugin files or folders to load first (folders: every shared object in them).
  std::vector<std::string> plugin_paths;
  // Then MINNOW_PLUGIN_PATH (':'-separated) and the install's plugin folder.
  bool use_environment = true;
  bool use_default_folder = true;
};

struct PluginDescription {
  std::string name, version, description, path;
  std::vector<std::string> provides;  // "backend:cpu_dense", "op:minnow::Foo", ...
};

// A tensor's type and shape from static shape inference (-1 dims: symbolic / unknown).
struct InferredTensor {
  DataType dtype = DataType::kUndefined;
  bool rank_known = false;  // false: even the rank is unknown (dims empty)
  Shape dims;
};

// Per-node kernel choice constraints.
struct BackendPolicy {
  std::string force;                // only this backend (error if it cannot run a node)
  std::vector<std::string> forbid;  // never these
  // node name -> backend to use for that node.
  std::vector<std::pair<std::string, std::string>> node_force;
};

class MINNOW_API Engine {
 public:
  static Result<std::shared_ptr<Engine>> create(const EngineOptions& options = {});
  ~Engine();

  // Loads one more plugin file (or every plugin in a folder).
  Status load_plugin(const std::string& path);
  std::vector<PluginDescription> plugins() const;
  // Messages about plugins skipped or refused while loading (also logged).
  std::vector<std::string> warnings() const;
  // Folder the engine looked in for installed plugins.
  std::string default_plugin_folder() const;

  // Chooses a kernel per node (lowest bid among allowed backends) and prepares it:
  // weights are packed here, once, and shared by every session.
  Result<std::shared_ptr<const PreparedModel>> prepare(std::shared_ptr<const Model> model,
                                                       const BackendPolicy& policy = {}) const;

  // Shape inference alone: every tensor's type and shape as prepare() infers them from the
  // declared input shapes (symbolic dims stay -1), indexed like the graph's tensors. No
  // kernel is chosen and no weight packed, so it needs only the op definitions (the core's
  // standard ops, op plugins), not a backend. Fails naming the node whose shapes disagree
  // or whose op no loaded plugin defines.
  Result<std::vector<InferredTensor>> infer_shapes(const Model& model) const;

  // Loads a model file: .minnow directly, anything else through a frontend plugin.
  Result<std::shared_ptr<const Model>> load_model(const std::string& path,
                                                  const std::vector<std::pair<std::string, std::string>>& options = {}) const;
  // Imports a foreign model to .minnow bytes through the frontend that claims it.
  Result<std::vector<uint8_t>> import_model(const std::string& path,
                                            const std::vector<std::pair<std::string, std::string>>& options = {}) const;
  // Runs a transform plugin: model bytes in, bytes out (+ report text).
  Result<std::vector<uint8_t>> transform(const std::string& name, const std::vector<uint8_t>& model,
                                         const std::vector<std::pair<std::string, std::string>>& options,
                                         std::string* report = nullptr) const;

  std::shared_ptr<Registry> registry() const { return registry_; }

 private:
  Engine() = default;
  std::shared_ptr<Registry> registry_;
};

// One node's chosen kernel, for inspection (`minnow inspect --plan`).
struct KernelChoice {
  int node = -1;
  std::string backend;
  std::string kernel;
  double cost = 0;
  std::string reason;    // why this backend
  std::string declined;  // what the other backends said ("backend: reason; ...")
};

// A model with a kernel chosen and prepared for every node. Immutable and shareable.
class MINNOW_API PreparedModel {
 public:
  ~PreparedModel();
  const Model& model() const { return *model_; }
  std::shared_ptr<const Model> model_ptr() const { return model_; }
  const std::vector<KernelChoice>& choices() const;
  const BackendPolicy& policy() const;
  // Shape and type of a tensor as inferred while preparing (-1: symbolic / unknown dim;
  // empty shape with rank_known false when even the rank is unknown).
  Shape inferred_shape(int tensor, bool* rank_known = nullptr) const;
  DataType inferred_dtype(int tensor) const;
  struct Impl;
  const Impl& impl() const { return *impl_; }

 private:
  friend class Engine;
  PreparedModel() = default;
  std::shared_ptr<const Model> model_;
  std::unique_ptr<Impl> impl_;
};

// Sets the level of the "minnow" logger ("trace", "debug", "info", "warn", "error",
// "off"); MINNOW_LOG does the same at start-up.
MINNOW_API void set_log_level(const std::string& level);

}  // namespace minnow
