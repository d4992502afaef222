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
// first access shows (each entry checked as it is built). Every use is checked: the map is used
// only for the space and layouts it was built for, and only when the key asked for is the
// permutation of the visited element's key (compared with the space's key, which the loop has
// just read), so a write at any other key falls back to the hash lookup, never touches another
// element.
//
// Thread safety: the scope's state is per thread; PermutedMap::Find may be called concurrently by
// the executor threads of one loop (the first caller builds, the others wait for it). A map is
// replaced only when it does not fit the running loop, so no thread of that loop uses it.
#ifndef TESSERA_INTERNAL_PERMUTED_INDEX_H_
#define TESSERA_INTERNAL_PERMUTED_INDEX_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "tessera/executor.h"

namespace tessera::internal {

// The sparse iteration space whose position this thread's loop body is running (null outside
// such a body), with its id and layout version as the loop began, and the position. Set by
// DistArray's loops through LoopPositionScope.
struct LoopPosition {
  const ArrayBase* space = nullptr;
  int64_t space_id = -1;
  uint64_t space_version = 0;
  int64_t position = 0;
};
inline constinit thread_local LoopPosition current_loop_position;

class LoopPositionScope {
 public:
  explicit LoopPositionScope(const ArrayBase* space) : previous_(current_loop_position) {
    current_loop_position.space = space;
    if (space != nullptr) {
      current_loop_position.space_id = space->id();
      current_loop_position.space_version = space->layout_version();
    }
  }
  ~LoopPositionScope() { current_loop_position = previous_; }
  LoopPositionScope(const LoopPositionScope&) = delete;
  LoopPositionScope& operator=(const LoopPositionScope&) = delete;

 private:
  LoopPosition previous_;
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
  PermutedMap() = default;
  PermutedMap(const PermutedMap&) = delete;
  PermutedMap& operator=(const PermutedMap&) = delete;

  // The target position of the element the current loop position's permuted key denotes, if
  // that key is `key` (`rank` components); -1 otherwise (the caller looks the key up).
  // `target` owns this map and has layout version `target_version`.
  // `*ahead` is set to the position the map gives for a later loop position, if any (for a
  // prefetch; left alone otherwise).
  int64_t Find(const ArrayBase& target, uint64_t target_version, int rank, const int64_t* key,
               int64_t* ahead) {
    const LoopPosition& at = current_loop_position;
    const Built* b = current_.load(std::memory_order_acquire);
    if (b == nullptr || b->space != at.space || b->space_id != at.space_id ||
        b->space_version != at.space_version || b->target_version != target_version)
        [[unlikely]] {
      b = Build(target, target_version, rank, key);
    }
    const int64_t p = at.position;
    if (static_cast<uint64_t>(p) >= b->map.size()) return -1;
    // map[p] was checked, when built, to hold the permuted key of the space's position p, and
    // neither layout changed since: the key asked for must be that one.
    const int64_t* x = b->source_keys + p * rank;
    for (int d = 0; d < rank; ++d) {
      if (key[d] != x[b->perm[d]]) return -1;
    }
    // The writes land all over the target: ask for the element a few positions on now, so that
    // its cache line is here when the loop gets to it.
    if (static_cast<uint64_t>(p + kAhead) < b->map.size()) {
      *ahead = b->map[static_cast<size_t>(p + kAhead)];
    }
    return b->map[static_cast<size_t>(p)];
  }

 private:
  static constexpr int64_t kAhead = 32;
  struct Built {
    const ArrayBase* space = nullptr;
    int64_t space_id = -1;
    uint64_t space_version = 0;
    uint64_t target_version = 0;
    std::vector<int> perm;
    const int64_t* source_keys = nullptr;
    std::vector<uint32_t> map;  // empty: no map fits this (space, layouts)
  };
  const Built* Build(const ArrayBase& target, uint64_t target_version, int rank,
                     const int64_t* key);

  std::mutex build_;
  std::atomic<const Built*> current_{nullptr};
  std::unique_ptr<Built> owned_;
  // The map before owned_, its map freed: a thread of the loop that replaced it may still be
  // reading its identity (finding it stale); it goes at the next build, a loop later.
  std::unique_ptr<Built> retired_;
};

}  // namespace tessera::internal

#endif  // TESSERA_INTERNAL_PERMUTED_INDEX_H_
