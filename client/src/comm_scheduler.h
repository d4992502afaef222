// Managed communication on the client: which pending rows to send early, between clock
// boundaries, and when the budget allows it (Bosen's scheme; tessera/transport/comm_budget.h).
//
// Contract: every row that becomes pending is noted (NotePending); the I/O thread asks
// EarlySendWait how long it may sleep and EarlySendDue whether to send now, then sends the rows
// ChooseEarlyRows picks by the policy (kFifo: the oldest; kRandom: a sample; kRelativeMagnitude:
// the largest sum |delta / value| of a sample, or of all when few). What the SSP bound needs is
// sent at the boundary whatever the budget. NotePending, Sent, pending_rows, ClearFifo and
// unbudgeted_bytes may be used from any thread; the rest from the I/O thread only.
#ifndef TESSERA_CLIENT_SRC_COMM_SCHEDULER_H_
#define TESSERA_CLIENT_SRC_COMM_SCHEDULER_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <random>
#include <utility>
#include <vector>

#include "client_table.h"
#include "tessera/transport/comm_budget.h"

namespace tessera::client_internal {

class CommScheduler {
 public:
  explicit CommScheduler(const CommOptions& comm) : comm_(comm) {}

  const CommOptions& options() const { return comm_; }
  bool early_sends() const { return comm_.early_sends(); }

  // A row of `table` became pending. True when the I/O thread must be woken: it sleeps without a
  // time-out while nothing is pending.
  bool NotePending(ClientTable* table, RowId row) {
    const int64_t was_pending = pending_rows_.fetch_add(1, std::memory_order_relaxed);
    if (!comm_.early_sends()) return false;
    if (comm_.policy == SendPolicy::kFifo) {
      std::lock_guard lock(fifo_mu_);
      fifo_.emplace_back(table, row);
    }
    return was_pending == 0;
  }
  // `rows` pending rows were taken out of the update log to be sent.
  void Sent(int64_t rows) { pending_rows_.fetch_sub(rows, std::memory_order_relaxed); }
  int64_t pending_rows() const { return pending_rows_.load(std::memory_order_relaxed); }
  // A boundary flush is about to send every pending row.
  void ClearFifo() {
    std::lock_guard lock(fifo_mu_);
    fifo_.clear();
  }

  // Bytes sent and not yet spent from the budget (every send adds to it: ClientSockets).
  std::atomic<uint64_t>& unbudgeted_bytes() { return unbudgeted_bytes_; }

  // I/O thread only. Starts the budget, when the I/O thread starts.
  void StartBudget();
  // How long the I/O thread may sleep before spare budget is there for pending rows; negative:
  // without a limit (nothing to send early).
  std::chrono::microseconds EarlySendWait();
  // Whether to send pending rows early now.
  bool EarlySendDue();
  // Up to rows_per_message pending rows by the policy; `all_tables` lists the tables (not called
  // under kFifo). Sampling keeps this independent of how many rows are pending: no sort of all
  // of them on every send. A row may be chosen twice; the second is skipped when sending.
  std::vector<std::pair<ClientTable*, RowId>> ChooseEarlyRows(
      const std::function<std::vector<ClientTable*>()>& all_tables);

 private:
  const CommOptions comm_;
  std::atomic<int64_t> pending_rows_{0};  // rows in the update logs of all stripes
  std::mutex fifo_mu_;
  std::deque<std::pair<ClientTable*, RowId>> fifo_;  // kFifo: rows in the order they became pending
  std::atomic<uint64_t> unbudgeted_bytes_{0};
  std::mt19937_64 rng_{0x7e55e7a};     // I/O thread only
  std::optional<TokenBucket> budget_;  // I/O thread only
};

}  // namespace tessera::client_internal

#endif  // TESSERA_CLIENT_SRC_COMM_SCHEDULER_H_
