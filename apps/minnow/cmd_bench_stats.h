// Numbers for `minnow bench`: order statistics of run times and process memory figures.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <vector>

#include <sys/resource.h>
#include <unistd.h>

namespace minnow {
namespace cli {

struct TimeStats {
  double median = 0, min = 0, max = 0, mean = 0, p90 = 0;
};

// Median of an even count is the mean of the two middle values.
inline TimeStats time_stats(std::vector<double> v) {
  TimeStats s;
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  s.median = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
  s.min = v.front();
  s.max = v.back();
  for (double x : v) s.mean += x;
  s.mean /= double(n);
  s.p90 = v[std::min(n - 1, (n * 9) / 10)];
  return s;
}

// Resident set size now (bytes), from /proc/self/statm; 0 where there is no /proc.
inline size_t current_rss_bytes() {
  FILE* f = std::fopen("/proc/self/statm", "r");
  if (!f) return 0;
  unsigned long size = 0, resident = 0;
  int n = std::fscanf(f, "%lu %lu", &size, &resident);
  std::fclose(f);
  return n == 2 ? size_t(resident) * size_t(sysconf(_SC_PAGESIZE)) : 0;
}

// Highest resident set size of the process so far (bytes).
inline size_t peak_rss_bytes() {
  struct rusage ru {};
  if (getrusage(RUSAGE_SELF, &ru) != 0) return 0;
  return size_t(ru.ru_maxrss) * 1024;  // Linux reports KiB
}

}  // namespace cli
}  // namespace minnow
