// A doctest main that, on x86, runs the whole suite once per SIMD target this CPU can run
// (on an AVX-512 machine: AVX-512, AVX2, SSE4 ...), each forced in turn through Highway's
// dispatch, so the kernels of every target are checked and not only the best one's. On
// Arm the qemu runs pick the target (scripts/arm64/test_kernels.sh). Included by exactly
// one file of a test executable, after `#define DOCTEST_CONFIG_IMPLEMENT`.
#pragma once

#include <doctest/doctest.h>
#include <hwy/targets.h>

#include <cstdio>

inline int run_per_simd_target(int argc, char** argv, const char* suite) {
#if HWY_ARCH_X86
  int rc = 0;
  for (int64_t target : hwy::SupportedAndGeneratedTargets()) {
    if (target == HWY_SCALAR) continue;  // x86 always has SSE4 or better: scalar never runs
    hwy::SetSupportedTargetsForTest(target);
    std::printf("== %s with SIMD target %s\n", suite, hwy::TargetName(target));
    doctest::Context ctx(argc, argv);
    rc |= ctx.run();
    if (ctx.shouldExit()) break;
  }
  hwy::SetSupportedTargetsForTest(0);
  return rc;
#else
  (void)suite;
  doctest::Context ctx(argc, argv);
  return ctx.run();
#endif
}
