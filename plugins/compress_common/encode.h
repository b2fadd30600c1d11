// Writers for the schema's weight encodings, matching core/src/decode.cc exactly:
// sparse structure as a relative index stream (schema SparseIndexFormat.RELATIVE: gap
// symbols over the tensor's 2-D view [dim0, rest], packed at the best width or Huffman
// coded), CSR or BSR; codebooks (centroids + n-bit indices packed little-endian, bit
// k*bits+j = bit j of index k); and the choice of the smallest of dense / CSR / BSR.
#pragma once

#include <minnow/ir.h>
#include <minnow/types.h>

#include <cstdint>
#include <cstring>
#include <vector>

namespace minnow {
namespace compress {

std::vector<uint8_t> pack_bits(const std::vector<uint32_t>& idx, int bits);
std::vector<uint32_t> unpack_bits(const uint8_t* data, size_t count, int bits);

// Bytes a buffer occupies in the file. One that a kernel may read in place (float values
// of the tensor's own type) starts 64-byte aligned; one the loader always decodes (index
// streams, codebook indices, Huffman bits, quantized levels) at the next 8 bytes.
inline uint64_t padded(uint64_t bytes) { return (bytes + 63) / 64 * 64; }
inline uint64_t stream_bytes(uint64_t bytes) { return (bytes + 7) / 8 * 8; }

// v rounded to 11 significant bits (10 mantissa bits, ties to even), float32's exponent
// range kept: what quantization scales and centroids are stored as. Within 2^-11 relative
// of v, far below a quantization step, and such a float's low 13 bits are zero, so the
// compact layout's deflated description holds it in about half its 4 bytes.
inline float short_float(float v) {
  if (!(v == v) || v - v != 0.f) return v;  // NaN, infinity
  uint32_t u;
  std::memcpy(&u, &v, sizeof u);
  u += 0xFFFu + ((u >> 13) & 1u);
  u &= ~0x1FFFu;
  float r;
  std::memcpy(&r, &u, sizeof r);
  return r;
}

// Which elements are stored, in storage order: every element (dense) or the sparse
// (CSR, or BSR with block_rows x block_cols blocks) structure of the tensor's 2-D view.
struct Layout {
  bool sparse = false;
  int64_t rows = 0, cols = 0;
  int32_t block_rows = 1, block_cols = 1;
  std::vector<int64_t> blocks;  // sparse: stored block positions, row-major over the block grid
  std::vector<int64_t> slots;   // flat element index of each stored value, in storage order
};
Layout dense_layout(int64_t rows, int64_t cols);
Layout csr_layout(const Tensor& w);  // non-zeros of w, 2-D view [dim0, rest]
// Blocks of w (2-D view) holding any non-zero; empty layout (sparse=false) when the block
// shape does not divide the matrix.
Layout bsr_layout(const Tensor& w, int32_t block_rows, int32_t block_cols);
// The layout of a stored constant (its outermost stage sparse or not).
Layout layout_of(const ir::ModelIR& m, int t);

// The relative index stream of a layout's block positions at `bits` per symbol.
std::vector<uint32_t> relative_symbols(const std::vector<int64_t>& blocks, int bits);
// How the index stream is stored: packed `bits` wide, or Huffman coded (lengths non-empty).
struct IndexCode {
  int bits = 8;
  std::vector<uint32_t> symbols;
  std::vector<uint8_t> lengths;
  uint64_t bytes = 0;  // index buffer (padded) + code lengths
};
// The smallest index coding over widths 1..12 (Huffman only when `huffman`).
IndexCode best_index_code(const std::vector<int64_t>& blocks, bool huffman);
// Bytes of the index structure of a sparse layout (packed at its best width, padded).
uint64_t sparse_index_bytes(const Layout& l);

// Stores float values (one per slot) under `layout`: [Dense] or [Sparse, Dense].
void store_values(ir::ModelIR& m, int t, const Layout& layout, const std::vector<float>& values);
// Stores a codebook (one index per slot): [Codebook] or [Sparse, Codebook].
void store_codebook(ir::ModelIR& m, int t, const Layout& layout, const std::vector<float>& centroids,
                    const std::vector<uint32_t>& idx, int bits);
// The sparse stage of a layout (index stream packed, or Huffman coded when `huffman` and
// that is smaller).
ir::SparseStage sparse_stage(ir::ModelIR& m, const Layout& l, bool huffman = false);

// Stores w as dense, CSR or BSR (1x4, 4x1) of its non-zeros, whichever is smallest;
// returns the layout chosen.
Layout store_smallest(ir::ModelIR& m, int t, const Tensor& w);
// "dense", "CSR" or "BSR RxC".
std::string layout_name(const Layout& l);

}  // namespace compress
}  // namespace minnow
