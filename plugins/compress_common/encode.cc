#include "encode.h"

#include "huffman_code.h"
#include "ir_util.h"

#include <minnow/model.h>

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

// Fills slots from blocks (storage order: block by block, row-major inside a block).
static void expand_blocks(Layout& l) {
  const int64_t bcols = l.cols / l.block_cols;
  l.slots.clear();
  for (int64_t b : l.blocks) {
    const int64_t r = b / bcols, c = b % bcols;
    for (int64_t y = 0; y < l.block_rows; ++y)
      for (int64_t x = 0; x < l.block_cols; ++x)
        l.slots.push_back((r * l.block_rows + y) * l.cols + c * l.block_cols + x);
  }
}

Layout bsr_layout(const Tensor& w, int32_t br, int32_t bc) {
  Layout l;
  view_2d(w.shape(), &l.rows, &l.cols);
  if (br <= 0 || bc <= 0 || l.rows % br || l.cols % bc) return Layout{};
  l.sparse = true;
  l.block_rows = br;
  l.block_cols = bc;
  const float* p = w.data<float>();
  const int64_t brows = l.rows / br, bcols = l.cols / bc;
  for (int64_t r = 0; r < brows; ++r)
    for (int64_t c = 0; c < bcols; ++c) {
      bool any = false;
      for (int64_t y = 0; y < br && !any; ++y)
        for (int64_t x = 0; x < bc && !any; ++x) any = p[(r * br + y) * l.cols + c * bc + x] != 0.f;
      if (any) l.blocks.push_back(r * bcols + c);
    }
  expand_blocks(l);
  return l;
}

Layout csr_layout(const Tensor& w) { return bsr_layout(w, 1, 1); }

Layout layout_of(const ir::ModelIR& m, int t) {
  const auto& info = m.graph.tensors[size_t(t)];
  Layout l;
  view_2d(info.static_shape(), &l.rows, &l.cols);
  const auto* sp = info.encodings.empty() ? nullptr : std::get_if<ir::SparseStage>(&info.encodings[0]);
  if (!sp) return dense_layout(l.rows, l.cols);
  if (sp->rows != l.rows || sp->cols != l.cols)
    throw std::runtime_error("tensor '" + info.name + "': sparse stage is not over the [dim0, rest] view");
  if (sp->nnz < 0 || sp->nnz > l.rows * l.cols)
    throw std::runtime_error("tensor '" + info.name + "': sparse stage stores more values than the tensor has");
  // The structure, read by the core's own decoder: the same sparse stage over values that
  // are all 1 decodes to the mask of stored elements.
  ir::ModelIR probe;
  probe.buffers = m.buffers;
  std::vector<float> ones(size_t(sp->nnz), 1.f);
  probe.buffers.push_back(ir::Blob::copy_of(ones.data(), ones.size() * 4));
  ir::TensorInfo ti;
  ti.name = info.name;
  ti.shape = info.shape;
  ti.encodings = {*sp, ir::DenseStage{uint32_t(probe.buffers.size() - 1), DataType::kFloat32}};
  auto mask = decode_constant(probe, ti);
  if (!mask) throw std::runtime_error(mask.status().message());
  l.sparse = true;
  l.block_rows = sp->block_rows;
  l.block_cols = sp->block_cols;
  const float* p = mask.value().data<float>();
  const int64_t bcols = l.cols / l.block_cols, brows = l.rows / l.block_rows;
  for (int64_t r = 0; r < brows; ++r)
    for (int64_t c = 0; c < bcols; ++c)
      if (p[r * l.block_rows * l.cols + c * l.block_cols] != 0.f) l.blocks.push_back(r * bcols + c);
  expand_blocks(l);
  return l;
}

std::vector<uint32_t> relative_symbols(const std::vector<int64_t>& blocks, int bits) {
  const int64_t esc = (int64_t(1) << bits) - 1;
  std::vector<uint32_t> s;
  int64_t next = 0;
  for (int64_t b : blocks) {
    int64_t gap = b - next;
    for (; gap >= esc; gap -= esc) s.push_back(uint32_t(esc));
    s.push_back(uint32_t(gap));
    next = b + 1;
  }
  return s;
}

