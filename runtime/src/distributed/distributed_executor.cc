// The distributed executor (see distributed/distributed_executor.h and docs/runtime.md).
#include "distributed/distributed_executor.h"

#include <fmt/format.h>
#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/info.h>
#include <oneapi/tbb/parallel_for.h>
#include <oneapi/tbb/task_arena.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "distributed/array_save.h"
#include "distributed/fatal.h"
#include "distributed/partitioned_arrays.h"
#include "distributed/partitioned_records.h"
#include "distributed/peer_mesh.h"
#include "distributed/server_arrays.h"
#include "distributed/step_exchange.h"
#include "distributed/write_tracking.h"
#include "execution/task_handover.h"
#include "schedule/array_binding.h"
#include "schedule/loop_blocks.h"
#include "schedule/loop_schedule.h"
#include "tessera/common/check.h"
#include "tessera/context.h"

namespace tessera::internal {
namespace {

// An independent loop that reads some arrays only by rows of another key dim d may run as a 2d
// loop with time dim d (its iterations commute): those arrays then rotate block by block between
// workers instead of being made whole on each. nullopt when the loop reads no such array.
std::optional<LoopSchedule> RotatingReads(const LoopSchedule& s) {
  if (s.strategy != LoopStrategy::kIndependent || s.rank < 2 || s.space_dim < 0 ||
      s.writes_unknown) {
    return std::nullopt;
  }
  LoopSchedule out = s;
  int d = -1;
  for (size_t i = 1; i < out.arrays.size(); ++i) {
    LoopSchedule::Array& a = out.arrays[i];
    if (a.placement != "replicated" || a.write || a.relaxed || a.may_alias || !a.loop_only ||
        a.row_key_dim < 0 || a.row_key_dim == s.space_dim || (d >= 0 && a.row_key_dim != d)) {
      continue;
    }
    d = a.row_key_dim;
    a.placement = "rotating";
    a.array_dim = 0;
    a.key_dim = d;
    a.halo_lo = a.halo_hi = 0;
  }
  if (d < 0) return std::nullopt;
  out.strategy = LoopStrategy::k2D;
  out.time_dim = d;
  return out;
}

}  // namespace

class DistributedExecutor::Impl {
 public:
  Impl(const DistributedExecutorOptions& options, Context& ctx,
       std::shared_ptr<spdlog::logger> logger)
      : options_(options), ctx_(ctx), logger_(std::move(logger)), arena_(options.threads) {
    if (options_.threads > static_cast<int>(tbb::info::default_concurrency())) {
      parallelism_.emplace(tbb::global_control::max_allowed_parallelism,
                           static_cast<size_t>(options_.threads));
    }
  }

  Status Start() {
    if (options_.threads < 1 || options_.threads >= kMaxExecutorSlots) {
      return Status::InvalidArgument(
          fmt::format("{} executor threads per worker", options_.threads));
    }
    if (options_.pipeline_depth < 1 || options_.data_parallel_clocks < 1) {
      return Status::InvalidArgument("pipeline depth and data-parallel clocks must be >= 1");
    }
    ClientOptions copts = options_.client;
    copts.num_threads = 1;  // only the thread that owns the Context talks to the servers
    client_ = std::make_unique<Client>(copts, zmq_);
    if (Status s = client_->Start(); !s.ok()) return s;
    PeerMeshOptions mo;
    mo.rank = options_.rank;
    mo.num_workers = options_.num_workers;
    mo.coordinator = options_.client.coordinator;
    mo.secret = options_.client.secret;
    mo.bind = options_.peer_bind;
    mo.timeout = options_.timeout;
    Result<std::unique_ptr<PeerMesh>> mesh = PeerMesh::Connect(mo, zmq_);
    if (!mesh.ok()) {
      client_->Abandon();  // a failure of the job, not a worker that finished: see Client::Abandon
      return mesh.status();
    }
    mesh_ = std::move(mesh).value();
    servers_ = std::make_unique<ServerArrays>(options_.rank, ctx_, *client_);
    partitioned_ = std::make_unique<PartitionedArrays>(
        PartitionedArrays::Options{.rank = options_.rank,
                                   .num_workers = options_.num_workers,
                                   .threads = options_.threads,
                                   .pipeline_depth = options_.pipeline_depth},
        ctx_, *mesh_);
    steps_ = std::make_unique<StepExchange>(
        StepExchange::Options{.rank = options_.rank, .threads = options_.threads}, ctx_, *mesh_,
        *partitioned_);
    records_ = std::make_unique<PartitionedRecords>(
        PartitionedRecords::Options{.rank = options_.rank,
                                    .num_workers = options_.num_workers,
                                    .threads = options_.threads,
                                    .pipeline_depth = options_.pipeline_depth},
        ctx_, [this](std::string bytes) { return AllGather(std::move(bytes)); },
        [this](std::vector<std::string> to_each) { return AllToAll(std::move(to_each)); });
    logger_->info("distributed executor: worker {} of {}, {} thread(s) each, pipeline depth {}",
                  options_.rank, options_.num_workers, options_.threads, options_.pipeline_depth);
    return Status::Ok();
  }

