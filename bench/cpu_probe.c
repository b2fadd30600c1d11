/* How fast this CPU runs a fixed loop right now: bench/compare.js runs it on each CPU a
 * row of its table uses, before and after the row, to show when the host slowed one.
 *
 * On the shared VMs of BENCHMARKS.md a busy neighbour on a vCPU's host core (its sibling
 * hyperthread) took a third to a half of that vCPU's throughput for minutes at a time,
 * one vCPU or both, and moved the ratios of a row by more than any change being measured.
 * The loop is multiply-adds through a 4 KiB array in L1 (a load and a store each): the
 * same resources as the engines' kernels, so it slows with them.
 *
 *   cpu_probe [MS]   -> {"mops": N}  (million multiply-adds a second, over about MS ms: 40)
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

#define N 1024

int main(int argc, char** argv) {
  const double budget = (argc > 1 ? atof(argv[1]) : 40.0) / 1000.0;
  static float a[N];
  for (int i = 0; i < N; ++i) a[i] = 1.0f + (float)i * 1e-7f;
  const float b = 0.999999f, c = 1e-7f;
  long passes = 0;
  /* A short warm-up (clock ramp, page faults), then whole passes until the budget. */
  for (int p = 0; p < 200; ++p)
    for (int i = 0; i < N; ++i) a[i] = a[i] * b + c;
  const double t0 = now_s();
  double t = t0;
  do {
    for (int p = 0; p < 100; ++p)
      for (int i = 0; i < N; ++i) a[i] = a[i] * b + c;
    passes += 100;
    t = now_s();
  } while (t - t0 < budget);
  /* A volatile sink keeps the loop from being optimised away. */
  volatile float sink = 0.0f;
  for (int i = 0; i < N; ++i) sink += a[i];
  printf("{\"mops\": %.1f}\n", (double)passes * N / (t - t0) / 1e6);
  return 0;
}
