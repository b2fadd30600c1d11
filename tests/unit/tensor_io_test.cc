// Command-line tensor readers: round trips and malformed input.
#include <doctest/doctest.h>

#include "tensor_io.h"
#include "test_util.h"

#include <random>

using namespace minnow;

TEST_SUITE("tensor_io") {
  TEST_CASE("TensorProto round trip and packed typed fields") {
    Tensor t = test::random_tensor({2, 3, 4}, 3);
    auto bytes = cli::write_tensor_proto(t, "x");
    std::string name;
    auto r = cli::parse_tensor_proto(bytes.data(), bytes.size(), "x.pb", &name);
    REQUIRE_MESSAGE(r.is_ok(), r.status().message());
    CHECK(name == "x");
    CHECK(test::max_abs_diff(r.value(), t) == 0.f);
    // dims {2}, data_type 7 (int64), int64_data packed {5, 300}
    std::vector<uint8_t> p = {0x08, 0x02, 0x10, 0x07, 0x3a, 0x03, 0x05, 0xac, 0x02};
    auto q = cli::parse_tensor_proto(p.data(), p.size(), "i.pb");
    REQUIRE_MESSAGE(q.is_ok(), q.status().message());
    CHECK(q.value().data<int64_t>()[1] == 300);
  }

  TEST_CASE("npy round trip") {
    Tensor t = test::random_tensor({3, 5}, 4);
    auto bytes = cli::write_npy(t);
    auto r = cli::parse_npy(bytes.data(), bytes.size(), "x.npy");
    REQUIRE_MESSAGE(r.is_ok(), r.status().message());
    CHECK(test::max_abs_diff(r.value(), t) == 0.f);
  }

  TEST_CASE("malformed inputs are errors naming the file") {
    Tensor t = test::random_tensor({4, 4}, 5);
    auto pb = cli::write_tensor_proto(t, "x");
    auto npy = cli::write_npy(t);
    for (size_t len = 0; len < pb.size(); len += 3) {
      auto r = cli::parse_tensor_proto(pb.data(), len, "cut.pb");
      if (!r.is_ok()) CHECK(r.status().message().find("cut.pb") != std::string::npos);
    }
    for (size_t len = 0; len < npy.size(); ++len) {
      auto r = cli::parse_npy(npy.data(), len, "cut.npy");
      REQUIRE_FALSE(r.is_ok());
      CHECK(r.status().message().find("cut.npy") != std::string::npos);
    }
    std::mt19937 rng(9);
    for (int trial = 0; trial < 2000; ++trial) {
      auto c = pb;
      c[rng() % c.size()] ^= static_cast<uint8_t>(1 + rng() % 255);
      (void)cli::parse_tensor_proto(c.data(), c.size(), "flip.pb");  // must not crash
      auto d = npy;
      d[rng() % d.size()] ^= static_cast<uint8_t>(1 + rng() % 255);
      (void)cli::parse_npy(d.data(), d.size(), "flip.npy");
    }
  }
}
