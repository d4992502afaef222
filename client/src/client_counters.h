// The client's statistics counters (ClientStats), counted by callers and the I/O thread alike.
//
// Contract: relaxed atomics, each on its own cache line: they are read only for statistics and
// cost the hot paths no lock and no shared line.
#ifndef TESSERA_CLIENT_SRC_CLIENT_COUNTERS_H_
#define TESSERA_CLIENT_SRC_CLIENT_COUNTERS_H_

#include <array>
#include <atomic>
#include <cstdint>

#include "tessera/client/client.h"

namespace tessera::client_internal {

// Each counter on its own cache line: the I/O thread and the callers' threads count different
// things at the same time.
struct alignas(64) PaddedCounter {
  std::atomic<uint64_t> value{0};
};

enum Counter {
  kGetRequests,
  kCacheHits,
  kColdMisses,
  kStaleWaits,
  kBlockedReads,
  kRowsReceived,
  kEvictions,
  kUncachedRows,
  kFlowWaits,
  kUnackedMax,
  kPushes,
  kUpdateRowsSent,
  kBytesSent,
  kMessagesSent,
  kEarlyBytes,
  kBoundaryBytes,
  kEarlyRows,
  kReads,
  kStalenessSum,
  kStalenessMax,
  kNumCounters
};

class ClientCounters {
 public:
  void Count(Counter c, uint64_t n = 1) {
    counters_[c].value.fetch_add(n, std::memory_order_relaxed);
  }
  // Raises counter `c` to `value` if it is below.
  void CountMax(Counter c, uint64_t value) {
    std::atomic<uint64_t>& max = counters_[c].value;
    uint64_t seen = max.load(std::memory_order_relaxed);
    while (value > seen && !max.compare_exchange_weak(seen, value, std::memory_order_relaxed)) {
    }
  }
  void Uncount(Counter c) { counters_[c].value.fetch_sub(1, std::memory_order_relaxed); }
  // `reads` reads, their staleness summed and their largest.
  void RecordReads(uint64_t reads, uint64_t staleness_sum, uint64_t staleness_max) {
    Count(kReads, reads);
    Count(kStalenessSum, staleness_sum);
    CountMax(kStalenessMax, staleness_max);
  }
  void RecordStaleness(int64_t staleness) {
    uint64_t s = staleness > 0 ? static_cast<uint64_t>(staleness) : 0;
    RecordReads(1, s, s);
  }
  // Every counter; `replies_held` is kept elsewhere (SharedReply).
  ClientStats Stats(uint64_t replies_held) const;

 private:
  std::array<PaddedCounter, kNumCounters> counters_{};
};

}  // namespace tessera::client_internal

#endif  // TESSERA_CLIENT_SRC_CLIENT_COUNTERS_H_