  ~Impl() {
    // Start failed before the executor was whole (a server or peer unreachable): nothing ran, and
    // the Client leaves the job by itself.
    if (client_ == nullptr || servers_ == nullptr || records_ == nullptr) return;
    // What this worker's communication amounted to (managed communication's evaluation reads
    // the early/boundary split and the staleness reads saw from here).
    const ClientStats c = client_->stats();
    logger_->info(
        "communication: {} loops, {} steps, {} B of patches to peers ({} B on the mesh); "
        "parameter servers: {} clocks, {} B of updates early and {} B at clock boundaries "
        "({} rows early), {} reads (staleness mean {:.2f}, max {})",
        stats_.loops, steps_->steps(), steps_->patch_bytes_sent() + steps_->block_bytes_sent(),
        mesh_ ? mesh_->bytes_sent() : 0, servers_->clocks(), c.early_bytes_sent,
        c.boundary_bytes_sent, c.early_rows_sent, c.reads,
        c.reads == 0 ? 0.0 : static_cast<double>(c.staleness_sum) / static_cast<double>(c.reads),
        c.staleness_max);
    const StepExchange::Times& st = steps_->times();
    logger_->info(
        "steps: {:.3f} s snapshots, {:.3f} s comparing, encoding and sending patches, "
        "{:.3f} s waiting for peers' messages, {:.3f} s applying them",
        st.snapshot, st.publish, st.wait, st.apply);
    partitioned_->Report(*logger_);
    records_->Report(*logger_);
    for (const auto& [schedule, state] : sites_) {
      const Traffic& t = state.traffic;
      logger_->info(
          "parallel_for at {}: {} runs sent {} B: {} B of rotating blocks, {} B moved "
          "between layouts, {} B of patches, {} B of server updates",
          state.where, state.runs, t.total(), t.rotation, t.repartition, t.patches,
          t.server_updates);
    }
    // A peer still waiting for this worker's messages (its program went on where this one
    // returned) fails at once instead of after the mesh's timeout.
    if (mesh_ != nullptr && mesh_->size() > 1) {
      if (Status s = mesh_->AnnounceLeaving(); !s.ok()) logger_->warn("leaving: {}", s.ToString());
    }
    // Everyone finishes together: a worker that left early would make the others' last clocks
    // wait on a peer that is gone.
    if (Status s = client_->Barrier(); !s.ok()) logger_->warn("final barrier: {}", s.ToString());
    if (Status s = client_->Leave(); !s.ok()) logger_->warn("leaving the job: {}", s.ToString());
  }

  int concurrency() const { return options_.threads; }

  // Relaxed arrays: this worker's serial additions counted once, then enough clocks that a read
  // sees every worker's updates (as at the end of a data-parallel loop).
  void SettleForCheckpoint() {
    int staleness = -1;
    for (const auto& [id, a] : ctx_.arrays()) {
      if (a->relaxed()) staleness = std::max(staleness, a->staleness());
    }
    if (staleness < 0) return;
    servers_->AdoptSerialRelaxedChanges();
    for (int i = 0; i <= staleness; ++i) servers_->Sync(/*replicated=*/false, /*clock=*/true);
  }
  PartitionedArrays& partitioned() { return *partitioned_; }
  ServerArrays& servers() { return *servers_; }

