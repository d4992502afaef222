#include "checkpoint/checkpoint_host.h"

#include <chrono>
#include <optional>
#include <utility>

#include "checkpoint/server_tables.h"
#include "distributed/distributed_executor.h"
#include "tessera/client/job_environment.h"

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
  bool HoldRestored(const ArrayBase& a, const std::vector<HeldPiece>& pieces) override {
    std::vector<std::pair<RowRange, int>> held;
    held.reserve(pieces.size());
    for (const HeldPiece& p : pieces) held.push_back({RowRange{p.lo, p.hi}, p.worker});
    return executor_.HoldRestored(a, held);
  }
  void GatherWhole(ArrayBase& a) override { executor_.GatherWhole(a); }
  std::vector<DataParallelTable> DataParallelTables() override {
    std::vector<DataParallelTable> out;
    for (const auto& [array, staleness] : executor_.DataParallelTables()) {
      out.push_back({array, staleness});
    }
    return out;
  }
  void RestoreDataParallelTables(const std::vector<DataParallelTable>& tables) override {
    std::vector<std::pair<int64_t, int>> keys;
    for (const DataParallelTable& t : tables) keys.emplace_back(t.array, t.staleness);
    executor_.RestoreDataParallelTables(keys);
  }

  bool HasServerTables() const override { return true; }
  Result<std::vector<FileRecord>> SaveServerTables(
      const std::string& checkpoint, const std::vector<std::string>& tables) override {
    if (Status s = Connect(); !s.ok()) return s;
    return servers_->Save(checkpoint, tables);
  }
  Status RestoreServerTables(const std::string& checkpoint,
                             const std::vector<FileRecord>& files) override {
    if (Status s = Connect(); !s.ok()) return s;
    return servers_->Restore(checkpoint, files);
  }

 private:
  // The line to the servers, opened when first needed (worker 0 only).
  Status Connect() {
    if (servers_ != nullptr) return Status::Ok();
    Result<std::optional<JobEnvironment>> job = JobEnvironmentFromEnv();
    if (!job.ok()) return job.status();
    if (!job->has_value()) return Status::FailedPrecondition("not a worker of a launched job");
    // Writing a large table takes a while; a server that died is the launcher's to report.
    Result<std::unique_ptr<ServerTables>> servers = ServerTables::Connect(
        (*job)->client.coordinator, (*job)->client.secret, std::chrono::minutes(10));
    if (!servers.ok()) return servers.status();
    servers_ = std::move(servers).value();
    return Status::Ok();
  }

  DistributedExecutor& executor_;
  const int rank_;
  const int num_workers_;
  std::unique_ptr<ServerTables> servers_;
};

}  // namespace

Result<std::vector<FileRecord>> CheckpointHost::SaveServerTables(const std::string&,
                                                                 const std::vector<std::string>&) {
  return Status::FailedPrecondition("no parameter servers");
}
Status CheckpointHost::RestoreServerTables(const std::string&, const std::vector<FileRecord>&) {
  return Status::FailedPrecondition("no parameter servers");
}

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
