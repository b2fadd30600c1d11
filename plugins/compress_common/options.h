// Transform options (`--opt key=value`, or `prune:sparsity=0.9` in a pipeline) as typed
// look-ups. Every key a transform does not read is an error, so a typo is never ignored.
#pragma once

#include <minnow/plugin.h>

#include <map>
#include <set>
#include <string>

namespace minnow {
namespace compress {

class Options {
 public:
  Options() = default;
  explicit Options(const mn_options* o);
  explicit Options(std::map<std::string, std::string> kv) : kv_(std::move(kv)) {}

  bool has(const std::string& k) const { return kv_.count(k) != 0; }
  std::string get_string(const std::string& k, const std::string& def) const;
  double get_double(const std::string& k, double def) const;   // throws on a bad number
  int64_t get_int(const std::string& k, int64_t def) const;
  bool get_bool(const std::string& k, bool def) const;
  // Throws naming the first option that nobody read (call after reading all of them).
  void check_all_used(const std::string& transform) const;
  const std::map<std::string, std::string>& all() const { return kv_; }

 private:
  std::map<std::string, std::string> kv_;
  mutable std::set<std::string> used_;
};

}  // namespace compress
}  // namespace minnow
