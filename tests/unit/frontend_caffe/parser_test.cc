// The prototxt (text format) and caffemodel (wire format) readers: both syntaxes, and
// malformed input giving one clear error, never a crash.
#include "caffe_error.h"
#include "caffe_net.h"
#include "caffe_text.h"
#include "caffe_weights.h"
#include "wire_writer.h"

#include <doctest/doctest.h>

#include <functional>
#include <random>
#include <string>

using namespace minnow::caffe;
using minnow::caffe_test::blob;
using minnow::caffe_test::caffemodel;

namespace {

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const CaffeError& e) {
    return e.what();
  }
  return "";
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("text format: fields, nesting, lists, strings, comments") {
  auto m = parse_text(R"(
    name: "net"   # a comment
    input_dim: 1 input_dim: 3
    layer { name: 'a' type: "Convolution" convolution_param { num_output: 8 kernel_size: [3, 5] pad_h: 1 } }
    layer < name: "b\x41\101" type: "ReLU"; relu_param { negative_slope: -1.5e-2 } >
    flag: true other: False f: 2.5f
  )", "t.prototxt");
  CHECK(m->get_string("name", "") == "net");
  CHECK(m->get_ints("input_dim") == std::vector<int64_t>{1, 3});
  auto layers = m->get_msgs("layer");
  REQUIRE(layers.size() == 2);
  const TextMsg* cp = layers[0]->get_msg("convolution_param");
  REQUIRE(cp);
  CHECK(cp->get_int("num_output", 0) == 8);
  CHECK(cp->get_ints("kernel_size") == std::vector<int64_t>{3, 5});
  CHECK(cp->get_int("pad_h", 0) == 1);
  CHECK(cp->get_int("missing", 42) == 42);
  CHECK(layers[1]->get_string("name", "") == "bAA");
  CHECK(layers[1]->get_msg("relu_param")->get_float("negative_slope", 0) == doctest::Approx(-0.015));
  CHECK(m->get_bool("flag", false));
  CHECK_FALSE(m->get_bool("other", true));
  CHECK(m->get_float("f", 0) == doctest::Approx(2.5));
  CHECK(layers[0]->line == 4);
}

TEST_CASE("text format: malformed input names file and line") {
  struct Case {
    const char* text;
    const char* expect;
  } cases[] = {
      {"layer { name: \"a\"", "missing '}' (message opened at line 1)"},
      {"name: \"abc", "unterminated string"},
      {"layer { name: \"a\" } }", "unexpected '}'"},
      {"name \"x\"", "expected ':' or '{' after 'name'"},
      {"name: ", "expected a value"},
      {": 3", "expected a field name"},
      {"a: [1, 2", "expected ',' or ']'"},
      {"a: \"\\q\"", "unknown escape"},
  };
  for (const auto& c : cases) {
    std::string e = error_of([&] { parse_text(c.text, "bad.prototxt"); });
    INFO(c.text);
    CHECK(contains(e, "bad.prototxt:1:"));
    CHECK(contains(e, c.expect));
  }
  std::string deep;
  for (int i = 0; i < 200; ++i) deep += "a {";
  CHECK(contains(error_of([&] { parse_text(deep, "deep.prototxt"); }), "nested more than"));
  auto m = parse_text("n: abc\nk: 1.5\n", "v.prototxt");
  CHECK(contains(error_of([&] { m->get_int("n", 0); }), "v.prototxt:1: field 'n' expects an integer, got 'abc'"));
  CHECK(contains(error_of([&] { m->get_int("k", 0); }), "v.prototxt:2"));
  CHECK(contains(error_of([&] { m->get_msg("n"); }), "expects a message"));
}

TEST_CASE("text format: random garbage never crashes") {
  std::mt19937 rng(7);
  const std::string alphabet = "layer{}<>[]:;,\"'\\#\n abc0123-.e_xf";
  for (int iter = 0; iter < 3000; ++iter) {
    std::string s;
    size_t n = rng() % 80;
    for (size_t i = 0; i < n; ++i) s += alphabet[rng() % alphabet.size()];
    try {
      auto m = parse_text(s, "fuzz");
      (void)m;
    } catch (const CaffeError&) {
    }
  }
}

TEST_CASE("net: old input header, Input layers, V1 layers, phase rules") {
  NetDef a = parse_net(R"(name: "PNet" input: "data" input_dim: 1 input_dim: 3 input_dim: 12 input_dim: 12
      layer { name: "c" type: "Convolution" bottom: "data" top: "c" }
      layer { name: "loss" type: "SoftmaxWithLoss" bottom: "c" top: "l" include { phase: TRAIN } })", "a");
  REQUIRE(a.inputs.size() == 1);
  CHECK(a.inputs[0].name == "data");
  CHECK(a.inputs[0].shape == std::vector<int64_t>{1, 3, 12, 12});
  REQUIRE(a.layers.size() == 1);  // the TRAIN-only layer is dropped
  CHECK(a.layers[0].type == "Convolution");

  NetDef b = parse_net(R"(input: "x" input_shape { dim: 2 dim: 5 }
      layer { name: "in2" type: "Input" top: "y" input_param { shape { dim: 1 dim: 4 } } }
      layer { name: "r" type: "ReLU" bottom: "x" top: "x" })", "b");
  REQUIRE(b.inputs.size() == 2);
  CHECK(b.inputs[1].name == "y");
  CHECK(b.inputs[1].shape == std::vector<int64_t>{1, 4});

  NetDef v1 = parse_net(R"(input: "data" input_dim: 1 input_dim: 1 input_dim: 4 input_dim: 4
      layers { name: "conv" type: CONVOLUTION bottom: "data" top: "conv" }
      layers { name: "pool" type: POOLING bottom: "conv" top: "pool" }
      layers { name: "ip" type: INNER_PRODUCT bottom: "pool" top: "ip" })", "v1");
  REQUIRE(v1.layers.size() == 3);
  CHECK(v1.layers[0].type == "Convolution");
  CHECK(v1.layers[1].type == "Pooling");
  CHECK(v1.layers[2].type == "InnerProduct");
}

