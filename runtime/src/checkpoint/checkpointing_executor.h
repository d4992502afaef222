// CheckpointingExecutor: checkpoints and resume by transparent replay (docs/programming-model.md,
// "Checkpoints and resume"), as an Executor that wraps the one running the loops.
//
// It numbers the parallel_for calls. At a loop boundary k (before loop k runs, k >= 1) that is
// due by the interval, every worker settles its copies, writes the rows it holds of every array
// (a row held by several workers is split between them) and the records it holds of every
// partitioned sparse array (record_shares.h), and worker 0 writes the MANIFEST -- the loop
// count, the call site of every completed loop and the state of every live accumulator after
// it -- once every worker's files are in place (checkpoint_store.h).
//
// Resuming from the checkpoint of boundary n, the program runs from the start again: its serial
// code runs as before, loops 0..n-1 are skipped (after each, the live accumulators take the
// values they had then, so serial code that reads them computes what it did), and before loop n
// every array takes its checkpointed value (a partitioned one on its holders only, when the job
// has the checkpoint's number of workers). A skipped loop whose call site differs from the
// logged one stops the worker: the program did not replay the same way.
//
// Thread safety: like every Executor, used from the thread that owns the Context.
#ifndef TESSERA_RUNTIME_SRC_CHECKPOINT_CHECKPOINTING_EXECUTOR_H_
#define TESSERA_RUNTIME_SRC_CHECKPOINT_CHECKPOINTING_EXECUTOR_H_

#include <functional>
#include <memory>
#include <optional>

#include "checkpoint/checkpoint_host.h"
#include "checkpoint/checkpoint_store.h"
#include "tessera/context.h"
#include "tessera/executor.h"

namespace spdlog {
class logger;
}

namespace tessera::internal::checkpoint {

// Checks `options.dir` before the program joins its job (every worker, before anyone can have
// written a checkpoint): creatable and writable; without `resume`, free of checkpoints; with it,
// the newest complete checkpoint (nullopt: none, the program starts from the beginning).
// InvalidArgument naming the directory otherwise.
Result<std::optional<Found>> PrepareCheckpoints(const CheckpointOptions& options,
                                                spdlog::logger& log);

class CheckpointingExecutor final : public Executor {
 public:
  // `resume_from`: what PrepareCheckpoints found. `ctx` owns this executor and must outlive it.
  CheckpointingExecutor(std::unique_ptr<Executor> inner, std::unique_ptr<CheckpointHost> host,
                        const CheckpointOptions& options, std::optional<Found> resume_from,
                        Context& ctx, std::shared_ptr<spdlog::logger> logger);
  ~CheckpointingExecutor() override;

  std::string_view name() const override;
  int concurrency() const override;
  void Run(const LoopSite& site, const ArrayBase& space, const LoopTask& task) override;

  // Whether the program is re-running the part before the checkpoint it resumes from.
  bool replaying() const;
  // See Context::on_restore.
  void OnRestore(std::function<void()> f);

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tessera::internal::checkpoint

#endif  // TESSERA_RUNTIME_SRC_CHECKPOINT_CHECKPOINTING_EXECUTOR_H_
