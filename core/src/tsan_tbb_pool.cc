// ThreadSanitizer builds only (MINNOW_TSAN=ON; never in a product build): oneTBB's
// small-object pool replaced by the allocator TSan watches.
//
// Every task oneTBB creates for a parallel loop (start_for, its tree_node / wait_node
// bookkeeping) comes from r1::allocate() and goes back through r1::deallocate(): a
// per-thread free list inside libtbb.so. Debian's libtbb is not built with TSan, so when
// a worker frees a task and another worker's pool later hands out the same bytes, TSan
// sees the new owner's plain writes (the constructor of the task's std::atomic members)
// racing with the old owner's last accesses: memory reuse it cannot see, reported as a
// race in oneTBB's headers under every parallel loop. No suppression can hide it without
// hiding real races in the kernels running under the same frames.
//
// These definitions interpose libtbb's exported ones (libminnow comes before libtbb in
// the search order of every executable and of the plugins it loads): the task memory
// now comes from operator new / delete, which TSan intercepts, so a freed task's history
// is forgotten when it is freed. oneTBB's header templates are the only callers of these
// four functions from our code, and they pair them (an object allocated by one is
// deallocated by the other), so nothing allocated by libtbb's own pool reaches here.
// Task objects are 64-byte aligned (d1::task_alignment).
#include <minnow/tsan.h>

#ifdef MINNOW_TSAN

#include <oneapi/tbb/detail/_small_object_pool.h>
#include <oneapi/tbb/detail/_task.h>

#include <cstddef>
#include <new>

namespace tbb {
namespace detail {
namespace r1 {
namespace {
// allocate() must hand back a pool for the matching deallocate(); this one is never read.
struct MallocPool : d1::small_object_pool {};
MallocPool g_malloc_pool;
constexpr std::align_val_t kTaskAlign{d1::task_alignment};
}  // namespace

__attribute__((visibility("default"))) void* allocate(d1::small_object_pool*& pool,
                                                      std::size_t number_of_bytes,
                                                      const d1::execution_data&) {
  pool = &g_malloc_pool;
  return ::operator new(number_of_bytes, kTaskAlign);
}

__attribute__((visibility("default"))) void* allocate(d1::small_object_pool*& pool,
                                                      std::size_t number_of_bytes) {
  pool = &g_malloc_pool;
  return ::operator new(number_of_bytes, kTaskAlign);
}

__attribute__((visibility("default"))) void deallocate(d1::small_object_pool&, void* ptr,
                                                       std::size_t,
                                                       const d1::execution_data&) {
  ::operator delete(ptr, kTaskAlign);
}

__attribute__((visibility("default"))) void deallocate(d1::small_object_pool&, void* ptr,
                                                       std::size_t) {
  ::operator delete(ptr, kTaskAlign);
}

}  // namespace r1
}  // namespace detail
}  // namespace tbb

#endif  // MINNOW_TSAN