IndexCode best_index_code(const std::vector<int64_t>& blocks, bool huffman) {
  IndexCode best;
  best.bytes = UINT64_MAX;
  for (int bits = 1; bits <= 12; ++bits) {
    std::vector<uint32_t> sym = relative_symbols(blocks, bits);
    uint64_t packed = stream_bytes((uint64_t(sym.size()) * uint64_t(bits) + 7) / 8);
    if (packed < best.bytes) {
      best.bits = bits;
      best.lengths.clear();
      best.bytes = packed;
      best.symbols = sym;
    }
    if (!huffman || sym.empty()) continue;
    std::vector<uint64_t> freq(size_t(1) << bits, 0);
    for (uint32_t v : sym) freq[v]++;
    while (freq.size() > 1 && freq.back() == 0) freq.pop_back();  // shorter code-length table
    std::vector<uint8_t> len = huffman_code_lengths(freq, 24);
    uint64_t coded = stream_bytes((huffman_bits(freq, len) + 7) / 8) + len.size() + 16;  // + the code-length vector's header
    if (coded < best.bytes) {
      best.bits = bits;
      best.lengths = std::move(len);
      best.bytes = coded;
      best.symbols = std::move(sym);
    }
  }
  return best;
}

uint64_t sparse_index_bytes(const Layout& l) { return best_index_code(l.blocks, false).bytes; }

ir::SparseStage sparse_stage(ir::ModelIR& m, const Layout& l, bool huffman) {
  if (!l.sparse) throw std::runtime_error("internal: sparse stage for a dense layout");
  IndexCode code = best_index_code(l.blocks, huffman);
  ir::SparseStage s;
  s.format = l.block_rows == 1 && l.block_cols == 1 ? ir::SparseFormat::kCSR : ir::SparseFormat::kBSR;
  s.rows = l.rows;
  s.cols = l.cols;
  s.block_rows = l.block_rows;
  s.block_cols = l.block_cols;
  s.nnz = int64_t(l.slots.size());
  s.index = ir::SparseIndex::kRelative;
  s.index_bits = code.bits;
  s.index_count = int64_t(code.symbols.size());
  if (code.lengths.empty()) {
    std::vector<uint8_t> packed = pack_bits(code.symbols, code.bits);
    s.index_buffer = add_buffer(m, packed.data(), packed.size());
  } else {
    BitStream bs = huffman_encode(code.symbols, code.lengths);
    s.index_buffer = add_buffer(m, bs.bytes.data(), bs.bytes.size());
    s.index_code_lengths = std::move(code.lengths);
    s.index_bit_length = bs.bits;
  }
  return s;
}

void store_values(ir::ModelIR& m, int t, const Layout& l, const std::vector<float>& values) {
  auto& info = m.graph.tensors[size_t(t)];
  info.quant = ir::QuantParams{};
  uint32_t vb = add_buffer(m, values.data(), values.size() * 4);
  std::vector<ir::EncodingStage> enc;
  if (l.sparse) enc.push_back(sparse_stage(m, l));
  enc.push_back(ir::DenseStage{vb, DataType::kFloat32});
  m.graph.tensors[size_t(t)].encodings = std::move(enc);
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
  m.graph.tensors[size_t(t)].encodings = std::move(enc);
}

Layout store_smallest(ir::ModelIR& m, int t, const Tensor& w) {
  Layout best;
  view_2d(w.shape(), &best.rows, &best.cols);
  uint64_t best_bytes = padded(uint64_t(w.elements()) * 4);
  const int32_t shapes[3][2] = {{1, 1}, {1, 4}, {4, 1}};
  for (const auto& bs : shapes) {
    Layout l = bsr_layout(w, bs[0], bs[1]);
    if (!l.sparse) continue;
    uint64_t bytes = sparse_index_bytes(l) + padded(uint64_t(l.slots.size()) * 4);
    if (bytes < best_bytes) {
      best_bytes = bytes;
      best = std::move(l);
    }
  }
  if (!best.sparse) {
    set_dense(m, t, w);
    return dense_layout(best.rows, best.cols);
  }
  const float* p = w.data<float>();
  std::vector<float> v;
  for (int64_t s : best.slots) v.push_back(p[s]);
  store_values(m, t, best, v);
  return best;
}

std::string layout_name(const Layout& l) {
  if (!l.sparse) return "dense";
  if (l.block_rows == 1 && l.block_cols == 1) return "CSR";
  return "BSR " + std::to_string(l.block_rows) + "x" + std::to_string(l.block_cols);
}

}  // namespace compress
}  // namespace minnow
