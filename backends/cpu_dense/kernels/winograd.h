// Winograd F(2x2, 3x3) convolution (Lavin & Gray, "Fast Algorithms for Convolutional
// Neural Networks", 2015) for 2-D 3x3 convolutions with stride 1, dilation 1 and one
// group: each 2x2 block of outputs ("tile") takes 16 multiplies per input channel instead
// of 36, as 16 independent GEMMs (one per element xi of the 4x4 transformed tile):
//   M_xi[m, t] = sum_c U_xi[m, c] * V_xi[c, t],
// U = G g G^T (weights, transformed once when the model is prepared), V = B^T d B (the
// tile's 4x4 input patch d), then Y = A^T M A per tile and output channel. The GEMMs run on
// the same 6x2v micro-kernel as the im2col convolution (kernels/gemm.h).
//
// F(4x4, 3x3) (m = 4: 6x6 transformed tiles, 36 GEMMs, 2.25 multiplies per output and
// channel instead of F(2x2)'s 4) takes the same steps with tiles of 4x4 outputs. Its
// interpolation points are 0, 1, -1, 1/2, -2 and infinity rather than the usual 0, +-1,
// +-2: on random 256-channel layers (float against a double reference) that halves its
// error, to about 2.8x the direct sum's RMS where the usual points give 4.5x and F(2,3)
// 0.7x. F(2,3)'s transforms only add and halve, so it stays the default
// (ConvPacked chooses; see winograd_tile_for).
//
// One run, per image: the input is copied once into a zero-padded plane per channel
// (winograd_pad_input; no bounds checks after that), then the tiles are taken in blocks
// of `nt` (winograd_block: input transform of the block into 16 B matrices in the
// micro-kernel's panel layout, 16 GEMMs, output transform with bias and clamp), each block
// in its own scratch slot, so blocks can run in parallel.
#pragma once

#include <cstdint>

#include "kernels/conv.h"
#include "kernels/gemm.h"

