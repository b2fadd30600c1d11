#include "planner.h"

#include <algorithm>
#include <limits>
#include <numeric>

namespace minnow {

namespace {
size_t align_up(size_t v, size_t a) { return (v + a - 1) / a * a; }
}  // namespace

MemoryPlan plan_memory(const std::vector<BufferRequest>& req, size_t alignment) {
  const size_t n = req.size();
  MemoryPlan plan;
  plan.offsets.assign(n, 0);
  plan.shares_with.assign(n, -1);

  // 1. In-place chains: request i joins the group of its in-place input when that input
  //    dies exactly where i is born and is big enough. A group is placed as one block
  //    whose lifetime is the union of its members'.
  std::vector<int> group(n);
  std::iota(group.begin(), group.end(), 0);
  std::vector<bool> taken(n, false);  // an input can donate its memory once
  for (size_t i = 0; i < n; ++i) {
    int j = req[i].inplace_of;
    if (j < 0 || static_cast<size_t>(j) >= n || static_cast<size_t>(j) == i) continue;
    if (taken[j] || req[j].last_use != req[i].first_use || req[j].size < req[i].size) continue;
    taken[j] = true;
    group[i] = group[j];
    plan.shares_with[i] = j;
  }
  struct Block {
    size_t size = 0;
    int first = std::numeric_limits<int>::max(), last = -1;
    size_t offset = 0;
    bool used = false;
  };
  std::vector<Block> blocks(n);
  for (size_t i = 0; i < n; ++i) {
    Block& b = blocks[group[i]];
    b.used = true;
    b.size = std::max(b.size, align_up(req[i].size, alignment));
    b.first = std::min(b.first, req[i].first_use);
    b.last = std::max(b.last, req[i].last_use);
  }
  std::vector<int> order;
  for (size_t i = 0; i < n; ++i)
    if (blocks[i].used && blocks[i].size > 0) order.push_back(static_cast<int>(i));
  // 2. Largest first; ties by earlier birth (deterministic).
  std::sort(order.begin(), order.end(), [&](int a, int b) {
    if (blocks[a].size != blocks[b].size) return blocks[a].size > blocks[b].size;
    if (blocks[a].first != blocks[b].first) return blocks[a].first < blocks[b].first;
    return a < b;
  });
  std::vector<int> placed;
  for (int id : order) {
    Block& b = blocks[id];
    // Blocks already placed whose lifetimes overlap this one, by offset.
    std::vector<int> live;
    for (int p : placed)
      if (blocks[p].first <= b.last && b.first <= blocks[p].last) live.push_back(p);
    std::sort(live.begin(), live.end(), [&](int x, int y) { return blocks[x].offset < blocks[y].offset; });
    // Best fit: the smallest gap that holds the block; else after the last one.
    size_t best = std::numeric_limits<size_t>::max(), best_gap = best, cursor = 0;
    for (int p : live) {
      if (blocks[p].offset >= cursor) {
        size_t gap = blocks[p].offset - cursor;
        if (gap >= b.size && gap < best_gap) {
          best_gap = gap;
          best = cursor;
        }
      }
      cursor = std::max(cursor, blocks[p].offset + blocks[p].size);
    }
    b.offset = best != std::numeric_limits<size_t>::max() ? best : cursor;
    plan.arena_size = std::max(plan.arena_size, b.offset + b.size);
    placed.push_back(id);
  }
  for (size_t i = 0; i < n; ++i) plan.offsets[i] = blocks[group[i]].offset;
  return plan;
}

}  // namespace minnow
