// The training graph's dense helpers, shared by its op files (train_graph.cc, train_lstm.cc).
#pragma once

#include <cstdint>
#include <vector>

namespace minnow {
namespace compress {

// C[M,N] (+)= A[M,K] * B[K,N], all row-major. Blocks of four rows in parallel (oneTBB),
// register tiles of 4 x 8 outputs (the compiler vectorises them); sums over k in order.
void matmul(const float* A, const float* B, float* C, int64_t M, int64_t K, int64_t N, bool acc);
// The same with the tile chosen (tests): 16 (AVX2, where the CPU has it), 8 (SSE2), 0 (the
// plain loop); matmul() picks the widest.
void matmul_tiled(int tile_w, const float* A, const float* B, float* C, int64_t M, int64_t K, int64_t N, bool acc);

// X[r, c] -> X^T[c, r].
std::vector<float> transpose(const float* X, int64_t r, int64_t c);

}  // namespace compress
}  // namespace minnow
