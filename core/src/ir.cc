#include <minnow/ir.h>

#include <cstring>

namespace minnow {
namespace ir {

Blob Blob::copy_of(const void* data, size_t size) {
  auto mem = aligned_alloc_shared(size);
  if (size) std::memcpy(mem.get(), data, size);
  Blob b;
  b.data = static_cast<const uint8_t*>(mem.get());
  b.size = size;
  b.owner = std::move(mem);
  return b;
}

Shape TensorInfo::static_shape() const {
  Shape s;
  s.reserve(shape.size());
  for (const Dim& d : shape) s.push_back(d.value >= 0 ? d.value : -1);
  return s;
}

Attribute Attribute::Int(std::string n, int64_t v) {
  Attribute a; a.name = std::move(n); a.type = AttrType::kInt; a.i = v; return a;
}
Attribute Attribute::Float(std::string n, float v) {
  Attribute a; a.name = std::move(n); a.type = AttrType::kFloat; a.f = v; return a;
}
Attribute Attribute::String(std::string n, std::string v) {
  Attribute a; a.name = std::move(n); a.type = AttrType::kString; a.s = std::move(v); return a;
}
Attribute Attribute::Ints(std::string n, std::vector<int64_t> v) {
  Attribute a; a.name = std::move(n); a.type = AttrType::kInts; a.ints = std::move(v); return a;
}
Attribute Attribute::Floats(std::string n, std::vector<float> v) {
  Attribute a; a.name = std::move(n); a.type = AttrType::kFloats; a.floats = std::move(v); return a;
}
Attribute Attribute::Strings(std::string n, std::vector<std::string> v) {
  Attribute a; a.name = std::move(n); a.type = AttrType::kStrings; a.strings = std::move(v); return a;
}
Attribute Attribute::TensorRef(std::string n, int32_t t) {
  Attribute a; a.name = std::move(n); a.type = AttrType::kTensor; a.tensor = t; return a;
}

const Attribute* Node::attr(const std::string& n) const {
  for (const auto& a : attributes)
    if (a.name == n) return &a;
  return nullptr;
}

std::string Node::describe() const {
  std::string d = domain.empty() ? op : domain + "::" + op;
  return d + " node '" + name + "'";
}

int Graph::find_tensor(const std::string& n) const {
  for (size_t i = 0; i < tensors.size(); ++i)
    if (tensors[i].name == n) return static_cast<int>(i);
  return -1;
}

}  // namespace ir
}  // namespace minnow
