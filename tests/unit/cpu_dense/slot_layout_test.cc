// SlotLayout (conv_packed.h): where run_in_slots and the Winograd blocks put their scratch
// slots. Slots never overlap nor leave the scratch; with room, each thread's static part
// of the slots (the run team's split) lies in that thread's share of the scratch.
#include <doctest/doctest.h>

#include <cstdint>
#include <vector>

#include "conv_packed.h"

using minnow::cpu_dense::SlotLayout;

namespace {

// The part of thread t of a parallel_for over `slots` on `threads` (RunTeam's static split).
int64_t part_of(int64_t sl, int64_t slots, int threads) {
  int t = 0;
  while (t + 1 < threads && slots * (t + 1) / threads <= sl) ++t;
  return t;
}

void check_layout(int threads, int64_t slots, int64_t slot_floats, int64_t floats) {
  const SlotLayout layout(threads, slots, slot_floats, floats);
  std::vector<int64_t> owner(size_t(floats), -1);
  bool by_thread = true;
  const int64_t share = floats / threads / 16 * 16;
  for (int64_t sl = 0; sl < slots; ++sl) {
    const int64_t at = layout.offset(sl);
    REQUIRE_MESSAGE(at >= 0, "slot " << sl);
    REQUIRE_MESSAGE(at + slot_floats <= floats, threads << " threads, " << slots << " slots of " << slot_floats
                                                        << " in " << floats << ": slot " << sl << " at " << at);
    for (int64_t f = at; f < at + slot_floats; ++f) {
      REQUIRE_MESSAGE(owner[size_t(f)] == -1, "slots " << owner[size_t(f)] << " and " << sl << " overlap");
      owner[size_t(f)] = sl;
    }
    const int64_t t = part_of(sl, slots, threads);
    if (at < t * share || at + slot_floats > (t + 1) * share) by_thread = false;
  }
  // Where the per-thread layout fits (the room floats_for asks for), it is taken.
  if (threads > 1 && slots > 1 && floats >= SlotLayout::floats_for(threads, slots, slot_floats))
    CHECK_MESSAGE(by_thread, threads << " threads, " << slots << " slots of " << slot_floats << " in " << floats);
}

}  // namespace

TEST_CASE("scratch slots never overlap, and lie in their thread's share where there is room") {
  for (int threads : {1, 2, 3, 4, 8})
    for (int64_t slots = 1; slots <= 16; ++slots)
      for (int64_t slot_floats : {1, 7, 16, 100}) {
        check_layout(threads, slots, slot_floats, slots * slot_floats);  // exactly enough: one after another
        check_layout(threads, slots, slot_floats, slots * slot_floats + 5);
        check_layout(threads, slots, slot_floats, SlotLayout::floats_for(threads, slots, slot_floats));
        check_layout(threads, slots, slot_floats, 3 * SlotLayout::floats_for(threads, slots, slot_floats) + 1);
      }
}
