#include "options.h"

#include <cstdlib>
#include <stdexcept>

namespace minnow {
namespace compress {

Options::Options(const mn_options* o) {
  if (!o) return;
  for (int32_t i = 0; i < o->count; ++i)
    if (o->keys[i]) kv_[o->keys[i]] = o->values[i] ? o->values[i] : "";
}

std::string Options::get_string(const std::string& k, const std::string& def) const {
  auto it = kv_.find(k);
  if (it == kv_.end()) return def;
  used_.insert(k);
  return it->second;
}

double Options::get_double(const std::string& k, double def) const {
  auto it = kv_.find(k);
  if (it == kv_.end()) return def;
  used_.insert(k);
  char* end = nullptr;
  double v = std::strtod(it->second.c_str(), &end);
  if (it->second.empty() || *end) throw std::runtime_error("option '" + k + "': '" + it->second + "' is not a number");
  return v;
}

int64_t Options::get_int(const std::string& k, int64_t def) const {
  auto it = kv_.find(k);
  if (it == kv_.end()) return def;
  used_.insert(k);
  char* end = nullptr;
  long long v = std::strtoll(it->second.c_str(), &end, 10);
  if (it->second.empty() || *end) throw std::runtime_error("option '" + k + "': '" + it->second + "' is not an integer");
  return v;
}

bool Options::get_bool(const std::string& k, bool def) const {
  auto it = kv_.find(k);
  if (it == kv_.end()) return def;
  used_.insert(k);
  const std::string& v = it->second;
  if (v == "1" || v == "true" || v == "yes" || v == "on" || v.empty()) return true;
  if (v == "0" || v == "false" || v == "no" || v == "off") return false;
  throw std::runtime_error("option '" + k + "': '" + v + "' is not a boolean");
}

void Options::check_all_used(const std::string& transform) const {
  for (const auto& kv : kv_)
    if (!used_.count(kv.first)) throw std::runtime_error(transform + ": unknown option '" + kv.first + "'");
}

}  // namespace compress
}  // namespace minnow
