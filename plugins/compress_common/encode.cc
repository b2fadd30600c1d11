#include "encode.h"

#include "ir_util.h"

#include <cstring>
#include <stdexcept>

namespace minnow {
namespace compress {

std::vector<uint8_t> pack_bits(const std::vector<uint32_t>& idx, int bits) {
  std::vector<uint8_t> out((idx.size() * size_t(bits) + 7) / 8, 0);
  uint64_t bit = 0;
  for (uint32_t v : idx)
    for (int j = 0; j < bits; ++j, ++bit)
      if ((v >> j) & 1u) out[bit >> 3] |= uint8_t(1u << (bit & 7));
  return out;
}

std::vector<uint32_t> unpack_bits(const uint8_t* data, size_t count, int bits) {
  std::vector<uint32_t> out(count, 0);
  uint64_t bit = 0;
  for (size_t k = 0; k < count; ++k)
    for (int j = 0; j < bits; ++j, ++bit) out[k] |= uint32_t((data[bit >> 3] >> (bit & 7)) & 1) << j;
  return out;
}

Layout dense_layout(int64_t rows, int64_t cols) {
  Layout l;
  l.rows = rows;
  l.cols = cols;
  l.slots.resize(size_t(rows * cols));
  for (int64_t i = 0; i < rows * cols; ++i) l.slots[size_t(i)] = i;
  return l;
}

static void view_2d(const Shape& s, int64_t* rows, int64_t* cols) {
  int64_t n = shape_elements(s);
  *rows = s.empty() ? 1 : s[0];
  if (*rows <= 0) *rows = 1;
  *cols = n / *rows;
}

Layout csr_layout(const Tensor& w) {
  Layout l;
  l.sparse = true;
  view_2d(w.shape(), &l.rows, &l.cols);
  const float* p = w.data<float>();
  l.row_ptr.push_back(0);
  for (int64_t r = 0; r < l.rows; ++r) {
    for (int64_t c = 0; c < l.cols; ++c)
      if (p[r * l.cols + c] != 0.f) {
        l.col_idx.push_back(int32_t(c));
        l.slots.push_back(r * l.cols + c);
      }
    l.row_ptr.push_back(int32_t(l.col_idx.size()));
  }
  return l;
}

static std::vector<int32_t> read_i32(const ir::Blob& b) {
  std::vector<int32_t> v(b.size / 4);
  if (!v.empty()) std::memcpy(v.data(), b.data, v.size() * 4);
  return v;
}

Layout layout_of(const ir::ModelIR& m, int t) {
  const auto& info = m.graph.tensors[t];
  Shape s = info.static_shape();
  Layout l;
  view_2d(s, &l.rows, &l.cols);
  const auto* sp = info.encodings.empty() ? nullptr : std::get_if<ir::SparseStage>(&info.encodings[0]);
  if (!sp) return dense_layout(l.rows, l.cols);
  if (sp->rows != l.rows || sp->cols != l.cols)
    throw std::runtime_error("tensor '" + info.name + "': sparse stage is not over the [dim0, rest] view");
  l.sparse = true;
  l.row_ptr = read_i32(m.buffers[sp->row_ptr]);
  l.col_idx = read_i32(m.buffers[sp->col_idx]);
  const int64_t br = sp->block_rows, bc = sp->block_cols;
  if (br != 1 || bc != 1) {
    // Expand blocks to single elements (storage order: block by block, row-major inside).
    Layout e;
    e.sparse = true;
    e.rows = l.rows;
    e.cols = l.cols;
    for (int64_t r = 0; r + 1 < int64_t(l.row_ptr.size()); ++r)
      for (int32_t k = l.row_ptr[r]; k < l.row_ptr[r + 1]; ++k)
        for (int64_t y = 0; y < br; ++y)
          for (int64_t x = 0; x < bc; ++x) e.slots.push_back((r * br + y) * l.cols + l.col_idx[k] * bc + x);
    e.row_ptr.clear();  // not re-writable as CSR; callers re-encode from slots
    return e;
  }
  for (int64_t r = 0; r < l.rows; ++r)
    for (int32_t k = l.row_ptr[r]; k < l.row_ptr[r + 1]; ++k) l.slots.push_back(r * l.cols + l.col_idx[k]);
  return l;
}

uint64_t csr_index_bytes(const Layout& l) { return (uint64_t(l.rows) + 1) * 4 + uint64_t(l.slots.size()) * 4; }

static ir::SparseStage sparse_stage(ir::ModelIR& m, const Layout& l) {
  if (l.row_ptr.size() != size_t(l.rows + 1)) throw std::runtime_error("internal: layout without CSR structure");
  ir::SparseStage s;
  s.format = ir::SparseFormat::kCSR;
  s.rows = l.rows;
  s.cols = l.cols;
  s.row_ptr = add_buffer(m, l.row_ptr.data(), l.row_ptr.size() * 4);
  s.col_idx = add_buffer(m, l.col_idx.data(), l.col_idx.size() * 4);
  s.nnz = int64_t(l.slots.size());
  return s;
}

void store_values(ir::ModelIR& m, int t, const Layout& l, const std::vector<float>& values) {
  auto& info = m.graph.tensors[t];
  info.quant = ir::QuantParams{};
  uint32_t vb = add_buffer(m, values.data(), values.size() * 4);
  info.encodings.clear();
  if (l.sparse) info.encodings.push_back(sparse_stage(m, l));
  m.graph.tensors[t].encodings.push_back(ir::DenseStage{vb, DataType::kFloat32});
}

void store_codebook(ir::ModelIR& m, int t, const Layout& l, const std::vector<float>& centroids,
                    const std::vector<uint32_t>& idx, int bits) {
  ir::CodebookStage c;
  c.centroids = centroids;
  c.bits = bits;
  c.count = int64_t(idx.size());
  std::vector<uint8_t> packed = pack_bits(idx, bits);
  c.indices = add_buffer(m, packed.data(), packed.size());
  std::vector<ir::EncodingStage> enc;
  if (l.sparse) enc.push_back(sparse_stage(m, l));
  enc.push_back(c);
  m.graph.tensors[t].encodings = std::move(enc);
}

bool store_smallest(ir::ModelIR& m, int t, const Tensor& w) {
  Layout sp = csr_layout(w);
  uint64_t dense = uint64_t(w.elements()) * 4;
  uint64_t sparse = csr_index_bytes(sp) + uint64_t(sp.slots.size()) * 4;
  const float* p = w.data<float>();
  if (sparse < dense) {
    std::vector<float> v;
    for (int64_t s : sp.slots) v.push_back(p[s]);
    store_values(m, t, sp, v);
    return true;
  }
  set_dense(m, t, w);
  return false;
}

}  // namespace compress
}  // namespace minnow