  // A lost peer stops this worker (exit 75) here too, as in the runtime's own exchanges: the job
  // failed, and the program could only give up with an exit code of its own.
  Result<std::vector<std::string>> AllGather(std::string bytes) {
    Result<std::vector<std::string>> all = mesh_->AllGather(++tag_, std::move(bytes));
    if (!all.ok() && PeerLost(all.status())) ExitPeerLost("all-gather: " + all.status().ToString());
    return all;
  }
  Result<std::vector<std::string>> AllToAll(std::vector<std::string> to_each) {
    Result<std::vector<std::string>> got = mesh_->AllToAll(++tag_, std::move(to_each));
    if (!got.ok() && PeerLost(got.status())) ExitPeerLost("all-to-all: " + got.status().ToString());
    return got;
  }
  Status ExchangeRounds(const RoundsSpec& spec) {
    Status s = mesh_->ExchangeRounds(++tag_, spec);
    if (!s.ok() && PeerLost(s)) ExitPeerLost("all-to-all in rounds: " + s.ToString());
    return s;
  }
  void GatherWhole(ArrayBase& array) { records_->GatherWhole(array); }
  void FetchRow(ArrayBase& array, int64_t row) { partitioned_->FetchRow(array, row, ++tag_); }
  std::optional<Status> SavePartitioned(const ArrayBase& a, const std::string& path, bool text) {
    return SavePartitionedArray(*mesh_, &tag_, *partitioned_, a, path, text);
  }

  Traffic traffic() const {
    Traffic t;
    t.rotation = partitioned_->rotation_bytes();
    t.repartition = partitioned_->repartition_bytes() + records_->bytes_sent();
    t.patches = steps_->patch_bytes_sent();
    const ClientStats c = client_->stats();
    t.server_updates = c.early_bytes_sent + c.boundary_bytes_sent;
    return t;
  }

  void Run(const LoopSite& site, const ArrayBase& space, const LoopTask& task) {
    const Traffic before = traffic();
    partitioned_->GuardSerialAccess(/*in_loop=*/true);
    RunLoop(site, space, task);
    partitioned_->GuardSerialAccess(/*in_loop=*/false);
    if (site.schedule == nullptr) return;
    SiteState& state = sites_.at(site.schedule);
    ++state.runs;
    state.traffic += traffic() - before;
  }

  void Skipped(const LoopSite& site, const ArrayBase& space) {
    if (site.schedule == nullptr) return;
    SiteState& state = StateFor(site, space);
    const SiteBinding binding = BindArrays(state.schedule, space, ctx_.arrays());
    const bool rotate = RotateReads(site, state, binding);
    partitioned_->Skipped(rotate ? *state.rotating : state.schedule, binding);
  }

