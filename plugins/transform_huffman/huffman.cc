// huffman: canonical Huffman coding of codebook index streams and of sparse (relative)
// index streams, per tensor, only where it makes the tensor smaller (the "adaptive" part).
// It also makes the final dense-or-sparse choice for codebook tensors, now that the real
// coded sizes are known: a pruned tensor stored dense with a zero centroid (cheap before
// coding) may be smaller as relative indices + non-zero codebook indices, both coded.
// Lossless: the decoded tensor is bit-identical. compact=1 (default) also has the file
// written in the compact layout (format 1.3: the model description deflated), which for
// a compressed model of a few kilobytes is 40-60 % of the file before.
#include "../compress_common/encode.h"
#include "../compress_common/huffman_code.h"
#include "../compress_common/ir_util.h"
#include "../compress_common/transform_plugin.h"

#include <cstdio>

namespace minnow {
namespace compress {
namespace {

// What a Huffman stage costs in the flatbuffer besides its code lengths (table, vtable,
// union entry), so tiny tensors are not coded for a loss.
constexpr uint64_t kHuffmanStageBytes = 48;
constexpr uint64_t kSparseStageBytes = 64;

// A symbol stream stored packed or Huffman coded, whichever is smaller (file bytes).
struct SymbolCode {
  std::vector<uint8_t> lengths;  // empty: packed
  uint64_t bytes = 0;
};
SymbolCode best_symbol_code(const std::vector<uint32_t>& sym, size_t alphabet, int bits, int max_len) {
  SymbolCode c;
  c.bytes = stream_bytes((uint64_t(sym.size()) * uint64_t(bits) + 7) / 8);
  if (sym.empty()) return c;
  std::vector<uint64_t> freq(alphabet, 0);
  for (uint32_t v : sym) freq[v]++;
  while (freq.size() > 1 && freq.back() == 0) freq.pop_back();
  std::vector<uint8_t> len = huffman_code_lengths(freq, max_len);
  uint64_t coded = stream_bytes((huffman_bits(freq, len) + 7) / 8) + len.size() + kHuffmanStageBytes;
  if (coded < c.bytes) {
    c.lengths = std::move(len);
    c.bytes = coded;
  }
  return c;
}

void store_symbols(ir::ModelIR& m, int t, const Layout& l, const std::vector<float>& centroids,
                   const std::vector<uint32_t>& idx, int bits, const SymbolCode& code) {
  store_codebook(m, t, l, centroids, idx, bits);
  auto& enc = m.graph.tensors[size_t(t)].encodings;
  if (l.sparse) enc[0] = sparse_stage(m, l, true);
  if (code.lengths.empty()) return;
  BitStream bs = huffman_encode(idx, code.lengths);
  ir::HuffmanStage h;
  h.code_lengths = code.lengths;
  h.count = int64_t(idx.size());
  h.bit_length = bs.bits;
  h.bitstream = add_buffer(m, bs.bytes.data(), bs.bytes.size());
  enc.push_back(h);
}

// A tensor stored as dense int8 levels with zero points of 0 (symmetric uniform
// quantization), stored instead as the relative positions of its non-zero levels (Huffman
// coded where smaller) + those levels, when that is smaller in the file. Lossless.
bool sparsify_levels(ir::ModelIR& m, int t) {
  const auto& info = m.graph.tensors[size_t(t)];
  if (info.encodings.size() != 1 || info.quant.empty()) return false;
  const auto* d = std::get_if<ir::DenseStage>(&info.encodings[0]);
  if (!d || d->element_type != DataType::kInt8) return false;
  for (int64_t z : info.quant.zero_point)
    if (z != 0) return false;
  Layout l = layout_of(m, t);
  const ir::Blob& b = m.buffers[d->buffer];
  if (l.rows * l.cols != int64_t(b.size) || b.size == 0) return false;
  Layout sp;
  sp.sparse = true;
  sp.rows = l.rows;
  sp.cols = l.cols;
  std::vector<int8_t> levels;
  for (int64_t e = 0; e < l.rows * l.cols; ++e) {
    const int8_t v = int8_t(b.data[size_t(e)]);
    if (v == 0) continue;
    sp.blocks.push_back(e);
    sp.slots.push_back(e);
    levels.push_back(v);
  }
  if (sp.slots.empty()) return false;
  const uint64_t dense = stream_bytes(b.size);
  const uint64_t as_sparse = best_index_code(sp.blocks, true).bytes + stream_bytes(levels.size()) + kSparseStageBytes;
  if (as_sparse >= dense) return false;
  ir::SparseStage st = sparse_stage(m, sp, true);
  const uint32_t values = add_buffer(m, levels.data(), levels.size());
  m.graph.tensors[size_t(t)].encodings = {st, ir::DenseStage{values, DataType::kInt8}};
  return true;
}

void huffman(TransformContext& ctx) {
  ir::ModelIR& m = ctx.model;
  const int max_len = int(ctx.options.get_int("max_code_length", 24));
  if (max_len < 1 || max_len > 32) throw std::runtime_error("huffman: max_code_length must be 1..32");
  const bool compact = ctx.options.get_bool("compact", true);
  m.compact = compact;
  char line[320];
  uint64_t total_before = 0, total_after = 0;
  int coded = 0, kept = 0;
  ctx.report << "huffman:\n";
  for (size_t ti = 0; ti < m.graph.tensors.size(); ++ti) {
    const int t = int(ti);
    const auto info = m.graph.tensors[ti];
    if (info.encodings.empty() || std::holds_alternative<ir::HuffmanStage>(info.encodings.back())) continue;
    const auto* cb = std::get_if<ir::CodebookStage>(&info.encodings.back());
    const bool sparse = std::holds_alternative<ir::SparseStage>(info.encodings.front());
    if (!cb && !sparse) {
      // Dense int8 levels (quantize's small tensors and biases): their zero levels left out
      // when a relative index stream costs less than the zeros.
      const uint64_t before = stored_bytes(m, t);
      if (sparsify_levels(m, t)) {
        const uint64_t after = stored_bytes(m, t);
        total_before += before;
        total_after += after;
        ++coded;
        std::snprintf(line, sizeof line, "  %-24s %8llu -> %8llu bytes  sparse int8 levels, indices coded\n",
                      info.name.c_str(), (unsigned long long)before, (unsigned long long)after);
        ctx.report << line;
      }
      continue;
    }
    const uint64_t before = stored_bytes(m, t);
    total_before += before;
    if (!cb) {  // sparse with raw values: code the index stream only
      Layout l = layout_of(m, t);
      m.graph.tensors[ti].encodings[0] = sparse_stage(m, l, true);
    } else {
      const ir::Blob& packed = m.buffers[cb->indices];
      if (packed.size * 8 < uint64_t(cb->count) * uint64_t(cb->bits))
        throw std::runtime_error("huffman: tensor '" + info.name + "': codebook index buffer too small");
      std::vector<uint32_t> idx = unpack_bits(packed.data, size_t(cb->count), cb->bits);
      for (uint32_t v : idx)
        if (v >= cb->centroids.size()) throw std::runtime_error("huffman: tensor '" + info.name + "': index out of range");
      Layout l = layout_of(m, t);
      std::vector<float> cent = cb->centroids;
      const int bits = cb->bits;
      // Per element: its codebook index, or -1 where nothing is stored (a zero).
      const int64_t n = l.rows * l.cols;
      std::vector<int64_t> full(size_t(n), -1);
      for (size_t s = 0; s < l.slots.size(); ++s) full[size_t(l.slots[s])] = idx[s];
      // A zero element is one whose centroid decodes to 0 (symmetric levels or real values).
      bool zero_is_zero = true;
      for (int64_t z : info.quant.zero_point) zero_is_zero = zero_is_zero && z == 0;
      int64_t zero_sym = -1;
      for (size_t c = 0; c < cent.size(); ++c)
        if (cent[c] == 0.f) { zero_sym = int64_t(c); break; }
      // Candidate A: every element (dense), a zero centroid for what was not stored.
      std::vector<float> cent_a = cent;
      int64_t za = zero_sym;
      if (za < 0 && l.sparse && cent_a.size() < (size_t(1) << bits)) {
        za = int64_t(cent_a.size());
        cent_a.push_back(0.f);
      }
      bool a_ok = !l.sparse || za >= 0;
      std::vector<uint32_t> idx_a;
      if (a_ok)
        for (int64_t e = 0; e < n; ++e) idx_a.push_back(uint32_t(full[size_t(e)] < 0 ? za : full[size_t(e)]));
      SymbolCode code_a = a_ok ? best_symbol_code(idx_a, cent_a.size(), bits, max_len) : SymbolCode{};
      uint64_t bytes_a = a_ok ? code_a.bytes + cent_a.size() * 4 : UINT64_MAX;
      // Candidate B: CSR of the elements that are not zero.
      Layout lb;
      lb.sparse = true;
      lb.rows = l.rows;
      lb.cols = l.cols;
      std::vector<uint32_t> idx_b;
      for (int64_t e = 0; e < n; ++e) {
        int64_t v = full[size_t(e)];
        if (v < 0 || (zero_is_zero && cent[size_t(v)] == 0.f)) continue;
        lb.blocks.push_back(e);
        lb.slots.push_back(e);
        idx_b.push_back(uint32_t(v));
      }
      uint64_t bytes_b = UINT64_MAX;
      SymbolCode code_b;
      if (zero_is_zero && !lb.slots.empty()) {
        code_b = best_symbol_code(idx_b, cent.size(), bits, max_len);
        bytes_b = best_index_code(lb.blocks, true).bytes + code_b.bytes + cent.size() * 4 + kSparseStageBytes;
      }
      if (bytes_b < bytes_a) store_symbols(m, t, lb, cent, idx_b, bits, code_b);
      else store_symbols(m, t, dense_layout(l.rows, l.cols), cent_a, idx_a, bits, code_a);
    }
    const uint64_t after = stored_bytes(m, t);
    const auto& enc = m.graph.tensors[ti].encodings;
    const bool now_sparse = std::holds_alternative<ir::SparseStage>(enc.front());
    const bool index_coded = now_sparse && !std::get<ir::SparseStage>(enc.front()).index_code_lengths.empty();
    const bool values_coded = std::holds_alternative<ir::HuffmanStage>(enc.back());
    if (index_coded || values_coded) ++coded;
    else ++kept;
    total_after += after;
    std::snprintf(line, sizeof line, "  %-24s %8llu -> %8llu bytes  %s%s%s\n", info.name.c_str(),
                  (unsigned long long)before, (unsigned long long)after, now_sparse ? "sparse" : "dense",
                  index_coded ? ", indices coded" : "", values_coded ? ", values coded" : "");
    ctx.report << line;
  }
  std::snprintf(line, sizeof line, "  %d tensors coded, %d kept; stored bytes %llu -> %llu\n", coded, kept,
                (unsigned long long)total_before, (unsigned long long)total_after);
  ctx.report << line;
  ctx.parameters = "{\"max_code_length\":" + std::to_string(max_len) + ",\"coded\":" + std::to_string(coded) +
                   ",\"compact\":" + (compact ? "true" : "false") + "}";
}

}  // namespace
}  // namespace compress
}  // namespace minnow

MINNOW_DEFINE_TRANSFORM("huffman", "0.2.0",
                        "canonical Huffman coding of codebook and sparse index streams where smaller; final dense/sparse choice (lossless)",
                        minnow::compress::huffman)
