// Who reads a row of a server's shard, so that its changes are pushed to them: Subscribers for a
// written row, UnwrittenBlock for the readers of rows nobody has written yet, by blocks of
// consecutive rows.
//
// Contract: a worker subscribes to a row by reading it (GetRequest with subscribe) and stays
// subscribed until it unsubscribes (an evicted row) or leaves. A row nobody has written is all
// zeros: only its readers are kept, by block, and they move to the row's own Subscribers when it
// is first written. Not thread-safe: the server's loop owns them.
#ifndef TESSERA_SERVER_SRC_ROW_READERS_H_
#define TESSERA_SERVER_SRC_ROW_READERS_H_

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "tessera/table/table_spec.h"

namespace tessera::server_internal {

// Worker ranks that read a row: a bit per rank below 64 (no allocation for the common job
// sizes), a sorted vector for the others.
class Subscribers {
 public:
  bool empty() const { return low_ == 0 && high_.empty(); }
  // Returns whether `w` is new.
  bool Add(uint32_t w) {
    if (w < 64) {
      bool added = (low_ & (uint64_t{1} << w)) == 0;
      low_ |= uint64_t{1} << w;
      return added;
    }
    auto it = std::lower_bound(high_.begin(), high_.end(), w);
    if (it != high_.end() && *it == w) return false;
    high_.insert(it, w);
    return true;
  }
  // Returns whether `w` was there.
  bool Remove(uint32_t w) {
    if (w < 64) {
      bool had = (low_ & (uint64_t{1} << w)) != 0;
      low_ &= ~(uint64_t{1} << w);
      return had;
    }
    auto it = std::lower_bound(high_.begin(), high_.end(), w);
    if (it == high_.end() || *it != w) return false;
    high_.erase(it);
    return true;
  }
  void Clear() {
    low_ = 0;
    high_.clear();
  }
  template <typename F>
  void ForEach(F f) const {
    for (uint64_t bits = low_; bits != 0; bits &= bits - 1)
      f(static_cast<uint32_t>(std::countr_zero(bits)));
    for (uint32_t w : high_) f(w);
  }

 private:
  uint64_t low_ = 0;
  std::vector<uint32_t> high_;
};

// The readers of a block of kRows consecutive rows nobody has written: per reader, which rows
// of the block it read. A reader of consecutive rows (a batch, a stream) subscribes to and
// unsubscribes from a block's rows with one index lookup instead of one per row.
class UnwrittenBlock {
 public:
  static constexpr unsigned kShift = 6;
  static constexpr unsigned kRows = 1u << kShift;
  static uint64_t BlockOf(RowId row) { return row >> kShift; }

  bool empty() const { return readers_.empty(); }
  // Returns whether `w` had not read `row` (a row of this block).
  bool Add(uint32_t w, RowId row) {
    const uint64_t bit = Bit(row);
    for (Reader& r : readers_) {
      if (r.worker != w) continue;
      const bool added = (r.rows & bit) == 0;
      r.rows |= bit;
      return added;
    }
    readers_.push_back({w, bit});
    return true;
  }
  // Returns whether `w` had read `row`.
  bool Remove(uint32_t w, RowId row) {
    const uint64_t bit = Bit(row);
    for (size_t i = 0; i < readers_.size(); ++i) {
      if (readers_[i].worker != w) continue;
      if ((readers_[i].rows & bit) == 0) return false;
      Clear(i, bit);
      return true;
    }
    return false;
  }
  // Moves the readers of `row` to `to` (the row is being written for the first time).
  void MoveReaders(RowId row, Subscribers& to) {
    const uint64_t bit = Bit(row);
    for (size_t i = 0; i < readers_.size();) {
      if ((readers_[i].rows & bit) != 0) {
        to.Add(readers_[i].worker);
        if (Clear(i, bit)) continue;  // reader i is another one now
      }
      ++i;
    }
  }
  // For RowIndex::Erase: keeps the storage for the next block.
  void Reset() { readers_.clear(); }

 private:
  struct Reader {
    uint32_t worker;
    uint64_t rows;  // bit i: row block * kRows + i
  };
  static uint64_t Bit(RowId row) { return uint64_t{1} << (row & (kRows - 1)); }
  // Clears `bit` of reader i, which goes once it has read no row of the block (the last reader
  // takes its place); returns whether it went.
  bool Clear(size_t i, uint64_t bit) {
    readers_[i].rows &= ~bit;
    if (readers_[i].rows != 0) return false;
    readers_[i] = readers_.back();
    readers_.pop_back();
    return true;
  }
  std::vector<Reader> readers_;
};

}  // namespace tessera::server_internal

#endif  // TESSERA_SERVER_SRC_ROW_READERS_H_