  void RunLoop(const LoopSite& site, const ArrayBase& space, const LoopTask& task) {
    ++stats_.loops;
    if (site.schedule == nullptr) {
      records_->GatherAll();  // the body may touch any array
      partitioned_->MaterializeAll(++tag_);
      RunReplicated(site, space, task);
      return;
    }
    SiteState& state = StateFor(site, space);
    const SiteBinding binding = BindArrays(state.schedule, space, ctx_.arrays());
    const bool rotate = RotateReads(site, state, binding);
    const LoopSchedule& s = rotate ? *state.rotating : state.schedule;
    const int T = options_.threads;
    const int P = options_.num_workers * T;  // partitions; this worker's are rank*T .. rank*T+T-1
    ReportBinding(site, s, binding, &state);
    // Collectives with tags of their own, before the loop's tag: a peer's step messages carry
    // the loop's tag, and two messages of one sender with one tag and step would be confused.
    const bool split_space = records_->Place(s, space, binding);
    const Blocks& b = BlocksFor(s, space, split_space);
    ++tag_;
    servers_->AdoptSerialRelaxedChanges();
    steps_->BeginLoop(s, space, binding, &state.dense_writes, tag_);
    partitioned_->Place(s, b, binding, tag_);
    steps_->TrackPartitioned();
    int64_t last_step = 0;
    const int first = options_.rank * T;
    std::vector<Part> parts(static_cast<size_t>(T));
    switch (s.strategy) {
      case LoopStrategy::kIndependent:
      case LoopStrategy::k1D:
        for (int t = 0; t < T; ++t) parts[t] = {first + t, 0, b.block_size(first + t)};
        RunStep(b, parts, task);
        Publish(0, /*additive=*/false, /*replicated=*/false);
        break;
      case LoopStrategy::k2D: {
        // Partition q runs time sub-block (q * S + r + phase) mod (P * S) in step r; the
        // sub-block's previous holder is partition q + 1, S steps earlier, so waiting for step
        // r - S is enough and the S - 1 steps between let the hand-over travel while we
        // compute. The phase starts rotating arrays where their last rotation left them.
        const int S = options_.pipeline_depth;
        const int time_blocks = P * S;
        const int64_t phase = partitioned_->phase();
        for (int r = 0; r < time_blocks; ++r) {
          steps_->AwaitThrough(r - S);
          for (int t = 0; t < T; ++t) {
            const int q = first + t;
            const int64_t block =
                static_cast<int64_t>(q) * time_blocks + (q * S + r + phase) % time_blocks;
            parts[t] = {block, 0, b.block_size(block)};
          }
          RunStep(b, parts, task);
          partitioned_->Rotate(b, r, steps_->per_peer());
          Publish(r, false, false);
          partitioned_->ReleaseSent();
        }
        last_step = time_blocks - 1;
        if (steps_->PublishDeferred(b, time_blocks)) last_step = time_blocks;
        break;
      }
      case LoopStrategy::kUnimodular: {
        const int64_t waves = static_cast<int64_t>(b.waves.size()) - 1;
        for (int64_t w = 0; w < waves; ++w) {
          steps_->AwaitThrough(w - 1);
          const int64_t first_block = b.waves[w];
          const int64_t count = b.offsets[b.waves[w + 1]] - b.offsets[first_block];
          if (count < options_.min_parallel_wavefront) {
            // Too small to split: every worker runs all of it (slot 0: replicated, like code
            // outside loops), so there is nothing to hand over.
            for (int q = 0; q < P; ++q) RunBlock(b, first_block + q, task);
            Publish(w, false, /*replicated=*/true);
          } else {
            for (int t = 0; t < T; ++t) {
              const int64_t block = first_block + first + t;
              parts[t] = {block, 0, b.block_size(block)};
            }
            RunStep(b, parts, task);
            Publish(w, false, false);
          }
        }
        last_step = std::max<int64_t>(waves - 1, 0);
        if (waves == 0) Publish(0, false, /*replicated=*/true);
        break;
      }
      case LoopStrategy::kDataParallel: {
        // Clock c runs the c-th slice of every partition, in F pieces with a flush between;
        // reads may miss the others' updates of the last `staleness` clocks (and of the clock
        // in progress), as SSP allows.
        const int C = options_.data_parallel_clocks;
        const int F = options_.data_parallel_flushes;
        // Plain arrays written from several threads of this worker would lose concurrent
        // updates: one thread runs the worker's share unless the user chose lock_free.
        const bool one_thread = options_.threads > 1 && !site.lock_free &&
                                !s.shared_written_arrays.empty();
        for (int64_t id : servers_->BeginDataParallel(site.staleness, steps_->TrackedArrays())) {
          steps_->Untrack(id);  // on the servers, not patched over the mesh
        }
        for (int c = 0; c < C; ++c) {
          steps_->AwaitThrough(c - 1 - site.staleness);
          // The mesh-patched arrays are compared once per clock: snapshot at the clock's start.
          for (int t = 0; t < T; ++t) {
            const int64_t n = b.block_size(first + t);
            parts[t] = {first + t, n * c / C, n * (c + 1) / C};
          }
          steps_->BeginStep(b, parts);
          for (int f = 0; f < F; ++f) {
            const int64_t piece = static_cast<int64_t>(c) * F + f,
                          pieces = static_cast<int64_t>(C) * F;
            std::vector<Part> slice(parts.size());
            for (int t = 0; t < T; ++t) {
              const int64_t n = b.block_size(first + t);
              slice[t] = {first + t, n * piece / pieces, n * (piece + 1) / pieces};
            }
            RunParts(b, slice, task, one_thread);
            if (f + 1 < F) servers_->Sync(/*replicated=*/false, /*clock=*/false);
          }
          Publish(c, /*additive=*/true, false);
        }
        last_step = C - 1;
        steps_->AwaitThrough(last_step);
        servers_->EndDataParallel(site.staleness);
        break;
      }
    }
    steps_->AwaitThrough(last_step);  // no-op after a data-parallel loop
    partitioned_->Finish(s, b);
    ReduceAccumulators();
    steps_->EndLoop();
  }

