// Writers for the schema's weight encodings, matching core/src/decode.cc exactly:
// CSR (row_ptr / col_idx int32 over the tensor's 2-D view [dim0, rest]), codebooks
// (centroids + n-bit indices packed little-endian, bit k*bits+j = bit j of index k), and
// the choice of the smaller of dense and sparse.
#pragma once

#include <minnow/ir.h>
#include <minnow/types.h>

#include <cstdint>
#include <vector>

namespace minnow {
namespace compress {

std::vector<uint8_t> pack_bits(const std::vector<uint32_t>& idx, int bits);
std::vector<uint32_t> unpack_bits(const uint8_t* data, size_t count, int bits);

// Which elements are stored, in storage order: every element (dense) or the CSR
// structure of the non-zeros of the tensor's 2-D view.
struct Layout {
  bool sparse = false;
  int64_t rows = 0, cols = 0;
  std::vector<int32_t> row_ptr, col_idx;
  std::vector<int64_t> slots;  // flat element index of each stored value
};
Layout dense_layout(int64_t rows, int64_t cols);
Layout csr_layout(const Tensor& w);  // non-zeros of w, 2-D view [dim0, rest]
// The layout of a stored constant: CSR/BSR structure when its outermost stage is sparse.
Layout layout_of(const ir::ModelIR& m, int t);

// Bytes of the index structure (row_ptr + col_idx) of a CSR layout.
uint64_t csr_index_bytes(const Layout& l);

// Stores float values (one per slot) under `layout`: [Dense] or [Sparse, Dense].
void store_values(ir::ModelIR& m, int t, const Layout& layout, const std::vector<float>& values);
// Stores a codebook (one index per slot): [Codebook] or [Sparse, Codebook].
void store_codebook(ir::ModelIR& m, int t, const Layout& layout, const std::vector<float>& centroids,
                    const std::vector<uint32_t>& idx, int bits);

// Stores w as dense or CSR of its non-zeros, whichever is smaller; returns true for CSR.
bool store_smallest(ir::ModelIR& m, int t, const Tensor& w);

}  // namespace compress
}  // namespace minnow
