#include "client_counters.h"

namespace tessera::client_internal {

ClientStats ClientCounters::Stats(uint64_t replies_held) const {
  auto get = [&](Counter c) { return counters_[c].value.load(std::memory_order_relaxed); };
  ClientStats s;
  s.get_requests = get(kGetRequests);
  s.cache_hits = get(kCacheHits);
  s.cold_misses = get(kColdMisses);
  s.stale_waits = get(kStaleWaits);
  s.blocked_reads = get(kBlockedReads);
  s.rows_received = get(kRowsReceived);
  s.evictions = get(kEvictions);
  s.replies_held = replies_held;
  s.uncached_rows = get(kUncachedRows);
  s.flow_control_waits = get(kFlowWaits);
  s.unacked_batches_max = get(kUnackedMax);
  s.pushes = get(kPushes);
  s.update_rows_sent = get(kUpdateRowsSent);
  s.bytes_sent = get(kBytesSent);
  s.messages_sent = get(kMessagesSent);
  s.early_bytes_sent = get(kEarlyBytes);
  s.boundary_bytes_sent = get(kBoundaryBytes);
  s.early_rows_sent = get(kEarlyRows);
  s.reads = get(kReads);
  s.staleness_sum = get(kStalenessSum);
  s.staleness_max = get(kStalenessMax);
  return s;
}

}  // namespace tessera::client_internal
