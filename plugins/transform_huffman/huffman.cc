// huffman: canonical Huffman coding of codebook index streams, per tensor, only where it
// makes the tensor smaller (the "adaptive" part): a tensor whose indices are close to
// uniform keeps its fixed-width packing. Lossless.
//
// Sparse index streams (CSR col_idx / row_ptr) are not coded: the schema stores them as
// plain int32 buffers, with no encoding chain of their own (see the report).
#include "../compress_common/encode.h"
#include "../compress_common/huffman_code.h"
#include "../compress_common/ir_util.h"
#include "../compress_common/transform_plugin.h"

#include <cstdio>

namespace minnow {
namespace compress {
namespace {

void huffman(TransformContext& ctx) {
  ir::ModelIR& m = ctx.model;
  const int max_len = int(ctx.options.get_int("max_code_length", 24));
  if (max_len < 1 || max_len > 32) throw std::runtime_error("huffman: max_code_length must be 1..32");
  char line[256];
  uint64_t total_before = 0, total_after = 0;
  int coded = 0, kept = 0;
  ctx.report << "huffman:\n";
  for (size_t t = 0; t < m.graph.tensors.size(); ++t) {
    auto& info = m.graph.tensors[t];
    if (info.encodings.empty()) continue;
    auto* cb = std::get_if<ir::CodebookStage>(&info.encodings.back());
    if (!cb) continue;
    const ir::Blob& packed = m.buffers[cb->indices];
    if (packed.size * 8 < uint64_t(cb->count) * uint64_t(cb->bits))
      throw std::runtime_error("huffman: tensor '" + info.name + "': codebook index buffer too small");
    std::vector<uint32_t> idx = unpack_bits(packed.data, size_t(cb->count), cb->bits);
    std::vector<uint64_t> freq(cb->centroids.size(), 0);
    for (uint32_t v : idx) {
      if (v >= freq.size()) throw std::runtime_error("huffman: tensor '" + info.name + "': index out of range");
      freq[v]++;
    }
    std::vector<uint8_t> lengths = huffman_code_lengths(freq, max_len);
    uint64_t bits = huffman_bits(freq, lengths);
    uint64_t before = packed.size;
    uint64_t after = (bits + 7) / 8 + lengths.size();
    total_before += before;
    if (after >= before) {
      total_after += before;
      ++kept;
      std::snprintf(line, sizeof line, "  %-24s %llu index bytes, Huffman would be %llu: kept\n", info.name.c_str(),
                    (unsigned long long)before, (unsigned long long)after);
      ctx.report << line;
      continue;
    }
    BitStream bs = huffman_encode(idx, lengths);
    ir::HuffmanStage h;
    h.code_lengths = lengths;
    h.count = cb->count;
    h.bit_length = bs.bits;
    uint32_t buf = add_buffer(m, bs.bytes.data(), bs.bytes.size());
    h.bitstream = buf;
    m.graph.tensors[t].encodings.push_back(h);
    total_after += after;
    ++coded;
    std::snprintf(line, sizeof line, "  %-24s %llu -> %llu index bytes (%.2f bits/index)\n", info.name.c_str(),
                  (unsigned long long)before, (unsigned long long)after, double(bits) / double(idx.size() ? idx.size() : 1));
    ctx.report << line;
  }
  std::snprintf(line, sizeof line, "  %d tensors coded, %d kept; index bytes %llu -> %llu\n", coded, kept,
                (unsigned long long)total_before, (unsigned long long)total_after);
  ctx.report << line;
  ctx.parameters = "{\"max_code_length\":" + std::to_string(max_len) + ",\"coded\":" + std::to_string(coded) + "}";
}

}  // namespace
}  // namespace compress
}  // namespace minnow

MINNOW_DEFINE_TRANSFORM("huffman", "0.1.0", "canonical Huffman coding of codebook indices where it is smaller (lossless)",
                        minnow::compress::huffman)
