// RowIndex as a client's cache stripe used it with an entry per row (before entries by blocks),
// under a capacity while a reader streams rows it reads once: every new row is added, and once the
// stripe is full a quarter of its rows, the oldest, is erased per eviction. The rows come in
// blocks of 8 consecutive ids per stripe (ClientTable::StripeOf), which RowIndex keeps in
// consecutive slots. The victims are erased in order, or last first, which is the order eviction
// uses: erasing a run of consecutive slots in order shifts the rest of the run back once per
// row. (The client now keeps an entry per block of 8 rows, numbered densely per stripe, and its
// eviction erases runs of consecutive block numbers last first for the same reason.)
#include <benchmark/benchmark.h>

#include <cstdint>
#include <deque>
#include <vector>

#include "tessera/table/row_index.h"

namespace {

// The size of a per-row cache entry of that design, with a Reset() as CacheEntry has.
struct Entry {
  bool valid = false;
  char rest[135] = {};
  void Reset() { valid = false; }
};

constexpr int kStripes = 64;      // as the client's
constexpr size_t kCapacity = 64;  // a 4096-row cache over 64 stripes

void BM_StreamingStripes(benchmark::State& state) {
  const bool last_first = state.range(0) != 0;
  std::vector<tessera::RowIndex<Entry>> stripes(kStripes);
  std::vector<std::deque<uint64_t>> order(kStripes);
  std::vector<uint64_t> victims;
  uint64_t row = 0;
  for (auto _ : state) {
    const int s = static_cast<int>((row >> 3) % kStripes);
    auto& index = stripes[s];
    if (index.size() >= kCapacity) {
      victims.clear();
      for (size_t k = 0; k < kCapacity / 4; ++k) {
        victims.push_back(order[s].front());
        order[s].pop_front();
      }
      if (last_first) {
        for (auto it = victims.rbegin(); it != victims.rend(); ++it) index.Erase(*it);
      } else {
        for (uint64_t v : victims) index.Erase(v);
      }
    }
    index.FindOrAdd(row).first->valid = true;
    order[s].push_back(row);
    ++row;
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_StreamingStripes)->ArgName("last_first")->Arg(0)->Arg(1);

}  // namespace
