// RowIndex<T>: the T of each row touched so far, for a server's shard and a client's cache.
//
// Entries never move, so callers may keep pointers to them (a server lists changed rows, a reader
// waits on a cache entry) until they Erase the row. They live in fixed-size chunks, found through
// an open-addressing table of (row, entry) slots, linear probing at a load of at most 1/2.
// Compared with std::unordered_map it costs no allocation per row, and growing rewrites a flat
// array instead of relinking a node per row, which matters when every row of a batch is new. An
// erased row's entry is reused for the next new row, so a bounded set of rows that moves (a cache
// with a capacity) touches no fresh memory.
// Not thread-safe: callers synchronize.
#ifndef TESSERA_TABLE_ROW_INDEX_H_
#define TESSERA_TABLE_ROW_INDEX_H_

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

namespace tessera {

template <typename T>
class RowIndex {
 public:
  // The row's entry, or null.
  T* Find(uint64_t row) const {
    if (slots_.empty()) return nullptr;
    for (size_t i = Home(row);; i = (i + 1) & mask_) {
      if (slots_[i].entry == nullptr) return nullptr;
      if (slots_[i].row == row) return slots_[i].entry;
    }
  }
  // The row's entry, value-initialized (or as Erase left it) if it is new; `second` says
  // whether it is.
  std::pair<T*, bool> FindOrAdd(uint64_t row) {
    if (!slots_.empty()) {
      // One probe: the empty slot that ends the search is where a new row goes.
      size_t i = Home(row);
      for (; slots_[i].entry != nullptr; i = (i + 1) & mask_) {
        if (slots_[i].row == row) return {slots_[i].entry, false};
      }
      if ((size_ + 1) * 2 <= slots_.size()) {
        T* e = NewEntry();
        slots_[i] = {row, e};
        ++size_;
        return {e, true};
      }
    }
    Grow();
    T* e = NewEntry();
    Insert(row, e);
    ++size_;
    return {e, true};
  }
  T& operator[](uint64_t row) { return *FindOrAdd(row).first; }
  // Calls f(row, entry) for every row, in no particular order (a checkpoint of a table).
  template <typename F>
  void ForEach(F&& f) const {
    for (const Slot& s : slots_) {
      if (s.entry != nullptr) f(s.row, static_cast<const T&>(*s.entry));
    }
  }
  size_t size() const { return size_; }

  // Asks the CPU to bring the table slot where a lookup of `row` starts into its cache: callers
  // about to look up many rows that are out of the caches (rows dropped long after they were
  // added) prefetch them all first, so the misses overlap.
  void Prefetch(uint64_t row) const {
    if (!slots_.empty()) __builtin_prefetch(&slots_[Home(row)]);
  }

  // Removes the row; returns whether it was there. Its entry is value-initialized (or, if T has
  // a Reset(), reset by it: a T may keep storage for the next row) and kept for the next new
  // row: a pointer to it no longer refers to this row. Other entries stay put.
  bool Erase(uint64_t row) {
    if (slots_.empty()) return false;
    size_t i = Home(row);
    for (;; i = (i + 1) & mask_) {
      if (slots_[i].entry == nullptr) return false;
      if (slots_[i].row == row) break;
    }
    if constexpr (requires(T & t) { t.Reset(); }) {
      slots_[i].entry->Reset();
    } else {
      // In place: cheaper than assigning a fresh T for a T with strings and vectors.
      std::destroy_at(slots_[i].entry);
      std::construct_at(slots_[i].entry);
    }
    free_.push_back(slots_[i].entry);
    --size_;
    // Backward-shift deletion (no tombstones): move later slots of the probe run into the hole
    // unless their home lies cyclically after the hole, up to their own position.
    for (size_t j = (i + 1) & mask_; slots_[j].entry != nullptr; j = (j + 1) & mask_) {
      size_t home = Home(slots_[j].row);
      if (((j - home) & mask_) >= ((j - i) & mask_)) {
        slots_[i] = slots_[j];
        i = j;
      }
    }
    slots_[i] = Slot{};
    return true;
  }

 private:
  struct Slot {
    uint64_t row = 0;
    T* entry = nullptr;  // null: empty
  };
  // Entries per chunk: 64, or fewer for a large T (a chunk of about 16 KB), so that an index
  // of a few rows does not allocate 64 large entries.
  static constexpr size_t kChunk = std::clamp<size_t>(16384 / sizeof(T), 1, 64);

  // Rows come in groups of kGroup consecutive ids that take kGroup consecutive slots, so a batch
  // of consecutive rows reads a few cache lines of the table rather than one per row; the groups
  // are spread by Fibonacci hashing (the top bits of group * 2^64/phi), so groups with a common
  // stride still scatter.
  static constexpr uint64_t kGroup = 8;
  size_t Home(uint64_t row) const {
    size_t group = ((row / kGroup) * 0x9e3779b97f4a7c15ULL) >> shift_;
    return (group & ~(kGroup - 1)) | (row % kGroup);
  }
  // An entry for a new row: the last erased one, or a fresh one.
  T* NewEntry() {
    if (!free_.empty()) {
      T* e = free_.back();
      free_.pop_back();
      return e;
    }
    if (chunks_.empty() || used_in_chunk_ == kChunk) {
      chunks_.push_back(std::make_unique<T[]>(kChunk));
      used_in_chunk_ = 0;
    }
    return &chunks_.back()[used_in_chunk_++];
  }
  void Insert(uint64_t row, T* e) {
    size_t i = Home(row);
    while (slots_[i].entry != nullptr) i = (i + 1) & mask_;
    slots_[i] = {row, e};
  }
  void Grow() {
    std::vector<Slot> old = std::move(slots_);
    size_t n = std::max<size_t>(16, old.size() * 2);
    slots_.assign(n, Slot{});
    mask_ = n - 1;
    shift_ = 64 - std::countr_zero(n);
    for (const Slot& s : old) {
      if (s.entry != nullptr) Insert(s.row, s.entry);
    }
  }

  std::vector<Slot> slots_;
  size_t mask_ = 0;
  int shift_ = 63;  // unused until the first Grow
  size_t size_ = 0;
  std::vector<std::unique_ptr<T[]>> chunks_;
  size_t used_in_chunk_ = 0;
  std::vector<T*> free_;  // entries of erased rows, value-initialized
};

}  // namespace tessera

#endif  // TESSERA_TABLE_ROW_INDEX_H_
