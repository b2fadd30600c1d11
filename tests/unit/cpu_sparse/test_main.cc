// The cpu_sparse tests' main: every test once per SIMD target (simd_targets_main.h), so the
// AVX2 tiles, for one, are checked on an AVX-512 machine too. The plugins share libhwy's
// dispatch, so the backend tests follow the same target.
#define DOCTEST_CONFIG_IMPLEMENT
#include "../simd_targets_main.h"

int main(int argc, char** argv) { return run_per_simd_target(argc, argv, "cpu_sparse tests"); }
