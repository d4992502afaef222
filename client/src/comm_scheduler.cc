#include "comm_scheduler.h"

#include <algorithm>
#include <cstddef>

namespace tessera::client_internal {

void CommScheduler::StartBudget() {
  // Up to 100 ms of budget (at least one full message) may build up: enough to catch up after
  // the thread was descheduled, little enough to keep any window within a few percent.
  budget_.emplace(comm_.bytes_per_second, std::max(comm_.bytes_per_second * 0.1, 64.0 * 1024));
}

std::chrono::microseconds CommScheduler::EarlySendWait() {
  budget_->Spend(static_cast<double>(unbudgeted_bytes_.exchange(0, std::memory_order_relaxed)));
  if (!comm_.early_sends() || pending_rows() <= 0) return std::chrono::microseconds(-1);
  budget_->Refill(TokenBucket::Clock::now());
  return budget_->TimeUntilPositive();
}

bool CommScheduler::EarlySendDue() {
  if (!comm_.early_sends()) return false;
  budget_->Spend(static_cast<double>(unbudgeted_bytes_.exchange(0, std::memory_order_relaxed)));
  budget_->Refill(TokenBucket::Clock::now());
  return budget_->has_tokens() && pending_rows() > 0;
}

std::vector<std::pair<ClientTable*, RowId>> CommScheduler::ChooseEarlyRows(
    const std::function<std::vector<ClientTable*>()>& all_tables) {
  const CommOptions& comm = comm_;
  std::vector<std::pair<ClientTable*, RowId>> chosen;
  if (comm.policy == SendPolicy::kFifo) {
    std::lock_guard lock(fifo_mu_);
    while (!fifo_.empty() && chosen.size() < comm.rows_per_message) {
      chosen.push_back(fifo_.front());
      fifo_.pop_front();
    }
    return chosen;
  }
  const std::vector<ClientTable*> tables = all_tables();
  if (tables.empty()) return chosen;
  struct Candidate {
    double importance;
    ClientTable* table;
    RowId row;
  };
  std::vector<Candidate> candidates;
  const int64_t pending = pending_rows_.load(std::memory_order_relaxed);
  if (comm.policy == SendPolicy::kRelativeMagnitude &&
      pending <= static_cast<int64_t>(comm.sample_size)) {
    // Few enough to look at all: the order is exact.
    for (ClientTable* t : tables) {
      for (Stripe& stripe : t->stripes) {
        std::lock_guard lock(stripe.mu);
        for (const PendingRef& ref : stripe.pending)
          candidates.push_back({ref.entry->importance, t, ref.row});
      }
    }
  } else {
    size_t want = comm.policy == SendPolicy::kRandom ? comm.rows_per_message : comm.sample_size;
    std::uniform_int_distribution<size_t> pick_table(0, tables.size() - 1),
        pick_stripe(0, kStripes - 1);
    for (size_t attempt = 0; attempt < 4 * want && candidates.size() < want; ++attempt) {
      ClientTable* t = tables[pick_table(rng_)];
      Stripe& stripe = t->stripes[pick_stripe(rng_)];
      std::lock_guard lock(stripe.mu);
      if (stripe.pending.empty()) continue;
      const PendingRef& ref =
          stripe.pending[std::uniform_int_distribution<size_t>(0, stripe.pending.size() - 1)(rng_)];
      candidates.push_back({ref.entry->importance, t, ref.row});
    }
  }
  if (comm.policy == SendPolicy::kRelativeMagnitude && candidates.size() > comm.rows_per_message) {
    std::partial_sort(
        candidates.begin(), candidates.begin() + static_cast<ptrdiff_t>(comm.rows_per_message),
        candidates.end(),
        [](const Candidate& a, const Candidate& b) { return a.importance > b.importance; });
    candidates.resize(comm.rows_per_message);
  }
  for (const Candidate& c : candidates) chosen.emplace_back(c.table, c.row);
  // Sampling with replacement may pick a row twice; the second is skipped when sending.
  return chosen;
}

}  // namespace tessera::client_internal
