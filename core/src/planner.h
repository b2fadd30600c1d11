// Memory planner (internal, unit-tested): places every intermediate tensor in one arena
// from its lifetime, greedy by size with best fit (as TFLite's arena planner), and lets
// an element-wise op write its output over an input that dies at that op.
#pragma once

#include <minnow/export.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace minnow {

struct BufferRequest {
  size_t size = 0;
  int first_use = 0;  // step that writes it
  int last_use = 0;   // last step that reads it (>= first_use)
  // May share the memory of this other request (the op's in-place input), if that one's
  // last use is this one's first use and it is at least as large. -1: no.
  int inplace_of = -1;
};

struct MemoryPlan {
  std::vector<size_t> offsets;   // per request
  std::vector<int> shares_with;  // per request: the request whose memory it reuses in place, or -1
  size_t arena_size = 0;
};

// Exported (internal API) for tests/unit/planner_test.
MINNOW_API MemoryPlan plan_memory(const std::vector<BufferRequest>& requests, size_t alignment = 64);

}  // namespace minnow
