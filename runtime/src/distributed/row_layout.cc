#include "distributed/row_layout.h"

#include <algorithm>

#include "tessera/common/check.h"

namespace tessera::internal {

std::vector<RowRange> Normalize(std::vector<RowRange> ranges) {
  std::sort(ranges.begin(), ranges.end(),
            [](const RowRange& a, const RowRange& b) { return a.lo < b.lo; });
  std::vector<RowRange> out;
  for (const RowRange& r : ranges) {
    if (r.hi <= r.lo) continue;
    if (!out.empty() && r.lo <= out.back().hi) {
      out.back().hi = std::max(out.back().hi, r.hi);
    } else {
      out.push_back(r);
    }
  }
  return out;
}

RowLayout::RowLayout(int64_t rows, int workers) : rows_(rows), workers_(workers) {
  TESSERA_CHECK_MSG(workers >= 1 && workers <= kMaxLayoutWorkers, "RowLayout worker count");
  starts_[0] = all();
}

uint64_t RowLayout::all() const {
  return workers_ == 64 ? ~uint64_t{0} : (uint64_t{1} << workers_) - 1;
}

bool RowLayout::replicated() const {
  for (const auto& [row, holders] : starts_) {
    if (row < rows_ && holders != all()) return false;
  }
  return true;
}

int64_t RowLayout::RowsHeldBy(int worker) const {
  int64_t n = 0;
  ForEach(0, rows_, [&](int64_t lo, int64_t hi, uint64_t holders) {
    if ((holders >> worker) & 1) n += hi - lo;
  });
  return n;
}

void RowLayout::ForEach(int64_t lo, int64_t hi,
                        const std::function<void(int64_t, int64_t, uint64_t)>& f) const {
  lo = std::max<int64_t>(lo, 0);
  hi = std::min(hi, rows_);
  if (lo >= hi) return;
  auto it = std::prev(starts_.upper_bound(lo));
  while (lo < hi) {
    auto next = std::next(it);
    const int64_t end = next == starts_.end() ? rows_ : std::min(next->first, rows_);
    const int64_t piece_hi = std::min(hi, end);
    if (piece_hi > lo) f(lo, piece_hi, it->second);
    lo = piece_hi;
    if (next == starts_.end()) break;
    it = next;
  }
}

void RowLayout::Assign(int64_t lo, int64_t hi, uint64_t holders) {
  lo = std::max<int64_t>(lo, 0);
  hi = std::min(hi, rows_);
  if (lo >= hi) return;
  // The holders in force at hi continue after the assigned piece.
  const uint64_t after = std::prev(starts_.upper_bound(hi))->second;
  starts_.erase(starts_.lower_bound(lo), starts_.upper_bound(hi));
  starts_[lo] = holders;
  if (hi < rows_ && starts_.find(hi) == starts_.end()) starts_[hi] = after;
  // Merge with equal neighbours so that the map stays small.
  auto it = starts_.find(lo);
  if (it != starts_.begin() && std::prev(it)->second == it->second) {
    it = std::prev(starts_.erase(it));
  }
  auto next = std::next(it);
  if (next != starts_.end() && next->second == it->second) starts_.erase(next);
}

std::vector<RowTransfer> Redistribute(const std::vector<std::vector<RowRange>>& needs,
                                      RowLayout* layout) {
  TESSERA_CHECK_MSG(static_cast<int>(needs.size()) == layout->workers(), "needs per worker");
  std::vector<RowTransfer> transfers;
  // Who needs each row: the needed ranges cut the rows into pieces with one needer set.
  std::vector<std::pair<int64_t, uint64_t>> needer_pieces;
  {
    std::vector<std::pair<int64_t, std::pair<int, bool>>> events;  // row, (worker, start?)
    for (int w = 0; w < layout->workers(); ++w) {
      for (const RowRange& r : Normalize(needs[static_cast<size_t>(w)])) {
        events.push_back({r.lo, {w, true}});
        events.push_back({r.hi, {w, false}});
      }
    }
    std::sort(events.begin(), events.end(), [](const auto& a, const auto& b) {
      return a.first < b.first;
    });
    uint64_t current = 0;
    size_t i = 0;
    while (i < events.size()) {
      const int64_t row = events[i].first;
      for (; i < events.size() && events[i].first == row; ++i) {
        const uint64_t bit = uint64_t{1} << events[i].second.first;
        current = events[i].second.second ? (current | bit) : (current & ~bit);
      }
      needer_pieces.push_back({row, current});
    }
  }
  for (size_t p = 0; p + 1 < needer_pieces.size(); ++p) {
    const int64_t lo = needer_pieces[p].first, hi = needer_pieces[p + 1].first;
    const uint64_t needers = needer_pieces[p].second;
    if (needers == 0 || lo >= hi) continue;
    std::vector<std::pair<RowRange, uint64_t>> pieces;
    layout->ForEach(lo, hi, [&](int64_t a, int64_t b, uint64_t holders) {
      pieces.push_back({{a, b}, holders});
    });
    for (const auto& [range, holders] : pieces) {
      TESSERA_CHECK_MSG(holders != 0, "a row that no worker holds");
      const int from = __builtin_ctzll(holders);
      for (int w = 0; w < layout->workers(); ++w) {
        if (((needers >> w) & 1) && !((holders >> w) & 1)) {
          transfers.push_back({from, w, range.lo, range.hi});
        }
      }
      layout->Assign(range.lo, range.hi, needers);
    }
  }
  return transfers;
}

}  // namespace tessera::internal
