// Prefetching memory that a caller is about to touch, when it knows the addresses ahead of time
// and they are likely out of the CPU's caches (entries reached long after they were last used):
// issued together, the cache misses overlap instead of stalling one access after another.
// Prefetches are hints: they never fault, so any address range is fine.
#ifndef TESSERA_COMMON_PREFETCH_H_
#define TESSERA_COMMON_PREFETCH_H_

#include <cstddef>

namespace tessera {

// Asks the CPU to bring the cache lines of [p, p + bytes) into its cache, for a write soon.
inline void PrefetchForWrite(const void* p, size_t bytes) {
  constexpr size_t kCacheLine = 64;
  const char* begin = static_cast<const char*>(p);
  for (size_t off = 0; off < bytes; off += kCacheLine) __builtin_prefetch(begin + off, 1);
  // A range that does not start on a line boundary reaches into one more line.
  if (bytes > 0) __builtin_prefetch(begin + bytes - 1, 1);
}

// All of `*p`.
template <typename T>
void PrefetchObject(const T* p) {
  PrefetchForWrite(p, sizeof(T));
}

}  // namespace tessera

#endif  // TESSERA_COMMON_PREFETCH_H_
