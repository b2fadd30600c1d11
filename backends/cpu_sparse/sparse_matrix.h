// The compressed weight layout of the sparse backend, and how it is built from dense data.
//
// One layout covers every format: a matrix W[rows, cols] is cut into R x C blocks
// (R rows of output, C consecutive input columns); only blocks holding a non-zero are
// stored. CSR is the 1x1 case. Supported shapes: 1x1 (CSR), 1x4, 1x8 (one output, several
// inputs: vector loads of x) and 4x1 (four outputs sharing one input: one broadcast feeds
// four accumulators).
//
// Kept free of the plugin ABI, TBB and libminnow so the kernels build alone for the
// aarch64 cross tests.
#pragma once

#include <cstdint>
#include <cstring>
#include <new>
#include <string>
#include <vector>

namespace minnow {
namespace cpu_sparse {

struct BlockShape {
  int r = 1, c = 1;
  bool operator==(const BlockShape& o) const { return r == o.r && c == o.c; }
  bool operator!=(const BlockShape& o) const { return !(*this == o); }
  std::string str() const;  // "1x4"
};

// The shapes the kernels implement, in the order they are tried.
extern const BlockShape kBlockShapes[4];

// A shape can store W only if its blocks never straddle the end of a row of W: a block
// reading x past column `cols` would touch memory outside the input (rows are padded
// with zero weights instead, and the padded outputs are never stored).
inline bool shape_fits(BlockShape s, int64_t /*rows*/, int64_t cols) { return cols % s.c == 0; }

// Allocates on 64-byte boundaries (a cache line): the tiled kernels load a whole step,
// 32 or 64 bytes, from panel_val, and a load that straddles two lines costs about twice
// one that does not.
template <class T>
struct CacheLineAllocator {
  using value_type = T;
  CacheLineAllocator() = default;
  template <class U>
  CacheLineAllocator(const CacheLineAllocator<U>&) {}
  T* allocate(size_t n) { return static_cast<T*>(::operator new(n * sizeof(T), std::align_val_t(64))); }
  void deallocate(T* p, size_t) { ::operator delete(p, std::align_val_t(64)); }
  template <class U>
  bool operator==(const CacheLineAllocator<U>&) const { return true; }
  template <class U>
  bool operator!=(const CacheLineAllocator<U>&) const { return false; }
};

struct SparseMatrix {
  int64_t rows = 0, cols = 0;  // logical W[rows, cols]
  BlockShape shape;
  std::vector<int32_t> row_ptr;  // per block row: first block; size block_rows()+1
  std::vector<int32_t> col;      // per block: its first column (a multiple of shape.c)
  std::vector<float> values;     // per block: R*C values, row-major inside the block

  // Optional second copy of a CSR or 1x4 matrix for the rows form (add_row_panels): the
  // output rows sorted by block count and cut into panels of kPanel rows; step t of a
  // panel holds the t-th block of each of its rows (zero weights, column 0 where a row has
  // run out), so the rows-form kernel takes a step for all eight rows at once with no
  // per-row loop (no mispredicted loop exits on short rows) and sums the rows only once.
  // XNNPACK's spmm layout turned around: there the pixels are the lanes, here (batch 1,
  // no pixels) the output rows are.
  static constexpr int kPanel = 8;
  std::vector<int32_t> panel_ptr;  // per panel: first step; size panels()+1 (empty: none)
  std::vector<int32_t> panel_row;  // per panel lane: output row, -1 for padding
  // per step: kPanel blocks of shape.c values, row-slot major
  std::vector<float, CacheLineAllocator<float>> panel_val;
  // per step: kPanel first columns. 16 bits: a CSR step reads eight of them with two 64-bit
  // loads and takes them apart with shifts (ALU work) instead of eight loads, and loads,
  // not arithmetic, are what a batch-1 gather kernel is short of. Panels are built only
  // for matrices with at most kMaxPanelCols columns.
  std::vector<uint16_t> panel_col;
  static constexpr int64_t kMaxPanelCols = 65536;

