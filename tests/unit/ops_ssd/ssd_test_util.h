// Helpers of the ops_ssd tests: one-node models run through the engine.
#pragma once

#include "test_util.h"

#include <doctest/doctest.h>

#include <string>
#include <vector>

namespace ssdtest {

using namespace minnow;

inline std::shared_ptr<Engine> engine() {
  static auto e = test::make_engine();
  return e;
}

inline std::string data_dir() { return std::string(MINNOW_SOURCE_DIR) + "/tests/data/ssd_fmnist/"; }

// Builds, prepares and runs `b` with `feeds`; fails the test on error.
inline std::vector<Tensor> run(const ModelBuilder& b, const std::vector<Tensor>& feeds,
                               std::string* backend = nullptr) {
  auto model = b.build();
  REQUIRE_MESSAGE(model, model.status().message());
  auto pm = engine()->prepare(model.value());
  REQUIRE_MESSAGE(pm, pm.status().message());
  if (backend) *backend = pm.value()->choices().back().backend;
  auto s = Session::create(pm.value());
  REQUIRE_MESSAGE(s, s.status().message());
  auto r = s.value()->run(feeds);
  REQUIRE_MESSAGE(r, r.status().message());
  return std::move(r.value());
}

// The error text of building/preparing/running `b` ("" when all succeed).
inline std::string error_of(const ModelBuilder& b, const std::vector<Tensor>& feeds) {
  auto model = b.build();
  if (!model) return model.status().message();
  auto pm = engine()->prepare(model.value());
  if (!pm) return pm.status().message();
  auto s = Session::create(pm.value());
  if (!s) return s.status().message();
  auto r = s.value()->run(feeds);
  return r ? "" : r.status().message();
}

}  // namespace ssdtest
