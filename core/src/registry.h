// Plugin registry (internal): loads shared objects with Boost.DLL, checks their ABI
// version, and keeps what they register. Every entry holds a reference to its library,
// so nothing is unloaded while a backend, kernel or op from it is still in use.
#pragma once

#include <minnow/engine.h>
#include <minnow/plugin.h>
#include <minnow/status.h>

#include <boost/dll/shared_library.hpp>

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace minnow {

struct LoadedLibrary {
  boost::dll::shared_library lib;  // empty for built-ins
  std::string path;
  std::string name, version, description;
  std::vector<std::string> provides;
};

struct BackendEntry {
  std::shared_ptr<LoadedLibrary> library;  // declared first: destroyed last
  mn_backend table{};
  std::string name;
  ~BackendEntry() {
    if (table.destroy) table.destroy(table.user);
  }
};

struct OpEntry {
  std::shared_ptr<LoadedLibrary> library;  // null for the core's built-in ops
  mn_op_def def{};
  std::string domain, name;
};

struct TransformEntry {
  std::shared_ptr<LoadedLibrary> library;
  mn_transform table{};
  std::string name, description;
};

struct FrontendEntry {
  std::shared_ptr<LoadedLibrary> library;
  mn_frontend table{};
  std::string name, extensions;
};

class Registry {
 public:
  Registry();
  // A plugin file, or every shared object in a folder (problems there become warnings).
  Status load_path(const std::string& path, bool quiet_if_missing = false);
  Status load_file(const std::string& path);

  // Exported (the class is internal) for tests/unit/plugin_loader_test.
  MINNOW_API const OpEntry* find_op(const std::string& domain, const std::string& op, int version) const;
  bool knows_op_name(const std::string& domain, const std::string& op) const;
  const std::vector<std::shared_ptr<BackendEntry>>& backends() const { return backends_; }
  std::shared_ptr<BackendEntry> backend(const std::string& name) const;
  const TransformEntry* transform(const std::string& name) const;
  const std::vector<std::shared_ptr<TransformEntry>>& transforms() const { return transforms_; }
  const FrontendEntry* frontend_for(const std::string& path) const;
  const std::vector<std::shared_ptr<LoadedLibrary>>& libraries() const { return libraries_; }
  std::vector<std::string> warnings() const;
  void warn(const std::string& message);
  const mn_host_api* host_api() const { return &host_api_; }
  // Exported (the class is internal) for tests/unit/ops_lstm/matmul_service_test.
  MINNOW_API const void* service(const std::string& name) const;

  // Built-in op definitions (standard ONNX ops' shape functions).
  void add_builtin_op(const mn_op_def& def);

 private:
  struct Pending;
  std::vector<std::shared_ptr<LoadedLibrary>> libraries_;
  std::vector<std::shared_ptr<BackendEntry>> backends_;
  std::vector<std::shared_ptr<OpEntry>> ops_;
  std::multimap<std::string, std::shared_ptr<OpEntry>> op_index_;  // "domain::op"
  std::vector<std::shared_ptr<TransformEntry>> transforms_;
  std::vector<std::shared_ptr<FrontendEntry>> frontends_;
  std::map<std::string, const void*> services_;
  std::vector<std::string> warnings_;
  mutable std::mutex warn_mutex_;
  mn_host_api host_api_{};
};

// Registers the core's shape functions for standard ONNX ops (standard_shapes.cc).
void register_standard_ops(Registry& registry);

}  // namespace minnow
