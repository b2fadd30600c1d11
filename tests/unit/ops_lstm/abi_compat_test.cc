// Op plugins across ABI versions: an older minor loads (ABI 1.1 added mn_node.attr_strings
// at the end of the struct), a newer minor or another major is refused with both versions.
#include "test_util.h"

#include <doctest/doctest.h>

using namespace minnow;

TEST_CASE("a plugin built for ABI 1.0 loads in this host and its op is usable") {
  REQUIRE(MINNOW_ABI_MAJOR == 1);
  REQUIRE(MINNOW_ABI_MINOR >= 1);
  EngineOptions o;
  o.use_environment = false;
  o.use_default_folder = false;
  auto e = Engine::create(o);
  REQUIRE(e);
  Status s = e.value()->load_plugin(OLD_ABI_PLUGIN);
  REQUIRE_MESSAGE(s.is_ok(), s.message());
  bool found = false;
  for (const auto& p : e.value()->plugins())
    if (p.name == "old_abi_plugin")
      for (const auto& what : p.provides) found = found || what == "op:old::Copy";
  CHECK(found);
}

TEST_CASE("a newer minor and another major are refused, naming the file and both versions") {
  auto e = Engine::create(EngineOptions{{}, false, false});
  REQUIRE(e);
  Status minor = e.value()->load_plugin(test::test_plugin_dir() + "/bad/abi_minor_plugin.so");
  REQUIRE_FALSE(minor.is_ok());
  CHECK(minor.message().find("abi_minor_plugin.so") != std::string::npos);
  CHECK(minor.message().find(std::to_string(MINNOW_ABI_MAJOR) + "." + std::to_string(MINNOW_ABI_MINOR + 1)) != std::string::npos);
  CHECK(minor.message().find(std::to_string(MINNOW_ABI_MAJOR) + "." + std::to_string(MINNOW_ABI_MINOR)) != std::string::npos);
  Status major = e.value()->load_plugin(test::test_plugin_dir() + "/bad/abi_major_plugin.so");
  REQUIRE_FALSE(major.is_ok());
  CHECK(major.message().find("abi_major_plugin.so") != std::string::npos);
}
