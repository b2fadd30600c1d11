// The conversion driver: blob versions and names, weights lookup, the walk over layers,
// graph inputs / outputs (see caffe_convert.h).
#include "caffe_convert.h"

#include "caffe_error.h"
#include "caffe_layers.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>

namespace minnow {
namespace caffe {

namespace {

std::string read_text_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw CaffeError("cannot open '" + path + "'", CaffeError::kIo);
  std::stringstream ss;
  ss << f.rdbuf();
  if (f.bad()) throw CaffeError("cannot read '" + path + "'", CaffeError::kIo);
  return ss.str();
}

std::string shape_str(const Shape& s) { return shape_to_string(s); }

}  // namespace

std::map<std::string, Shape> parse_input_shapes(const std::string& spec) {
  std::map<std::string, Shape> out;
  std::stringstream ss(spec);
  std::string item;
  while (std::getline(ss, item, ';')) {
    if (item.empty()) continue;
    auto colon = item.rfind(':');
    if (colon == std::string::npos || colon == 0)
      throw CaffeError("option input_shape: expected NAME:DIMS (e.g. data:1x3x224x224), got '" + item + "'");
    Shape s;
    std::stringstream ds(item.substr(colon + 1));
    std::string d;
    while (std::getline(ds, d, 'x')) {
      char* end = nullptr;
      long long v = std::strtoll(d.c_str(), &end, 10);
      if (d.empty() || *end || v <= 0)
        throw CaffeError("option input_shape: bad dims '" + item.substr(colon + 1) + "' for '" + item.substr(0, colon) + "'");
      s.push_back(v);
    }
    if (s.empty()) throw CaffeError("option input_shape: no dims for '" + item.substr(0, colon) + "'");
    out[item.substr(0, colon)] = s;
  }
  return out;
}

// ---- Ctx ------------------------------------------------------------------------------

Ctx::Ctx(const NetDef& net, const WeightMap* weights, std::string weights_origin)
    : net_(net), weights_(weights), weights_origin_(std::move(weights_origin)), b_(net.name) {
  // Blob versions: the last write of a blob gets the blob's own name (so graph outputs
  // and inputs keep Caffe's names); earlier in-place versions get "blob:k".
  for (const auto& in : net.inputs) ++writes_left_[in.name];
  for (const auto& l : net.layers)
    for (const auto& t : l.tops) ++writes_left_[t];
  for (const auto& kv : writes_left_) used_names_.insert(kv.first);
}

std::string Ctx::fresh(const std::string& base) {
  std::string n = base;
  for (int k = 2; used_names_.count(n); ++k) n = base + "_" + std::to_string(k);
  used_names_.insert(n);
  return n;
}

std::string Ctx::version_name(const std::string& blob) {
  int& left = writes_left_[blob];
  --left;
  if (left <= 0) {
    // Blob names were reserved up front; the final version takes its own name.
    used_names_.insert(blob);
    if (b_.ir().graph.find_tensor(blob) < 0) return blob;
  }
  return fresh(blob + ":" + std::to_string(left + 1));
}

void Ctx::fail(const LayerDef& l, const std::string& msg) const {
  throw CaffeError(l.where + ": layer '" + l.name + "' (" + l.type + "): " + msg);
}

void Ctx::unsupported(const LayerDef& l, const std::string& msg) const {
  throw CaffeError(l.where + ": layer '" + l.name + "' (" + l.type + "): " + msg, CaffeError::kUnsupported);
}

void Ctx::require(const LayerDef& l, size_t bmin, size_t bmax, size_t tmin, size_t tmax) const {
  auto range = [](size_t a, size_t b) {
    return a == b ? std::to_string(a) : b == SIZE_MAX ? std::to_string(a) + " or more" : std::to_string(a) + ".." + std::to_string(b);
  };
  if (l.bottoms.size() < bmin || l.bottoms.size() > bmax)
    fail(l, "expects " + range(bmin, bmax) + " bottoms, has " + std::to_string(l.bottoms.size()));
  if (l.tops.size() < tmin || l.tops.size() > tmax)
    fail(l, "expects " + range(tmin, tmax) + " tops, has " + std::to_string(l.tops.size()));
}

int Ctx::axis(const LayerDef& l, int64_t a, size_t rank, const char* what) const {
  int64_t r = static_cast<int64_t>(rank);
  if (a < -r || a >= r) fail(l, std::string(what) + " " + std::to_string(a) + " is out of range for a blob of rank " + std::to_string(rank));
  return static_cast<int>(a < 0 ? a + r : a);
}

std::string Ctx::in(const LayerDef& l, size_t i) {
  auto it = current_.find(l.bottoms.at(i));
  if (it == current_.end())
    fail(l, "bottom '" + l.bottoms[i] + "' is not produced by any earlier layer or input");
  return it->second;
}

const Shape& Ctx::shape(const std::string& tensor) const { return shapes_.at(tensor); }

std::string Ctx::out(const LayerDef& l, size_t i, const Shape& s) {
  const std::string& blob = l.tops.at(i);
  for (int64_t d : s)
    if (d == 0 || d < -1) fail(l, "top '" + blob + "' would have shape " + shape_str(s));
  std::string t = version_name(blob);
  b_.tensor(t);
  shapes_[t] = s;
  current_[blob] = t;
  produced_.emplace_back(blob, t);
  return t;
}

void Ctx::alias(const LayerDef& l, size_t i, const std::string& tensor) {
  const std::string& blob = l.tops.at(i);
  --writes_left_[blob];
  current_[blob] = tensor;
  produced_.emplace_back(blob, tensor);
}

std::string Ctx::tmp(const LayerDef& l, const std::string& suffix, const Shape& s) {
  std::string t = fresh(l.name + "/" + suffix);
  b_.tensor(t);
  shapes_[t] = s;
  return t;
}

std::string Ctx::constant(const LayerDef& l, const std::string& suffix, const Shape& s, const std::vector<float>& v) {
  if (shape_elements(s) != static_cast<int64_t>(v.size()))
    fail(l, "internal: constant '" + suffix + "' has " + std::to_string(v.size()) + " values for shape " + shape_str(s));
  std::string n = fresh(l.name + "." + suffix);
  b_.add_constant(n, Tensor::from_vector<float>(s, v));
  shapes_[n] = s;
  return n;
}

std::string Ctx::constant_i64(const LayerDef& l, const std::string& suffix, const std::vector<int64_t>& v) {
  std::string n = fresh(l.name + "." + suffix);
  b_.add_constant(n, Tensor::from_vector<int64_t>({static_cast<int64_t>(v.size())}, v));
  shapes_[n] = {static_cast<int64_t>(v.size())};
  return n;
}

void Ctx::node(const LayerDef& l, const std::string& op, const std::vector<std::string>& ins,
               const std::vector<std::string>& outs, std::vector<Attr> attrs, const std::string& domain) {
  int& k = nodes_per_layer_[l.name];
  std::string name = k == 0 ? l.name : l.name + "/" + op + (k > 1 ? std::to_string(k) : "");
  ++k;
  for (const auto& i : ins) read_.insert(i);
  b_.add_node(op, ins, outs, std::move(attrs), name, domain, domain.empty() ? 13 : 1);
}

const std::vector<CaffeBlob>& Ctx::blobs(const LayerDef& l, size_t min_count) {
  static const std::vector<CaffeBlob> kNone;
  if (min_count == 0 && !weights_) return kNone;
  if (!weights_)
    fail(l, "needs weights: give the .caffemodel (option weights=FILE, or --weights FILE on the command line)");
  auto it = weights_->find(l.name);
  if (it == weights_->end() || it->second.blobs.size() < min_count) {
    if (min_count == 0) return kNone;
    fail(l, "needs " + std::to_string(min_count) + " weight blob(s) but " + weights_origin_ +
                (it == weights_->end() ? " has no layer of that name" : " has " + std::to_string(it->second.blobs.size())));
  }
  return it->second.blobs;
}

const CaffeBlob& Ctx::blob(const LayerDef& l, size_t index, int64_t count, const char* what) {
  const auto& bs = blobs(l, index + 1);
  const CaffeBlob& b = bs[index];
  if (static_cast<int64_t>(b.data.size()) != count)
    fail(l, std::string(what) + " (blob " + std::to_string(index) + " in " + weights_origin_ + ") has shape " +
                shape_str(b.shape) + " = " + std::to_string(b.data.size()) + " values; expected " + std::to_string(count));
  return b;
}

const LayerDef* Ctx::next_layer() const {
  return index_ + 1 < net_.layers.size() ? &net_.layers[index_ + 1] : nullptr;
}

bool Ctx::read_after(size_t after, const std::string& blob) const {
  for (size_t i = after + 1; i < net_.layers.size(); ++i) {
    const auto& l = net_.layers[i];
    if (is_training_only(l.type)) continue;
    if (std::find(l.bottoms.begin(), l.bottoms.end(), blob) != l.bottoms.end()) return true;
    if (std::find(l.tops.begin(), l.tops.end(), blob) != l.tops.end()) return false;  // overwritten
  }
  return false;
}

// ---- driver ---------------------------------------------------------------------------

class Converter {
 public:
  static std::vector<uint8_t> run(const NetDef& net, const WeightMap* weights, const std::string& weights_origin,
                                  const ImportOptions& opt, std::vector<std::string>* notes) {
    check_types(net);
    Ctx c(net, weights, weights_origin);
    c.b_.set_producer("minnow frontend_caffe");
    c.b_.set_metadata("source_format", "caffe");

    if (net.inputs.empty())
      throw CaffeError(net.root->origin + ": the net declares no input (add an Input layer or 'input:' + 'input_dim:')");
    for (const auto& kv : opt.input_shapes) {
      bool found = false;
      for (const auto& in : net.inputs) found = found || in.name == kv.first;
      if (!found) throw CaffeError("option input_shape: the net has no input '" + kv.first + "'");
    }
    for (const auto& in : net.inputs) {
      if (c.current_.count(in.name)) throw CaffeError(net.root->origin + ": input '" + in.name + "' declared twice");
      auto it = opt.input_shapes.find(in.name);
      Shape s = it != opt.input_shapes.end() ? it->second : Shape(in.shape.begin(), in.shape.end());
      // Inputs keep their blob name whatever in-place layers later write to the blob:
      // callers feed them by that name.
      std::string t = in.name;
      --c.writes_left_[in.name];
      c.b_.add_input(t, DataType::kFloat32, s);
      c.shapes_[t] = s;
      c.current_[in.name] = t;
    }

    bool used_caffe_domain = false;
    for (c.index_ = 0; c.index_ < net.layers.size(); ++c.index_) {
      const LayerDef& l = net.layers[c.index_];
      if (c.skip_next_) {
        c.skip_next_ = false;
        continue;
      }
      if (is_training_only(l.type)) {
        c.note("dropped training-only layer '" + l.name + "' (" + l.type + ")");
        continue;
      }
      if (is_data_layer(l.type))
        c.fail(l, "is a data-source layer; import a deploy prototxt whose inputs are an Input layer or an 'input:' header");
      size_t before = c.b_.ir().graph.nodes.size();
      find_converter(l.type)(c, l);
      for (size_t n = before; n < c.b_.ir().graph.nodes.size(); ++n)
        used_caffe_domain = used_caffe_domain || c.b_.ir().graph.nodes[n].domain == "caffe";
    }
    if (used_caffe_domain) c.b_.ir().opsets.push_back(ir::OpsetImport{"caffe", 1});

    // Outputs: the requested blobs, or (as Caffe) every blob whose last version no layer reads.
    std::vector<std::string> out_blobs = opt.outputs;
    if (out_blobs.empty()) {
      for (const auto& pt : c.produced_)
        if (c.current_[pt.first] == pt.second && !c.read_.count(pt.second) &&
            std::find(out_blobs.begin(), out_blobs.end(), pt.first) == out_blobs.end())
          out_blobs.push_back(pt.first);
    }
    if (out_blobs.empty()) throw CaffeError(net.root->origin + ": the net has no output (every blob is consumed)");
    for (const auto& blob : out_blobs) {
      auto it = c.current_.find(blob);
      if (it == c.current_.end()) throw CaffeError("option outputs: the net has no blob '" + blob + "'");
      std::string t = it->second;
      // An output that is an alias (Dropout / Split top) or an older version gets its own
      // name through an Identity, so callers find it under the Caffe blob name.
      if (t != blob && c.b_.ir().graph.find_tensor(blob) < 0) {
        c.b_.add_node("Identity", {t}, {blob}, {}, blob + "/output", "", 13);
        t = blob;
      }
      c.b_.add_output(t);
    }
    auto bytes = c.b_.serialize();
    if (!bytes) throw CaffeError(net.root->origin + ": " + bytes.status().message());
    if (notes) *notes = c.notes_;
    return std::move(bytes.value());
  }

