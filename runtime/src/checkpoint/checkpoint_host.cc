#include "checkpoint/checkpoint_host.h"

#include <utility>

#include "distributed/distributed_executor.h"

namespace tessera::internal::checkpoint {
namespace {

uint64_t AllWorkers(int n) { return n >= 64 ? ~uint64_t{0} : (uint64_t{1} << n) - 1; }

int64_t Rows(const ArrayBase& a) {
  const int64_t per_row = ElementsPerRow(a);
  return per_row == 0 ? 0 : a.value_count() / per_row;
}

class LocalHost final : public CheckpointHost {
 public:
  int rank() const override { return 0; }
  int num_workers() const override { return 1; }
  Result<std::vector<std::string>> AllGather(std::string bytes) override {
    return std::vector<std::string>{std::move(bytes)};
  }
  void Settle() override {}
  void HeldRows(const ArrayBase& a,
                const std::function<void(int64_t, int64_t, uint64_t)>& f) override {
    if (Rows(a) > 0) f(0, Rows(a), 1);
  }
  void Restored(const ArrayBase&) override {}
};

class DistributedHost final : public CheckpointHost {
 public:
  DistributedHost(DistributedExecutor& executor, int rank, int num_workers)
      : executor_(executor), rank_(rank), num_workers_(num_workers) {}
  int rank() const override { return rank_; }
  int num_workers() const override { return num_workers_; }
  Result<std::vector<std::string>> AllGather(std::string bytes) override {
    return executor_.AllGather(std::move(bytes));
  }
  void Settle() override { executor_.SettleForCheckpoint(); }
  void HeldRows(const ArrayBase& a,
                const std::function<void(int64_t, int64_t, uint64_t)>& f) override {
    if (executor_.HeldRows(a, f)) return;
    if (Rows(a) > 0) f(0, Rows(a), AllWorkers(num_workers_));  // whole on every worker
  }
  void Restored(const ArrayBase& a) override { executor_.RestoredWhole(a); }

 private:
  DistributedExecutor& executor_;
  const int rank_;
  const int num_workers_;
};

}  // namespace

int64_t ElementsPerRow(const ArrayBase& a) {
  if (a.is_sparse() || a.rank() < 1 || a.extent(0) <= 0) return a.value_count() > 0 ? 1 : 0;
  return a.value_count() / a.extent(0);
}

std::unique_ptr<CheckpointHost> MakeLocalHost() { return std::make_unique<LocalHost>(); }

std::unique_ptr<CheckpointHost> MakeDistributedHost(DistributedExecutor& executor, int rank,
                                                    int num_workers) {
  return std::make_unique<DistributedHost>(executor, rank, num_workers);
}

}  // namespace tessera::internal::checkpoint