  // Tiled panels (add_row_tiles, CSR only), the other batch-1 layout: panel_row holds the
  // rows of each panel (grouped so that their nonzeros fall in the same windows), and
  // every lane of step t reads x in one window of tile_width columns, x[tile_xoff[t] + lane]
  // (windows cut per panel where they cost least, not aligned; see for_each_tile):
  // the step loads those eight x values once and permutes them into place (one vpermps)
  // instead of eight scalar loads and shuffles. A panel takes, per window of eight columns,
  // as many steps as its fullest row has nonzeros there (zero-padded): at 90 % random
  // sparsity about 2.1 times the CSR panel's steps, each under a third of the work.
  // The lane of a slot is kept in the three lowest mantissa bits of its weight in
  // panel_val (tile_lane()): vpermps reads only those bits of each index, so the weights
  // are their own permutation and a step loads two vectors, not three. Each weight moves
  // to the nearest float with those bits, at most 4 units in the last place (5e-7
  // relative), less than the rounding of the sums themselves; padding slots are exact
  // zeros (lane 0). panel_col stays empty.
  // tile_width is the vector the kernel steps with: 8 (AVX2: panels of 8 rows, windows of
  // 8 columns, 3 lane bits, as described) or 16 (AVX-512: panels of 16 rows, windows of 16
  // columns, the lane in the 4 lowest bits, at most 8 units in the last place, 1e-6
  // relative); panel_row then has tile_width slots per panel and a step tile_width weights.
  // A panel's steps come in two runs: first the pairs (two consecutive steps in the same
  // window, tile_pairs[p] steps in all, even), whose x window the kernel loads once for
  // both, then the steps left single (windows with an odd count).
  // Tiles of a 1x4 matrix (tile_interleave = 4) are built from its nonzeros as CSR, but
  // over x de-interleaved by 4 (deinterleave_x: x[0], x[4], x[8] ..., x[1], x[5] ...),
  // column k at (k % 4) * (cols / 4) + k / 4: the elements of a block then fall in four
  // different windows, each spread like unstructured nonzeros, and a window of 16 columns
  // no longer holds up to 16 nonzeros of one row (four blocks) while its other rows hold
  // none. The kernel reads x in that order (rows() reorders it per call).
  bool tiled = false;
  int tile_width = 8;                // lanes of a tiled step (8 or 16)
  int tile_interleave = 1;           // 1: x as it is; 4: de-interleaved by 4 (1x4 blocks)
  // rows() reorders x for such tiles into a buffer on the stack: at most this many columns.
  static constexpr int64_t kMaxInterleavedCols = 4096;
  std::vector<uint16_t> tile_xoff;   // per step: first column of its window (<= cols - tile_width)
  std::vector<int32_t> tile_pairs;   // per panel: steps in pairs at its start
  // The lane a tiled weight reads: its log2(width) low bits.
  static int tile_lane(float v, int width);
  // Row slots per panel of the batch-1 layout this matrix has.
  int panel_slots() const { return tiled ? tile_width : kPanel; }