 private:
  // Every unsupported layer type is reported at once, with the layers that use it.
  static void check_types(const NetDef& net) {
    std::map<std::string, std::vector<std::string>> missing;
    std::vector<std::string> order;
    for (const auto& l : net.layers) {
      if (find_converter(l.type) || is_training_only(l.type) || is_data_layer(l.type)) continue;
      if (!missing.count(l.type)) order.push_back(l.type);
      missing[l.type].push_back(l.name);
    }
    if (missing.empty()) return;
    std::string msg = net.root->origin + ": unsupported Caffe layer type" + (order.size() > 1 ? "s" : "") + ": ";
    for (size_t i = 0; i < order.size(); ++i) {
      const auto& names = missing[order[i]];
      msg += (i ? "; " : "") + order[i] + " (layer" + (names.size() > 1 ? "s " : " ");
      for (size_t k = 0; k < names.size(); ++k) {
        if (k == 8) {
          msg += ", ... " + std::to_string(names.size() - 8) + " more";
          break;
        }
        msg += (k ? ", '" : "'") + names[k] + "'";
      }
      msg += ")";
    }
    throw CaffeError(msg, CaffeError::kUnsupported);
  }
};

std::vector<uint8_t> import_caffe_text(const std::string& prototxt, const std::string& origin, const WeightMap* weights,
                                       const std::string& weights_origin, const ImportOptions& options,
                                       std::vector<std::string>* notes) {
  NetDef net = parse_net(prototxt, origin);
  return Converter::run(net, weights, weights_origin, options, notes);
}

std::vector<uint8_t> import_caffe(const std::string& prototxt_path, const ImportOptions& options,
                                  std::vector<std::string>* notes) {
  std::string text = read_text_file(prototxt_path);
  WeightMap weights;
  bool have_weights = !options.weights_path.empty();
  if (have_weights) {
    std::string bin = read_text_file(options.weights_path);
    weights = parse_caffemodel(reinterpret_cast<const uint8_t*>(bin.data()), bin.size(), options.weights_path);
  }
  return import_caffe_text(text, prototxt_path, have_weights ? &weights : nullptr, options.weights_path, options, notes);
}

}  // namespace caffe
}  // namespace minnow