 private:
  struct SiteState {
    LoopSchedule schedule;
    // Arrays tracked by position (the space) whose last patch from this site held at least half
    // of their tracked elements: sent whole from now on, without a snapshot to compare with.
    std::set<int64_t> dense_writes;
    std::string binding_reported;  // the last binding logged for the site
    // The schedule run instead while an array it reads is split between workers (RotatingReads).
    std::optional<LoopSchedule> rotating;
    bool rotating_reported = false;
    // What the site's runs sent, for the final report.
    std::string where;
    uint64_t runs = 0;
    Traffic traffic;
  };

  // Whether the site runs as state.rotating: always when it has one and its arrays can stay
  // partitioned at all, so that a loop's schedule (and so the order its accumulators add in)
  // never depends on where the arrays happen to be, e.g. after a checkpoint restored them whole.
  bool RotateReads(const LoopSite& site, SiteState& state, const SiteBinding& binding) {
    if (!state.rotating || !partitioned_->Placeable(*state.rotating, binding)) return false;
    if (!state.rotating_reported) {
      logger_->info(
          "parallel_for at {}:{}: reads some arrays only by rows of key[{}]; runs as a "
          "2d loop whose blocks of them rotate, so that no worker needs them whole",
          site.location.file_name(), site.location.line(), state.rotating->time_dim);
      state.rotating_reported = true;
    }
    return true;
  }

  // Says which of the site's names are bound to which arrays, whenever that changes.
  void ReportBinding(const LoopSite& site, const LoopSchedule& s, const SiteBinding& binding,
                     SiteState* state) {
    std::string bound, unbound;
    for (size_t i = 0; i < s.arrays.size(); ++i) {
      if (binding.arrays[i] != nullptr) {
        bound += fmt::format("{}'{}' = array #{}", bound.empty() ? "" : ", ", s.arrays[i].name,
                             binding.arrays[i]->id());
      } else if (!s.arrays[i].relaxed) {
        unbound += fmt::format("; '{}': {}", s.arrays[i].name, binding.why_unbound[i]);
      }
    }
    std::string text = fmt::format("bound {}", bound.empty() ? "nothing" : bound);
    if (!unbound.empty()) {
      text += fmt::format("; unbound (every array like them is treated as possibly written){}",
                          unbound);
    }
    if (text == state->binding_reported) return;
    logger_->info("parallel_for at {}:{}: {}", site.location.file_name(), site.location.line(),
                  text);
    state->binding_reported = std::move(text);
  }
  // Runs parts[t] on executor thread t (slot t + 1).
  void RunParts(const Blocks& b, const std::vector<Part>& parts, const LoopTask& task,
                bool one_thread = false) {
    if (parts.size() == 1) {
      ExecutorSlotScope slot(1, /*shared=*/options_.threads > 1);
      RunBlockPart(b, parts[0].block, parts[0].from, parts[0].to, task);
      return;
    }
    if (one_thread) {
      ExecutorSlotScope slot(1, /*shared=*/false);
      for (const Part& p : parts) RunBlockPart(b, p.block, p.from, p.to, task);
      return;
    }
    TaskGroupHandover edges;  // visible to TSan (execution/task_handover.h)
    edges.Fork();
    arena_.execute([&] {
      tbb::parallel_for(0, static_cast<int>(parts.size()), HandedOver(edges, [&](int t) {
                          ExecutorSlotScope slot(t + 1);
                          RunBlockPart(b, parts[t].block, parts[t].from, parts[t].to, task);
                        }));
    });
    edges.Join();
  }

