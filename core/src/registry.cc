#include "registry.h"

#include "log.h"

#include <boost/dll/runtime_symbol_info.hpp>
#include <boost/filesystem.hpp>

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace minnow {

namespace fs = boost::filesystem;

namespace {

std::string abi_text(uint32_t major, uint32_t minor) {
  return std::to_string(major) + "." + std::to_string(minor);
}

uint8_t* host_blob_alloc(size_t size) { return static_cast<uint8_t*>(std::malloc(size ? size : 1)); }
void host_blob_free(uint8_t* data, size_t) { std::free(data); }

}  // namespace

// What a plugin registers while its register function runs; committed only on success.
struct Registry::Pending {
  Registry* registry;
  std::shared_ptr<LoadedLibrary> library;
  std::vector<std::shared_ptr<BackendEntry>> backends;
  std::vector<std::shared_ptr<OpEntry>> ops;
  std::vector<std::shared_ptr<TransformEntry>> transforms;
  std::vector<std::shared_ptr<FrontendEntry>> frontends;
  std::vector<std::pair<std::string, const void*>> services;
  std::string error;
};

Registry::Registry() {
  host_api_.struct_size = sizeof(mn_host_api);
  host_api_.abi_major = MINNOW_ABI_MAJOR;
  host_api_.abi_minor = MINNOW_ABI_MINOR;
  host_api_.host = this;
  host_api_.log = [](void*, int32_t level, const char* msg) {
    log_message(static_cast<LogLevel>(std::clamp(level, 0, 4)), msg ? msg : "");
  };
  host_api_.get_service = [](void* host, const char* name) -> const void* {
    return static_cast<Registry*>(host)->service(name ? name : "");
  };
  host_api_.blob_alloc = host_blob_alloc;
  host_api_.blob_free = host_blob_free;
}

void Registry::warn(const std::string& message) {
  log_message(LogLevel::kWarn, message);
  std::lock_guard<std::mutex> lock(warn_mutex_);
  warnings_.push_back(message);
}

std::vector<std::string> Registry::warnings() const {
  std::lock_guard<std::mutex> lock(warn_mutex_);
  return warnings_;
}

const void* Registry::service(const std::string& name) const {
  auto it = services_.find(name);
  return it == services_.end() ? nullptr : it->second;
}

void Registry::add_builtin_op(const mn_op_def& def) {
  auto e = std::make_shared<OpEntry>();
  e->def = def;
  e->domain = def.domain ? def.domain : "";
  e->name = def.name;
  e->def.domain = e->domain.c_str();
  e->def.name = e->name.c_str();
  ops_.push_back(e);
  op_index_.emplace(e->domain + "::" + e->name, e);
}

const OpEntry* Registry::find_op(const std::string& domain, const std::string& op, int version) const {
  auto range = op_index_.equal_range(domain + "::" + op);
  for (auto it = range.first; it != range.second; ++it) {
    const auto& d = it->second->def;
    if (version >= d.since_version && version <= d.max_version) return it->second.get();
  }
  return nullptr;
}

bool Registry::knows_op_name(const std::string& domain, const std::string& op) const {
  return op_index_.count(domain + "::" + op) > 0;
}

std::shared_ptr<BackendEntry> Registry::backend(const std::string& name) const {
  for (const auto& b : backends_)
    if (b->name == name) return b;
  return nullptr;
}

const TransformEntry* Registry::transform(const std::string& name) const {
  for (const auto& t : transforms_)
    if (t->name == name) return t.get();
  return nullptr;
}

const FrontendEntry* Registry::frontend_for(const std::string& path) const {
  for (const auto& f : frontends_)
    if (f->table.probe && f->table.probe(f->table.user, path.c_str())) return f.get();
  return nullptr;
}

Status Registry::load_path(const std::string& path, bool quiet_if_missing) {
  boost::system::error_code ec;
  if (!fs::exists(path, ec)) {
    if (quiet_if_missing) return Status::ok();
    return not_found("plugin path '" + path + "' does not exist");
  }
  if (!fs::is_directory(path, ec)) return load_file(path);
  std::vector<std::string> files;
  for (fs::directory_iterator it(path, ec), end; !ec && it != end; it.increment(ec)) {
    const fs::path& p = it->path();
    std::string ext = p.extension().string();
    if ((ext == ".so" || ext == ".dylib" || ext == ".dll") && fs::is_regular_file(p, ec))
      files.push_back(p.string());
  }
  std::sort(files.begin(), files.end());  // deterministic: first name wins on duplicates
  for (const auto& f : files) {
    Status s = load_file(f);
    if (!s) warn(s.message());
  }
  return Status::ok();
}

Status Registry::load_file(const std::string& path) {
  auto library = std::make_shared<LoadedLibrary>();
  library->path = fs::absolute(path).lexically_normal().string();
  // The same file reached twice (a folder both in MINNOW_PLUGIN_PATH and the default
  // search, or through a symlink) is already loaded: nothing to do, nothing to warn about.
  boost::system::error_code ec;
  const fs::path canon = fs::weakly_canonical(library->path, ec);
  for (const auto& l : libraries_) {
    boost::system::error_code ec2;
    if (!ec && fs::weakly_canonical(l->path, ec2) == canon && !ec2) return Status::ok();
  }
  try {
    library->lib.load(path, boost::dll::load_mode::rtld_now | boost::dll::load_mode::rtld_local);
  } catch (const std::exception& e) {
    return invalid_argument("cannot load plugin '" + path + "': not a loadable shared object (" + e.what() + ")");
  }
  if (!library->lib.has(MINNOW_PLUGIN_ENTRY_SYMBOL))
    return invalid_argument("plugin '" + path + "' has no entry point '" MINNOW_PLUGIN_ENTRY_SYMBOL "': not a Minnow plugin");
  auto entry = library->lib.get<const mn_plugin_info*()>(MINNOW_PLUGIN_ENTRY_SYMBOL);
  const mn_plugin_info* info = nullptr;
  try {
    info = entry();
  } catch (...) {
    info = nullptr;
  }
  if (!info || !info->name || !info->register_plugin)
    return invalid_argument("plugin '" + path + "': entry point returned no plugin description");
  const std::string host_abi = abi_text(MINNOW_ABI_MAJOR, MINNOW_ABI_MINOR);
  const std::string plugin_abi = abi_text(info->abi_major, info->abi_minor);
  if (info->abi_major != MINNOW_ABI_MAJOR)
    return unsupported("plugin '" + path + "' (" + info->name + ") was built for plugin ABI " + plugin_abi + "; this host speaks ABI " + host_abi + " and the major versions differ: rebuild the plugin");
  if (info->abi_minor > MINNOW_ABI_MINOR)
    return unsupported("plugin '" + path + "' (" + info->name + ") needs plugin ABI " + plugin_abi + ", newer than this host's ABI " + host_abi + ": upgrade Minnow");
  library->name = info->name;
  library->version = info->version ? info->version : "";
  library->description = info->description ? info->description : "";
  for (const auto& l : libraries_)
    if (l->name == library->name)
      return invalid_argument("plugin '" + path + "' is named '" + library->name + "', which is already loaded from '" + l->path + "': skipped");

  Pending pending{this, library, {}, {}, {}, {}, {}, {}};
  mn_registrar reg{};
  reg.struct_size = sizeof(mn_registrar);
  reg.host = &pending;
  reg.add_backend = [](void* h, const mn_backend* b) -> mn_status {
    auto* p = static_cast<Pending*>(h);
    if (!b || b->struct_size < offsetof(mn_backend, destroy) || !b->name || !b->bid || !b->prepare) {
      p->error = "incomplete backend table";
      return MN_ERR_INVALID_ARGUMENT;
    }
    auto e = std::make_shared<BackendEntry>();
    e->library = p->library;
    std::memcpy(&e->table, b, std::min(sizeof(mn_backend), b->struct_size));
    e->name = b->name;
    p->backends.push_back(e);
    p->library->provides.push_back("backend:" + e->name);
    return MN_OK;
  };
  reg.add_op = [](void* h, const mn_op_def* d) -> mn_status {
    auto* p = static_cast<Pending*>(h);
    if (!d || !d->name || !d->infer_shapes) {
      p->error = "incomplete op definition";
      return MN_ERR_INVALID_ARGUMENT;
    }
    auto e = std::make_shared<OpEntry>();
    e->library = p->library;
    std::memcpy(&e->def, d, std::min(sizeof(mn_op_def), d->struct_size));
    e->domain = d->domain ? d->domain : "";
    e->name = d->name;
    e->def.domain = e->domain.c_str();
    e->def.name = e->name.c_str();
    p->ops.push_back(e);
    p->library->provides.push_back("op:" + (e->domain.empty() ? "" : e->domain + "::") + e->name);
    return MN_OK;
  };
  reg.add_transform = [](void* h, const mn_transform* t) -> mn_status {
    auto* p = static_cast<Pending*>(h);
    if (!t || !t->name || !t->apply) {
      p->error = "incomplete transform table";
      return MN_ERR_INVALID_ARGUMENT;
    }
    auto e = std::make_shared<TransformEntry>();
    e->library = p->library;
    std::memcpy(&e->table, t, std::min(sizeof(mn_transform), t->struct_size));
    e->name = t->name;
    e->description = t->description ? t->description : "";
    p->transforms.push_back(e);
    p->library->provides.push_back("transform:" + e->name);
    return MN_OK;
  };
  reg.add_frontend = [](void* h, const mn_frontend* f) -> mn_status {
    auto* p = static_cast<Pending*>(h);
    if (!f || !f->name || !f->probe || !f->import_model) {
      p->error = "incomplete frontend table";
      return MN_ERR_INVALID_ARGUMENT;
    }
    auto e = std::make_shared<FrontendEntry>();
    e->library = p->library;
    std::memcpy(&e->table, f, std::min(sizeof(mn_frontend), f->struct_size));
    e->name = f->name;
    e->extensions = f->file_extensions ? f->file_extensions : "";
    p->frontends.push_back(e);
    p->library->provides.push_back("frontend:" + e->name);
    return MN_OK;
  };
  reg.add_service = [](void* h, const char* name, const void* service) -> mn_status {
    auto* p = static_cast<Pending*>(h);
    if (!name || !service) return MN_ERR_INVALID_ARGUMENT;
    p->services.emplace_back(name, service);
    p->library->provides.push_back(std::string("service:") + name);
    return MN_OK;
  };

  mn_error err{};
  mn_status st;
  try {
    st = info->register_plugin(&host_api_, &reg, &err);
  } catch (...) {
    st = MN_ERR_INTERNAL;
    std::snprintf(err.message, sizeof err.message, "exception escaped the register function");
  }
  if (st != MN_OK) {
    std::string why = err.message[0] ? err.message : pending.error;
    return invalid_argument("plugin '" + path + "' (" + library->name + ") failed to register: " + (why.empty() ? "status " + std::to_string(st) : why));
  }
  for (auto& b : pending.backends) {
    if (backend(b->name)) {
      warn("plugin '" + path + "': backend '" + b->name + "' already registered; the first one is kept");
      continue;
    }
    backends_.push_back(b);
  }
  for (auto& o : pending.ops) {
    ops_.push_back(o);
    op_index_.emplace(o->domain + "::" + o->name, o);
  }
  for (auto& t : pending.transforms) transforms_.push_back(t);
  for (auto& f : pending.frontends) frontends_.push_back(f);
  for (auto& s : pending.services) services_.emplace(s.first, s.second);
  libraries_.push_back(library);
  if (log_enabled(LogLevel::kDebug))
    log_message(LogLevel::kDebug, "loaded plugin " + library->name + " " + library->version + " from " + library->path);
  return Status::ok();
}

}  // namespace minnow
