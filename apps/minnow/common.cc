#include "common.h"

#include "image_input.h"
#include "tensor_io.h"

#include <cctype>
#include <cstdio>
#include <sstream>

namespace minnow {
namespace cli {

std::shared_ptr<Engine> make_engine(const GlobalOptions& g) {
  if (!g.log_level.empty()) set_log_level(g.log_level);
  EngineOptions eo;
  eo.plugin_paths = g.plugin_paths;
  return check(Engine::create(eo));
}

void add_input_options(CLI::App* cmd, InputSpec* spec) {
  cmd->add_option("-i,--input", spec->inputs, "Input tensor: NAME=FILE or FILE (in input order); .pb (ONNX TensorProto), .npy, or .bin (raw float32)");
  cmd->add_option("--shape", spec->shapes, "Shape for an input with symbolic dims: NAME=1x3x224x224");
  cmd->add_flag("--random", spec->random, "Fill inputs not given with uniform random values in [-1, 1]");
  cmd->add_option("--resize", spec->resize, "Image inputs: resize to WxH (default: the input's size)");
  cmd->add_option("--scale", spec->scale, "Image inputs: x = (u / scale - mean) / std")->capture_default_str();
  cmd->add_option("--mean", spec->mean, "Image inputs: mean, one value or one per channel (e.g. 0.485,0.456,0.406)");
  cmd->add_option("--std", spec->std, "Image inputs: std, one value or one per channel");
  cmd->add_flag("--bgr", spec->bgr, "Image inputs: feed channels as BGR");
  cmd->add_option("--layout", spec->layout, "Image inputs: nchw or nhwc")->capture_default_str()->check(CLI::IsMember({"nchw", "nhwc"}));
  cmd->add_option("--seed", spec->seed, "Seed for --random")->capture_default_str();
}

void add_import_options(CLI::App* cmd, ImportSpec* spec) {
  cmd->add_option("--weights", spec->weights, "Weights file for formats that keep them apart (Caffe: the .caffemodel)");
  cmd->add_option("--import-opt", spec->opts, "Frontend option KEY=VALUE when the model is not .minnow (repeatable)");
}

std::vector<std::pair<std::string, std::string>> import_options(const ImportSpec& spec) {
  std::vector<std::pair<std::string, std::string>> kv;
  if (!spec.weights.empty()) kv.emplace_back("weights", spec.weights);
  for (const auto& o : spec.opts) {
    auto eq = o.find('=');
    if (eq == std::string::npos) throw CliError("--import-opt expects KEY=VALUE, got '" + o + "'");
    kv.emplace_back(o.substr(0, eq), o.substr(eq + 1));
  }
  return kv;
}

static Shape parse_shape(const std::string& s, const std::string& what) {
  Shape out;
  std::stringstream ss(s);
  std::string tok;
  while (std::getline(ss, tok, 'x')) {
    char* end = nullptr;
    long long v = std::strtoll(tok.c_str(), &end, 10);
    if (tok.empty() || *end || v < 0) throw CliError("bad shape '" + s + "' for " + what + " (expected e.g. 1x3x224x224)");
    out.push_back(v);
  }
  return out;
}

std::vector<Tensor> load_inputs(const Model& model, const InputSpec& spec) {
  const auto& g = model.graph();
  std::vector<Tensor> tensors(g.inputs.size());
  std::vector<bool> given(g.inputs.size(), false);
  std::map<std::string, Shape> shapes;
  for (const auto& s : spec.shapes) {
    auto eq = s.find('=');
    if (eq == std::string::npos) throw CliError("--shape expects NAME=DIMS, got '" + s + "'");
    shapes[s.substr(0, eq)] = parse_shape(s.substr(eq + 1), s.substr(0, eq));
  }
  auto index_of = [&](const std::string& name) -> size_t {
    for (size_t i = 0; i < g.inputs.size(); ++i)
      if (g.tensors[g.inputs[i]].name == name) return i;
    std::string names;
    for (int32_t in : g.inputs) names += (names.empty() ? "" : ", ") + g.tensors[in].name;
    throw CliError("model has no input named '" + name + "' (inputs: " + names + ")");
  };
  auto shape_of = [&](size_t i) {
    const auto& info = g.tensors[g.inputs[i]];
    auto it = shapes.find(info.name);
    if (it != shapes.end()) return it->second;
    Shape s = info.static_shape();
    for (auto& d : s)
      if (d < 0) d = 1;  // symbolic dims default to 1
    return s;
  };
  size_t next = 0;
  for (const auto& in : spec.inputs) {
    auto eq = in.find('=');
    size_t idx;
    std::string file;
    if (eq != std::string::npos && eq > 0) {
      idx = index_of(in.substr(0, eq));
      file = in.substr(eq + 1);
    } else {
      while (next < given.size() && given[next]) ++next;
      if (next >= given.size()) throw CliError("more input files than model inputs (" + std::to_string(g.inputs.size()) + ")");
      idx = next;
      file = in;
    }
    if (is_image_path(file)) {
      ImageOptions io;
      io.scale = spec.scale;
      io.bgr = spec.bgr;
      io.nhwc = spec.layout == "nhwc";
      auto floats = [&](const std::string& s, const char* what) {
        std::vector<float> v;
        std::stringstream ss(s);
        std::string tok;
        while (std::getline(ss, tok, ',')) {
          char* end = nullptr;
          float f = std::strtof(tok.c_str(), &end);
          if (tok.empty() || *end) throw CliError(std::string("bad ") + what + " '" + s + "'");
          v.push_back(f);
        }
        return v;
      };
      if (!spec.mean.empty()) io.mean = floats(spec.mean, "--mean");
      if (!spec.std.empty()) io.std = floats(spec.std, "--std");
      for (float sd : io.std)
        if (sd == 0.f) throw CliError("--std must not be 0");
      if (!spec.resize.empty()) {
        Shape wh = parse_shape(spec.resize, "--resize");
        if (wh.size() != 2 || wh[0] <= 0 || wh[1] <= 0) throw CliError("--resize expects WxH, got '" + spec.resize + "'");
        io.width = int(wh[0]);
        io.height = int(wh[1]);
      }
      Shape s = g.tensors[g.inputs[idx]].static_shape();
      tensors[idx] = check(read_image_tensor(file, s, io));
    } else {
      tensors[idx] = check(read_tensor_file(file, shape_of(idx)));
    }
    given[idx] = true;
  }
  std::mt19937_64 rng(spec.seed);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  for (size_t i = 0; i < given.size(); ++i) {
    if (given[i]) continue;
    const auto& info = g.tensors[g.inputs[i]];
    if (!spec.random) {
      std::string dims;
      for (const auto& d : info.shape) dims += (dims.empty() ? "" : "x") + (d.value >= 0 ? std::to_string(d.value) : (d.symbol.empty() ? "?" : d.symbol));
      throw CliError("input '" + info.name + "' (" + dtype_name(info.dtype) + " " + dims + ") not given: use --input " + info.name + "=FILE, or --random");
    }
    Tensor t(info.dtype, shape_of(i));
    if (info.dtype == DataType::kFloat32)
      for (int64_t k = 0; k < t.elements(); ++k) t.data<float>()[k] = dist(rng);
    tensors[i] = std::move(t);
  }
  return tensors;
}

void save_output_npy(const std::string& dir, const std::string& name, const Tensor& t) {
  std::string safe;
  for (char c : name) safe += (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.') ? c : '_';
  auto bytes = write_npy(t);
  check(write_file_atomic(dir + "/" + safe + ".npy", bytes.data(), bytes.size()));
}

std::string human_bytes(double b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB"};
  int u = 0;
  while (b >= 1024 && u < 3) {
    b /= 1024;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.2f %s", b, units[u]);
  return buf;
}

std::string json_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\', o += c;
    else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      o += buf;
    } else o += c;
  }
  return o;
}

}  // namespace cli
}  // namespace minnow
