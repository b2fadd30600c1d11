// ThreadSanitizer annotations for parallel loops run by a library TSan cannot see into.
//
// Debian's libtbb is not built with TSan, so the synchronisation by which oneTBB hands a
// loop's chunks to its workers and waits for them is invisible: everything the caller
// wrote before the loop would look racy with what the chunks read, and everything the
// chunks wrote with what the caller reads afterwards. fork_join() states what oneTBB
// guarantees, in TSan builds only (elsewhere it is a plain call): the caller's writes
// happen before every chunk, and every chunk happens before the loop returns. Chunks stay
// unordered among themselves, so two chunks touching the same memory are still reported.
//
// One header for every caller of oneTBB (the core's parallel_for, tests, the training
// code of the transforms), so none needs a suppression of its own:
//   minnow::tsan::fork_join([&](auto&& body) { tbb::parallel_for(range, body); },
//                           [&](const tbb::blocked_range<size_t>& r) { ... });
// No dependency on oneTBB or libminnow.
#pragma once

#include <utility>

#if defined(__SANITIZE_THREAD__)
#define MINNOW_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define MINNOW_TSAN 1
#endif
#endif

#ifdef MINNOW_TSAN
extern "C" void __tsan_acquire(void* addr);
extern "C" void __tsan_release(void* addr);
#endif

namespace minnow {
namespace tsan {

// Calls loop(b), where b is `body` with the fork and join edges added; `loop` must run b
// on any threads and return only when every call of b has returned.
template <class Loop, class Body>
inline void fork_join(Loop&& loop, Body&& body) {
#ifdef MINNOW_TSAN
  char fork = 0, join = 0;
  __tsan_release(&fork);
  loop([&](auto&&... args) {
    __tsan_acquire(&fork);
    body(std::forward<decltype(args)>(args)...);
    __tsan_release(&join);
  });
  __tsan_acquire(&join);
#else
  loop(std::forward<Body>(body));
#endif
}

}  // namespace tsan
}  // namespace minnow