TEST_CASE("net: header errors") {
  CHECK(contains(error_of([] { parse_net("input: \"d\" input_dim: 1 layer { type: \"ReLU\" }", "h"); }),
                 "1 inputs need 4 input_dim values, found 1"));
  CHECK(contains(error_of([] { parse_net("name: \"x\"", "h"); }), "no layers"));
  CHECK(contains(error_of([] { parse_net("layer { name: \"i\" type: \"Input\" top: \"d\" }", "h"); }),
                 "no input_param"));
  CHECK(contains(error_of([] { parse_net("layer { type: \"ReLU\" } layers { type: RELU }", "h"); }), "mixes"));
  CHECK(contains(error_of([] { parse_net("input: \"d\" input_dim: 1 input_dim: 0 input_dim: 1 input_dim: 1 layer { type: \"ReLU\" }", "h"); }),
                 "dim 0"));
  CHECK(contains(error_of([] { parse_net("layers { layer { name: \"c\" type: \"conv\" } }", "v0"); }), "V0 net format"));
}

TEST_CASE("caffemodel: current and V1 layers, packed / unpacked / legacy blobs") {
  auto bytes = caffemodel({{"conv1", "Convolution", {blob({2, 1, 1, 1}, {1.f, 2.f}), blob({2}, {0.5f, -0.5f}, false, false)}},
                           {"relu", "ReLU", {}},
                           {"ip", "InnerProduct", {blob({3, 2}, {1, 2, 3, 4, 5, 6}, true)}}});
  WeightMap w = parse_caffemodel(bytes.data(), bytes.size(), "m.caffemodel");
  REQUIRE(w.count("conv1"));
  CHECK(w["conv1"].type == "Convolution");
  REQUIRE(w["conv1"].blobs.size() == 2);
  CHECK(w["conv1"].blobs[0].shape == std::vector<int64_t>{2, 1, 1, 1});
  CHECK(w["conv1"].blobs[1].data == std::vector<float>{0.5f, -0.5f});
  CHECK(w["ip"].blobs[0].shape == std::vector<int64_t>{1, 1, 3, 2});  // legacy num/channels/height/width
  CHECK(w["relu"].blobs.empty());

  auto v1 = caffemodel({{"c", "", {blob({1}, {3.f})}}}, true, 4);
  WeightMap w1 = parse_caffemodel(v1.data(), v1.size(), "v1.caffemodel");
  CHECK(w1["c"].type == "Convolution");
  CHECK(w1["c"].blobs[0].data == std::vector<float>{3.f});
}

TEST_CASE("caffemodel: every truncation and random corruption is an error, not a crash") {
  auto good = caffemodel({{"conv1", "Convolution", {blob({4, 1, 2, 2}, std::vector<float>(16, 1.f)), blob({4}, {1, 2, 3, 4})}},
                          {"ip", "InnerProduct", {blob({2, 8}, std::vector<float>(16, 0.25f))}}});
  size_t errors = 0;
  for (size_t n = 1; n < good.size(); ++n) {
    try {
      parse_caffemodel(good.data(), n, "trunc.caffemodel");
    } catch (const CaffeError& e) {
      CHECK(contains(e.what(), "trunc.caffemodel"));
      ++errors;
    }
  }
  CHECK(errors > good.size() / 2);  // most prefixes cut a length-delimited field
  std::mt19937 rng(3);
  for (int iter = 0; iter < 3000; ++iter) {
    auto bad = good;
    for (int k = 0; k < 3; ++k) bad[rng() % bad.size()] = static_cast<uint8_t>(rng());
    try {
      parse_caffemodel(bad.data(), bad.size(), "fuzz.caffemodel");
    } catch (const CaffeError&) {
    }
  }
  CHECK(contains(error_of([] { parse_caffemodel(nullptr, 0, "e.caffemodel"); }), "empty"));
  std::vector<uint8_t> text{'n', 'a', 'm', 'e', ':', ' ', '"', 'x', '"'};
  CHECK(contains(error_of([&] { parse_caffemodel(text.data(), text.size(), "t.caffemodel"); }), "t.caffemodel"));
  // A blob whose shape disagrees with its data.
  auto mismatch = caffemodel({{"c", "Convolution", {blob({3, 3}, {1.f, 2.f})}}});
  CHECK(contains(error_of([&] { parse_caffemodel(mismatch.data(), mismatch.size(), "s.caffemodel"); }),
                 "blob shape holds 9 values but 2 are stored"));
}