  // A step: snapshot what it may write, run it.
  void RunStep(const Blocks& b, const std::vector<Part>& parts, const LoopTask& task) {
    steps_->BeginStep(b, parts);
    RunParts(b, parts, task);
  }

  void RunReplicated(const LoopSite& site, const ArrayBase& space, const LoopTask& task) {
    auto key = std::make_tuple(std::string(site.location.file_name()), site.location.line(),
                               site.location.column());
    if (unscheduled_.insert(std::move(key)).second) {
      logger_->info("parallel_for at {}:{} {}; every worker runs all of it",
                    site.location.file_name(), site.location.line(), NoScheduleReason(site));
    }
    servers_->AdoptSerialRelaxedChanges();
    task.RunRange(0, space.size());  // slot 0: replicated, like code outside loops
    Publish(0, false, /*replicated=*/true);
  }

  // Sends what this worker changed in `step` to its peers (StepExchange::Publish), then syncs
  // the relaxed arrays, which makes the step a clock.
  void Publish(int64_t step, bool additive, bool replicated) {
    steps_->Publish(step, additive, replicated);
    servers_->Sync(replicated, /*clock=*/true);
  }

  // Sums the accumulators' loop contributions (executor slots 1..) over the workers. What
  // replicated code added (slot 0) is the same everywhere and stays local.
  void ReduceAccumulators() {
    const auto& accs = ctx_.accumulators();
    if (accs.empty() || mesh_->size() == 1) return;
    std::string mine;
    for (AccumulatorBase* acc : accs) {
      std::string v(acc->value_bytes(), '\0');
      acc->TakeLoopContribution(v.data());
      mine += v;
    }
    Result<std::vector<std::string>> all = mesh_->AllGather(++tag_, std::move(mine));
    CheckOk(all.status(), "reducing accumulators");
    for (int r = 0; r < static_cast<int>(all->size()); ++r) {
      const std::string& part = (*all)[r];
      size_t at = 0;
      for (AccumulatorBase* acc : accs) {
        const size_t len = acc->value_bytes();
        if (at + len > part.size()) Fatal("workers disagree on the accumulators they have");
        acc->AddRemote(part.data() + at);
        at += len;
      }
    }
  }

  SiteState& StateFor(const LoopSite& site, const ArrayBase& space) {
    auto it = sites_.find(site.schedule);
    if (it != sites_.end()) return it->second;
    SiteState state;
    state.schedule = ScheduleForSiteOrDie(site, space);
    state.rotating = RotatingReads(state.schedule);
    state.where = fmt::format("{}:{}", site.location.file_name(), site.location.line());
    logger_->info("parallel_for at {}:{}: {} schedule over {} workers x {} threads",
                  site.location.file_name(), site.location.line(),
                  LoopStrategyName(state.schedule.strategy), options_.num_workers,
                  options_.threads);
    return sites_.emplace(site.schedule, std::move(state)).first->second;
  }

  // `split_space`: the space is partitioned (PartitionedRecords::Place), so its cuts and key
  // bounds come from every worker's elements.
  const Blocks& BlocksFor(const LoopSchedule& s, const ArrayBase& space, bool split_space) {
    // A partitioned space's cuts come from every worker's elements as this site placed them:
    // such blocks are shared only by sites that cut it at the same keys (an LDA sampling loop
    // and the count loop before it: one copy of the positions, not one per site). Every worker
    // has the same cuts, so all make the blocks (and combine their key bounds) at the same loops.
    std::vector<int64_t> salt;
    if (split_space) {
      BlockGrid cuts;
      records_->FillGrid(&cuts);
      salt.push_back(static_cast<int64_t>(cuts.space_cuts->size()));
      salt.insert(salt.end(), cuts.space_cuts->begin(), cuts.space_cuts->end());
      if (s.strategy == LoopStrategy::k2D) {
        salt.insert(salt.end(), cuts.time_cuts->begin(), cuts.time_cuts->end());
      }
    }
    return blocks_.Get(s, space, salt, [&] {
      const int parts = options_.num_workers * options_.threads;
      BlockGrid grid{.space_parts = parts,
                     .time_parts = parts * options_.pipeline_depth,
                     .wave_parts = parts,
                     .exact_wave_parts = true};
      if (split_space) records_->FillGrid(&grid);
      Blocks fresh = MakeBlocks(s, space, grid);
      ComputeKeyBounds(space, &fresh);
      if (split_space) records_->CombineKeyBounds(&fresh);
      return fresh;
    });
  }

