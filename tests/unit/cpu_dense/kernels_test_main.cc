// The cpu_dense kernel tests' main. On x86 the whole suite runs once per SIMD target this CPU
// can run (on an AVX-512 machine: AVX-512, AVX2, SSE4 ...), each forced in turn through
// Highway's dispatch, so the kernels of every target are checked here and not only the
// best one's (the SSE4 GEMM tile is 6x8, AVX2 6x16, AVX-512 6x32: each has its own tails).
// On Arm the qemu runs pick the target (scripts/arm64/test_kernels.sh).
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <hwy/targets.h>

#include <cstdio>

int main(int argc, char** argv) {
#if HWY_ARCH_X86
  int rc = 0;
  for (int64_t target : hwy::SupportedAndGeneratedTargets()) {
    if (target == HWY_SCALAR) continue;  // x86 always has SSE4 or better: scalar never runs
    hwy::SetSupportedTargetsForTest(target);
    std::printf("== cpu_dense kernel tests with SIMD target %s\n", hwy::TargetName(target));
    doctest::Context ctx(argc, argv);
    rc |= ctx.run();
    if (ctx.shouldExit()) break;
  }
  hwy::SetSupportedTargetsForTest(0);
  return rc;
#else
  doctest::Context ctx(argc, argv);
  return ctx.run();
#endif
}
