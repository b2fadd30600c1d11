// The cpu_dense kernel tests' main: every test once per SIMD target (simd_targets_main.h);
// the SSE4 GEMM tile is 6x8, AVX2 6x16, AVX-512 6x32, and each has its own tails.
#define DOCTEST_CONFIG_IMPLEMENT
#include "../simd_targets_main.h"

int main(int argc, char** argv) { return run_per_simd_target(argc, argv, "cpu_dense kernel tests"); }
