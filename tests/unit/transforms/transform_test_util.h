// Helpers the transform suites share: the build's engine, models to bytes and back, one
// transform through Engine::transform, and one run through the engine's kernels.
#pragma once

#include "test_util.h"

#include <doctest/doctest.h>

#include <string>
#include <utility>
#include <vector>

namespace minnow {
namespace test {

using KV = std::vector<std::pair<std::string, std::string>>;

inline std::shared_ptr<Engine> engine() {
  static auto e = make_engine();
  return e;
}

inline std::vector<uint8_t> bytes_of(const ModelBuilder& b) {
  auto r = b.serialize();
  REQUIRE_MESSAGE(r.is_ok(), r.status().message());
  return r.value();
}

inline std::vector<uint8_t> xform(const std::string& name, const std::vector<uint8_t>& in, KV opts = {},
                                  std::string* rep = nullptr) {
  std::string report;
  auto r = engine()->transform(name, in, opts, &report);
  REQUIRE_MESSAGE(r.is_ok(), r.status().message());
  if (rep) *rep = report;
  return r.value();
}

inline ir::ModelIR ir_of(const std::vector<uint8_t>& b) {
  auto r = parse_model(b.data(), b.size(), nullptr, "test");
  REQUIRE_MESSAGE(r.is_ok(), r.status().message());
  return r.value();
}

inline Tensor run(const std::vector<uint8_t>& b, const Tensor& x) {
  auto model = Model::load_memory(b.data(), b.size(), "test");
  REQUIRE_MESSAGE(model.is_ok(), model.status().message());
  auto prepared = engine()->prepare(model.value());
  REQUIRE_MESSAGE(prepared.is_ok(), prepared.status().message());
  auto s = Session::create(prepared.value());
  REQUIRE(s.is_ok());
  auto out = s.value()->run({x});
  REQUIRE_MESSAGE(out.is_ok(), out.status().message());
  return out.value()[0];
}

}  // namespace test
}  // namespace minnow
