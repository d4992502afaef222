// Writes at a permutation of the loop's key, in O(1) without a hash lookup. Implementation
// detail of DistArray: programs use dist_array.h.
//
//   parallel_for(X, [&](const Key<3>& key, int64_t& v) { Y(key[1], key[0], key[2]) = v; });
//
// A sparse Y is written at a key made of the components of the element the loop visits, in
// another order. A hash lookup per element is slow and its index large; instead the loop's sparse
// iteration space publishes which position it visits (LoopPositionScope, one thread-local store per
// element), and Y keeps, per source array, a map from the source's positions to its own, built
// once (O(n), while neither array changes layout) from the source's keys and the permutation the
// first access shows. Every use is checked: the map's element is used only when its key equals the
// key asked for, so a write at any other key, a stale map or a wrong permutation only falls back
// to the hash lookup, never touches another element.
//
// Thread safety: the scope's state is per thread; PermutedMap::Find may be called concurrently by
// the executor threads of one loop (the first caller builds, the others wait for it).
#ifndef TESSERA_INTERNAL_PERMUTED_INDEX_H_
#define TESSERA_INTERNAL_PERMUTED_INDEX_H_

#include <atomic>
#include <cstdint>
#include <mutex>
#include <vector>

#include "tessera/executor.h"

namespace tessera::internal {

// The sparse iteration space whose position this thread's loop body is running, or null outside
// such a body. Set by DistArray's loops through LoopPositionScope.
inline constinit thread_local const ArrayBase* current_loop_space = nullptr;
inline constinit thread_local int64_t current_loop_position = 0;

class LoopPositionScope {
 public:
  explicit LoopPositionScope(const ArrayBase* space) : previous_(current_loop_space) {
    current_loop_space = space;
  }
  ~LoopPositionScope() { current_loop_space = previous_; }
  LoopPositionScope(const LoopPositionScope&) = delete;
  LoopPositionScope& operator=(const LoopPositionScope&) = delete;

 private:
  const ArrayBase* previous_;
};

// Builds map[p] = the position in `target` of the element whose key is `perm` applied to the key
// of `source`'s position p (key component d of the target = source component perm[d]), when
// every source element has one and, for each target row (key[0]), the source visits the row's
// elements in the target's storage order -- as two orders of one set of keys, each sorted by its
// keys, do. O(source + target + rows). Returns false (map cleared) otherwise, or when the target
// has 2^32 elements or more, or a key[0] extent far above its size.
// REQUIRES: both sparse, of rank `rank`; perm a permutation of [0, rank).
bool BuildPermutedMap(int rank, const ArrayBase& source, const ArrayBase& target,
                      const int* perm, std::vector<uint32_t>* map);

// Every permutation perm (rank components) with key[d] == source_key[perm[d]] for every d,
// identity first when it fits; at most `limit`.
std::vector<std::vector<int>> CandidatePermutations(int rank, const int64_t* source_key,
                                                    const int64_t* key, int limit);

// One target array's map from the positions of the loop space last seen to its own positions.
class PermutedMap {
 public:
  // The target position of the element the current loop position's permuted key denotes, if
  // its key is `key` (components `rank`); -1 otherwise (the caller looks the key up). `target`
  // is the array owning this map; keys(q) its key components at position q.
  template <typename KeysAt>
  int64_t Find(const ArrayBase& target, int rank, const int64_t* key, KeysAt keys) {
    const ArrayBase* space = current_loop_space;
    if (space == nullptr || !space->is_sparse()) return -1;
    const uint64_t tag = Tag(*space, target);
    if (tag_.load(std::memory_order_acquire) != tag) Build(*space, target, rank, key, tag);
    const int64_t p = current_loop_position;
    if (p < 0 || static_cast<size_t>(p) >= map_.size()) return -1;
    const int64_t q = map_[static_cast<size_t>(p)];
    if (q >= target.size()) return -1;
    const int64_t* at = keys(q);
    for (int d = 0; d < rank; ++d) {
      if (at[d] != key[d]) return -1;
    }
    return q;
  }
  // Bytes held (the map).
  size_t bytes() const { return map_.capacity() * sizeof(uint32_t); }

 private:
  static uint64_t Tag(const ArrayBase& space, const ArrayBase& target) {
    uint64_t h = static_cast<uint64_t>(space.id()) * 0x9E3779B97F4A7C15ULL;
    h ^= (space.layout_version() + 0x632BE59BD9B4E019ULL) * 0xBF58476D1CE4E5B9ULL;
    h ^= (target.layout_version() + 0x8CB92BA72F3D8DD7ULL) * 0x94D049BB133111EBULL;
    return h | 1;  // 0: nothing built
  }
  void Build(const ArrayBase& space, const ArrayBase& target, int rank, const int64_t* key,
             uint64_t tag);

  std::mutex build_;
  std::atomic<uint64_t> tag_{0};  // the (space, layouts) map_ is for; map_ empty: none fits
  std::vector<uint32_t> map_;
};

}  // namespace tessera::internal

#endif  // TESSERA_INTERNAL_PERMUTED_INDEX_H_