namespace minnow {
namespace cpu_dense {
namespace kernels {

// 2-D (trivial D axis), 3x3, stride 1, dilation 1, one group.
bool winograd_applies(const ConvShape& s);

struct WinogradWeights {
  int m = 2;      // output tile: 2 (F(2x2, 3x3)) or 4 (F(4x4, 3x3))
  int64_t M = 0, C = 0;
  FloatBuf u;     // [n*n][M][C]: U_xi = (G g G^T)[xi] per (m, c), xi = n * row + column, n = m + 2
  FloatBuf bias;  // [M] or null
};
// w: [M, C, 3, 3], bias [M] or null; tile 2 or 4.
WinogradWeights pack_winograd(const float* w, int64_t M, int64_t C, const float* bias, int tile = 2);

struct WinogradPlan {
  int m = 2, n = 4, nn = 16;                    // output tile m x m, patch n x n (n = m + 2): nn matrices
  int64_t tiles_h = 0, tiles_w = 0, tiles = 0;  // m x m output tiles per image
  int64_t hp = 0, wp = 0;                       // padded input plane: m * tiles + 2, m * (tiles_w + 1)
  // The padded input's first row held in xp: 0 (every row), or a worker's first row where
  // xp holds only rows [row0, row0 + hp) of each channel (winograd_worker_rows).
  int64_t row0 = 0;
  int64_t nt = 0, blocks = 0;                   // tiles per block (a multiple of 16), blocks per image
  int64_t kc = 0;                               // input channels per GEMM k-block
  int64_t pad_floats = 0;                       // padded input of one image, and slack
  int64_t in_floats = 0;                        // one block's input part: its V matrices
  int64_t m_floats = 0;                         // one block's M matrices
  int64_t slot_floats = 0;                      // both: the input part, then M
};
WinogradPlan plan_winograd(const ConvShape& s, int tile = 2);
// Floats past the padded input's last row that the input transform may read (its whole-
// vector loads of a group's last run of tiles): >= its vector width (8) - 2.
constexpr int64_t kWinogradInputSlackFloats = 16;
// The padded rows [*r0, *r1) that tiles [t0, t1) read (t0 < t1): their tile rows' and
// the two rows below the last one.
void winograd_tiles_rows(const WinogradPlan& p, int64_t t0, int64_t t1, int64_t* r0, int64_t* r1);
// Workers that take runs of tiles of their own (ConvPacked::run_winograd) start them at
// multiples of this many tiles (half a GEMM panel), so that only the map's last block can
// end in a panel a little over half full (plan_winograd sizes its dot columns for every
// such start).
int64_t winograd_run_align();
// A plan whose xp holds only padded rows [r0, r1) of each channel (row0 = r0, hp = r1 - r0),
// for a worker that pads the rows its blocks read into memory of its own.
WinogradPlan winograd_worker_rows(const WinogradPlan& p, int64_t r0, int64_t r1);

// Channels [c0, c1) of one image's input x (C x H x W) into xp: C planes of hp rows, each
// row the wp padded columns split into m phases (phase j holds columns m k + j, tiles_w + 1
// each: for m = 2 its even columns then its odd ones), zero outside the input.
void winograd_pad_input(const ConvShape& s, const WinogradPlan& p, const float* x, int64_t c0,
                        int64_t c1, float* xp);
// Padded rows [r0, r1) (of hp) of every channel: the rows one worker's blocks read
// (winograd_block_pad_row), so that it reads what it wrote itself.
void winograd_pad_input_rows(const ConvShape& s, const WinogradPlan& p, const float* x, int64_t r0,
                             int64_t r1, float* xp);
// The first padded row of block b's tiles (p.hp for b == p.blocks): a worker that takes
// blocks [b0, b1) pads rows [winograd_block_pad_row(b0), winograd_block_pad_row(b1)); the
// two rows below its last tile row come from the next worker.
inline int64_t winograd_block_pad_row(const WinogradPlan& p, int64_t b) {
  return b >= p.blocks ? p.hp : p.m * (b * p.nt / p.tiles_w);
}

// The most tiles the output transform takes at once (one vector of them: AVX-512's 16
// floats): it reads M's lanes from a group's first tile on, up to this many minus one past
// the block's last tile (plan_winograd and winograd_stride leave room for them).
constexpr int kOutputGroupLanes = 16;
// The transforms' view of one block (winograd_block fills it).
struct WinogradXform {
  int m = 2;                           // output tile (WinogradPlan::m)
  int64_t C = 0, M = 0, hp = 0, tiles_w = 0, out_h = 0, out_w = 0;
  int64_t row0 = 0;                    // xp's first padded row (WinogradPlan::row0)
  int64_t t0 = 0, count = 0;          // the block's first tile and its number of tiles
  int64_t nt = 0, nr = 0, panels = 0;  // lanes (tiles) per block, per panel; nt / nr
  int64_t v_stride = 0, m_stride = 0;  // floats from one xi's V (M) matrix to the next
  int64_t c_begin = 0, c_end = 0;      // input channels the input transform does
  int64_t m_begin = 0, m_end = 0;      // output channels the output transform does
  int64_t m_row0 = 0;                  // the output channel in M's first row
};
// The 16 (36) matrices of a block are laid 64 bytes further apart than their size: at sizes
// of a multiple of 4 KB the transforms' 16 loads or stores per tile all fell into one L1
// set (the input transform took 16 ns per tile and channel instead of ~3).
inline int64_t winograd_stride(int64_t floats) { return floats + 16; }
// V [nn][panels][C][nr] (xi apart by v_stride) = B^T d B of the block's tiles (zeros in
// lanes past `count`), for input channels [c_begin, c_end).
void winograd_input_transform(const WinogradXform& x, const float* xp, float* v);
// y (M x OH x OW) = A^T M A + bias, clamped, from M [nn][rows][nt] (xi apart by m_stride;
// row r holds output channel m_row0 + r), output channels [m_begin, m_end); bias [M] or null.
void winograd_output_transform(const WinogradXform& x, const float* m, const float* bias,
                               float lo, float hi, float* y, const float* addend = nullptr);

// Tile block `b` of one image: y (M x OH x OW) from its padded input xp. slot: p.slot_floats
// floats used by this call alone; lo / hi clamp the outputs (after the bias).
void winograd_block(const ConvShape& s, const WinogradWeights& w, const WinogradPlan& p,
                    int64_t b, const float* xp, float* y, float* slot, float lo, float hi,
                    const float* addend = nullptr);
// The same for tiles [t0, t0 + count) as one block (count <= p.nt, t0 a multiple of
// winograd_run_align() or of p.nt): a worker's run of tiles in blocks from its own start.
void winograd_tiles(const ConvShape& s, const WinogradWeights& w, const WinogradPlan& p,
                    int64_t t0, int64_t count, const float* xp, float* y, float* slot, float lo,
                    float hi, const float* addend = nullptr);
// winograd_block in two phases, so that workers can share one block (plan_winograd's
// single block of a small map): the input transform of input channels [c0, c1) into the
// block's input part `in` (p.in_floats), then, once every channel is in, the GEMMs and
// output transform of output channels [m0, m1) (m0 a multiple of kGemmMR), through the
// M matrices `m` (p.m_floats; calls on disjoint output channels write disjoint rows).
// Calls on disjoint ranges may run concurrently; several workers may also each transform
// all channels into an input part of their own (ConvPacked::run_winograd).
void winograd_block_input(const ConvShape& s, const WinogradPlan& p, int64_t b, const float* xp,
                          float* in, int64_t c0, int64_t c1);
// With `m_own`, m holds rows [m0, m1) alone (winograd_rows_m_floats(p, m1 - m0) floats):
// a worker's M in memory of its own (ConvPacked::run_winograd) instead of its rows of one
// M that all the workers write.
void winograd_block_rows(const ConvShape& s, const WinogradWeights& w, const WinogradPlan& p,
                         int64_t b, float* y, const float* in, float* m, float lo, float hi,
                         const float* addend, int64_t m0, int64_t m1, bool m_own = false);
// The floats of an M of `rows` rows (p.m_floats for all s.M); each matrix keeps
// winograd_stride's 16 floats after it, which the output transform's widest group reads into.
inline int64_t winograd_rows_m_floats(const WinogradPlan& p, int64_t rows) { return p.nn * winograd_stride(rows * p.nt); }

}  // namespace kernels
}  // namespace cpu_dense
}  // namespace minnow