  const DistributedExecutorOptions options_;
  Context& ctx_;
  std::shared_ptr<spdlog::logger> logger_;
  std::optional<tbb::global_control> parallelism_;
  tbb::task_arena arena_;
  zmq::context_t zmq_;
  std::unique_ptr<Client> client_;
  std::unique_ptr<PeerMesh> mesh_;
  uint64_t tag_ = 0;  // exchanges so far; identical on every worker
  std::unique_ptr<PartitionedArrays> partitioned_;
  std::unique_ptr<PartitionedRecords> records_;
  std::unique_ptr<StepExchange> steps_;
  std::unique_ptr<ServerArrays> servers_;
  std::map<const EmbeddedSchedule*, SiteState> sites_;
  BlockCache blocks_;  // shared by sites that cut an array alike
  std::set<std::tuple<std::string, unsigned, unsigned>> unscheduled_;
  // What the final log line reports.
  struct Stats {
    uint64_t loops = 0;
  } stats_;
};

DistributedExecutor::DistributedExecutor(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
DistributedExecutor::~DistributedExecutor() = default;

Result<std::unique_ptr<DistributedExecutor>> DistributedExecutor::Start(
    const DistributedExecutorOptions& options, Context& ctx,
    std::shared_ptr<spdlog::logger> logger) {
  auto impl = std::make_unique<Impl>(options, ctx, std::move(logger));
  if (Status s = impl->Start(); !s.ok()) return s;
  return std::unique_ptr<DistributedExecutor>(new DistributedExecutor(std::move(impl)));
}

std::string_view DistributedExecutor::name() const { return "distributed"; }
int DistributedExecutor::concurrency() const { return impl_->concurrency(); }
void DistributedExecutor::Skipped(const LoopSite& site, const ArrayBase& space) {
  impl_->Skipped(site, space);
}
void DistributedExecutor::Run(const LoopSite& site, const ArrayBase& space, const LoopTask& task) {
  impl_->Run(site, space, task);
}
Result<std::vector<std::string>> DistributedExecutor::AllGather(std::string bytes) {
  return impl_->AllGather(std::move(bytes));
}
Result<std::vector<std::string>> DistributedExecutor::AllToAll(std::vector<std::string> to_each) {
  return impl_->AllToAll(std::move(to_each));
}
Status DistributedExecutor::ExchangeRounds(const RoundsSpec& spec) {
  return impl_->ExchangeRounds(spec);
}
void DistributedExecutor::GatherWhole(ArrayBase& array) { impl_->GatherWhole(array); }
void DistributedExecutor::FetchRow(ArrayBase& array, int64_t row) { impl_->FetchRow(array, row); }
std::optional<Status> DistributedExecutor::SavePartitioned(const ArrayBase& array,
                                                           const std::string& path, bool text) {
  return impl_->SavePartitioned(array, path, text);
}
Traffic DistributedExecutor::traffic() const { return impl_->traffic(); }
void DistributedExecutor::SettleForCheckpoint() { impl_->SettleForCheckpoint(); }
bool DistributedExecutor::HeldRows(const ArrayBase& a,
                                   const std::function<void(int64_t, int64_t, uint64_t)>& f) {
  return impl_->partitioned().HeldRows(a, f);
}
bool DistributedExecutor::HoldRestored(const ArrayBase& a,
                                       const std::vector<std::pair<RowRange, int>>& held) {
  return impl_->partitioned().HoldRestored(a, held);
}
void DistributedExecutor::RestoredWhole(const ArrayBase& a) {
  impl_->partitioned().RestoredWhole(a);
}
std::vector<std::pair<int64_t, int>> DistributedExecutor::DataParallelTables() {
  return impl_->servers().DataParallelTables();
}
void DistributedExecutor::RestoreDataParallelTables(
    const std::vector<std::pair<int64_t, int>>& tables) {
  impl_->servers().RestoreDataParallelTables(tables);
}

}  // namespace tessera::internal