  int64_t block_rows() const { return (rows + shape.r - 1) / shape.r; }
  int64_t panels() const { return panel_ptr.empty() ? 0 : static_cast<int64_t>(panel_ptr.size()) - 1; }
  int64_t blocks() const { return static_cast<int64_t>(col.size()); }
  // Fraction of stored values (zeros inside kept blocks included) among rows*cols.
  double density() const {
    return rows * cols == 0 ? 0.0
                            : static_cast<double>(values.size()) / static_cast<double>(rows * cols);
  }
  size_t bytes() const {
    return row_ptr.size() * 4 + col.size() * 4 + values.size() * 4 + panel_ptr.size() * 4 +
           panel_row.size() * 4 + panel_val.size() * 4 + panel_col.size() * 2 + tile_xoff.size() * 2 +
           tile_pairs.size() * 4;
  }
};

inline int SparseMatrix::tile_lane(float v, int width) {
  uint32_t bits;
  std::memcpy(&bits, &v, 4);
  return static_cast<int>(bits & static_cast<uint32_t>(width - 1));
}

// Fraction of R x C blocks of W (row-major [rows, cols]) that are entirely zero; rows
// padded up to a multiple of R count as zero; 0 when the shape does not fit. With
// `transposed`, element (n, k) is w[k * rows + n] (W stored as [cols, rows]).
double block_sparsity(const float* w, int64_t rows, int64_t cols, BlockShape s,
                      bool transposed = false);

// Packs W (row-major [rows, cols], leading dimension ld) into `s` blocks, multiplying every
// value by `scale` (Gemm's alpha folds in here). Throws std::invalid_argument when the
// shape does not fit or the matrix is too big for 32-bit indices.
SparseMatrix pack(const float* w, int64_t rows, int64_t cols, int64_t ld, BlockShape s,
                  float scale = 1.0f);

// The same, reading W transposed: element (n, k) is w[k * ld + n] (MatMul / Gemm without
// transB store B as [K, N]).
SparseMatrix pack_transposed(const float* w, int64_t rows, int64_t cols, int64_t ld,
                             BlockShape s, float scale = 1.0f);

// Builds the row panels of a 1x1 (CSR) or 1x4 matrix (no-op for other shapes and for more
// than kMaxPanelCols columns): what the rows-form kernel (fully connected at batch 1, the
// LSTM gates) runs on when present.
void add_row_panels(SparseMatrix* m);

// Builds tiled panels of `width` lanes (8 or 16) instead (see SparseMatrix::tiled) for a
// CSR matrix with `width` to kMaxPanelCols columns or a 1x4 one with up to
// kMaxInterleavedCols; no-op otherwise. Replaces any row panels.
void add_row_tiles(SparseMatrix* m, int width = 8);

// x in the order the tiles of a matrix with tile_interleave c read it: out[e * cols/c + j]
// = x[j * c + e] (cols a multiple of c).
void deinterleave_x(const float* x, int64_t cols, int c, float* out);

// Steps of each batch-1 layout of a CSR or 1x4 matrix, without building it: what the
// kernels' cost comparison (add_rows_layout) weighs.
int64_t row_panel_steps(const SparseMatrix& m);
int64_t row_tile_steps(const SparseMatrix& m, int width = 8);

// The batch-1 layout for a matrix the rows-form kernels will run: row panels for CSR and
// 1x4, or tiled panels of `tile_width` lanes instead where the SIMD target has a tiled
// kernel of that width (rows_tile_width(); 0: none) and their steps cost less, by
// tile_step_cost() against kPanelStepCost (CSR) or kPanel4StepCost (1x4).
void add_rows_layout(SparseMatrix* m, int tile_width);
// Measured on Zen 3 (AVX2) with the kernels alone on one matrix, alternately (mlp 300-100
// and 784-300, lstm gates 512x128 at 70-95 % random sparsity): ns per step of each kernel,
// 2.3-2.5 for CSR panels, 0.6-0.9 for tiled ones (pairs included); fixed costs per panel
// left out (they are alike).
constexpr double kPanelStepCost = 2.4;
// 1x4 panel steps (eight blocks), the same way: 2.3-3.5 ns on the Xeon, where its 16-lane
// tiles of 1x4 matrices take 0.68-1.39 ns a step; 3.0-3.4 ns on Zen 3.
constexpr double kPanel4StepCost = 3.0;
constexpr double kTileStepCost = 0.65;
// 16-lane tiled steps (AVX-512), in the same units: on a Xeon (Sapphire Rapids, one
// 512-bit multiply-add port), the same way, 0.75-1.19 ns a step against 2.0-2.7 for its
// CSR panels (8-lane tiles there: 0.49-0.79 ns, about twice the steps).
constexpr double kTile16StepCost = 1.0;
constexpr double tile_step_cost(int width) { return width == 16 ? kTile16StepCost : kTileStepCost; }

}  // namespace cpu_sparse
}  // namespace minnow
