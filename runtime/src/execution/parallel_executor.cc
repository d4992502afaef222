// The parallel executor (see execution/parallel_executor.h and docs/runtime.md).
//
// Every strategy reduces to the same two steps: group the space's positions into blocks by key
// ranges (once per array and way of cutting it, cached: the same loop runs every epoch), then run the blocks
// in an order that keeps every dependence the schedule records:
//   independent / 1d / data_parallel: P blocks along the space dim, all at once;
//   2d: a P x P grid (space block, time block); in step t thread p runs (p, (p + t) mod P), and
//       waits only for the thread that held that time block in step t - 1 (a flow graph, no
//       barrier per step);
//   unimodular: wavefronts of the skewed key in order, each split into up to P blocks that run
//       at once.
// Inside a block positions run in increasing order, the serial order.
#include "execution/parallel_executor.h"

#include <oneapi/tbb/flow_graph.h>
#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/info.h>
#include <oneapi/tbb/parallel_for.h>
#include <oneapi/tbb/task_arena.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "execution/task_handover.h"
#include "schedule/loop_blocks.h"
#include "schedule/loop_schedule.h"
#include "tessera/common/check.h"

namespace tessera::internal {
namespace {

// Everything cached about one call site.
struct SiteState {
  LoopSchedule schedule;
};

class ParallelExecutor final : public Executor {
 public:
  ParallelExecutor(const ParallelExecutorOptions& options, std::shared_ptr<spdlog::logger> logger)
      : options_(options), logger_(std::move(logger)), arena_(options.threads) {
    TESSERA_CHECK_MSG(options_.threads >= 1 && options_.threads < kMaxExecutorSlots,
                      "ParallelExecutorOptions::threads out of range");
    TESSERA_CHECK(logger_ != nullptr);
    // TBB's pool defaults to one thread per core; asking for more threads than cores is an
    // explicit request (tests run 4 threads on 2 cores to shake out ordering bugs), so lift the
    // cap for as long as this executor lives.
    if (options_.threads > static_cast<int>(tbb::info::default_concurrency())) {
      parallelism_.emplace(tbb::global_control::max_allowed_parallelism,
                           static_cast<size_t>(options_.threads));
    }
  }

  std::string_view name() const override { return "parallel"; }
  int concurrency() const override { return options_.threads; }  // in slots 1..threads

  void Run(const LoopSite& site, const ArrayBase& space, const LoopTask& task) override {
    if (site.schedule == nullptr) {
      RunSeriallyWithoutSchedule(site, space, task);
      return;
    }
    SiteState& state = StateFor(site, space);
    const Blocks& blocks = BlocksFor(&state, space);
    switch (state.schedule.strategy) {
      case LoopStrategy::kDataParallel:
        if (OneThreadForDataParallel(site, state.schedule)) {
          ExecutorSlotScope slot(1, /*shared=*/false);
          task.RunRange(0, space.size());  // the serial order: nothing is lost or reordered
          break;
        }
        RunAllAtOnce(blocks, task);
        break;
      case LoopStrategy::kIndependent:
      case LoopStrategy::k1D:
        RunAllAtOnce(blocks, task);
        break;
      case LoopStrategy::k2D:
        RunRotation(blocks, task);
        break;
      case LoopStrategy::kUnimodular:
        RunWavefronts(blocks, task);
        break;
    }
  }

 private:
  // Blocks [0, P): thread p runs block p.
  void RunAllAtOnce(const Blocks& b, const LoopTask& task) {
    const int threads = options_.threads;
    TaskGroupHandover edges;  // visible to TSan (task_handover.h)
    edges.Fork();
    arena_.execute([&] {
      tbb::parallel_for(0, threads, HandedOver(edges, [&](int p) {
                          ExecutorSlotScope slot(p + 1, /*shared=*/threads > 1);
                          RunBlock(b, p, task);
                        }));
    });
    edges.Join();
  }

  // Grid block (s, t) is blocks[s * P + t]. Node (p, step) runs (p, (p + step) mod P) after
  // (p, step - 1) -- thread p's space block stays with it -- and after (p + 1, step - 1), the
  // thread that held time block (p + step) mod P in the previous step. Transitively every earlier
  // holder of that time block has finished, so no two threads hold it at once, and each thread
  // starts its next block as soon as that one is free instead of at a barrier.
  void RunRotation(const Blocks& b, const LoopTask& task) {
    const int threads = options_.threads;
    // Visible to TSan (task_handover.h): the caller's writes, each node's predecessors' (done[]).
    TaskGroupHandover edges;
    std::vector<HandoverPoint> done(static_cast<size_t>(threads) * threads);
    edges.Fork();
    arena_.execute([&] {
      tbb::flow::graph g;
      using Node = tbb::flow::continue_node<tbb::flow::continue_msg>;
      std::vector<std::unique_ptr<Node>> nodes;
      nodes.reserve(static_cast<size_t>(threads) * threads);
      for (int step = 0; step < threads; ++step) {
        for (int p = 0; p < threads; ++p) {
          const int64_t block = static_cast<int64_t>(p) * threads + (p + step) % threads;
          const size_t self = static_cast<size_t>(step) * threads + p;
          const size_t prev_step = step > 0 ? static_cast<size_t>(step - 1) * threads : 0;
          const size_t pred_p = prev_step + p, pred_next = prev_step + (p + 1) % threads;
          nodes.push_back(std::make_unique<Node>(
              g, HandedOver(edges, [&, block, p, step, self, pred_p, pred_next](
                                       const tbb::flow::continue_msg&) {
                if (step > 0) {
                  done[pred_p].Acquire();
                  done[pred_next].Acquire();
                }
                ExecutorSlotScope slot(p + 1);
                RunBlock(b, block, task);
                done[self].Release();
              })));
          if (step == 0) continue;
          const size_t prev = static_cast<size_t>(step - 1) * threads;
          tbb::flow::make_edge(*nodes[prev + p], *nodes.back());
          const int next = (p + 1) % threads;
          if (next != p) tbb::flow::make_edge(*nodes[prev + next], *nodes.back());
        }
      }
      for (int p = 0; p < threads; ++p) nodes[p]->try_put(tbb::flow::continue_msg());
      g.wait_for_all();
      edges.Join();  // before the nodes, which hold the bodies, are destroyed
    });
    edges.Join();
  }

  // Wavefronts in order; the blocks of one wavefront at once. A barrier per wavefront: the
  // dependences between wavefronts are arbitrary (any vector the skew carries), so a finer
  // hand-over would need the dependence distances per block; small wavefronts run inline.
  void RunWavefronts(const Blocks& b, const LoopTask& task) {
    TaskGroupHandover serial;  // to and from the thread that runs the waves (task_handover.h)
    serial.Fork();
    arena_.execute([&] {
      serial.Begin();
      for (size_t w = 0; w + 1 < b.waves.size(); ++w) {
        const int64_t first = b.waves[w], last = b.waves[w + 1];
        const int64_t count = b.offsets[last] - b.offsets[first];
        if (last - first <= 1 || count < options_.min_parallel_wavefront) {
          ExecutorSlotScope slot(1);
          for (int64_t blk = first; blk < last; ++blk) RunBlock(b, blk, task);
          continue;
        }
        TaskGroupHandover edges;  // visible to TSan (task_handover.h)
        edges.Fork();
        tbb::parallel_for(first, last, HandedOver(edges, [&](int64_t blk) {
                            ExecutorSlotScope slot(static_cast<int>(blk - first) + 1);
                            RunBlock(b, blk, task);
                          }));
        edges.Join();
      }
      serial.End();
    });
    serial.Join();
  }

  void RunSeriallyWithoutSchedule(const LoopSite& site, const ArrayBase& space,
                                  const LoopTask& task) {
    auto key = std::make_tuple(std::string(site.location.file_name()), site.location.line(),
                               site.location.column());
    if (unscheduled_.insert(std::move(key)).second) {
      logger_->info("parallel_for at {}:{} {}; running it serially", site.location.file_name(),
                    site.location.line(), NoScheduleReason(site));
    }
    task.RunRange(0, space.size());
  }

  // A data-parallel site whose body writes plain arrays, on several threads, without the user's
  // lock_free: concurrent `+=` on one element could lose an update.
  bool OneThreadForDataParallel(const LoopSite& site, const LoopSchedule& s) const {
    return options_.threads > 1 && !site.lock_free && !s.shared_written_arrays.empty();
  }

  SiteState& StateFor(const LoopSite& site, const ArrayBase& space) {
    auto it = sites_.find(site.schedule);
    if (it != sites_.end()) return it->second;
    LoopSchedule parsed = ScheduleForSiteOrDie(site, space);
    const LoopSchedule& s = parsed;
    logger_->debug("parallel_for at {}:{}: {} schedule on {} threads", site.location.file_name(),
                   site.location.line(), LoopStrategyName(s.strategy), options_.threads);
    if (s.strategy == LoopStrategy::kDataParallel && !s.shared_written_arrays.empty() &&
        options_.threads > 1) {
      std::string names;
      for (const std::string& a : s.shared_written_arrays) names += (names.empty() ? "'" : ", '") + a + "'";
      if (site.lock_free) {
        logger_->info(
            "parallel_for at {}:{} is data-parallel with lock_free: its additive writes to {} run "
            "concurrently on {} threads without synchronization; concurrent updates of one "
            "element may be lost, as DataParallel{{.lock_free = true}} allows",
            site.location.file_name(), site.location.line(), names, options_.threads);
      } else {
        logger_->info(
            "parallel_for at {}:{} is data-parallel and writes {} (plain arrays, not "
            "RelaxedArrays): it runs on one thread, so that no update is lost; "
            "DataParallel{{.lock_free = true}} lets {} threads update them concurrently, losing "
            "some concurrent updates",
            site.location.file_name(), site.location.line(), names, options_.threads);
      }
    }
    SiteState state;
    state.schedule = std::move(parsed);
    return sites_.emplace(site.schedule, std::move(state)).first->second;
  }

  const Blocks& BlocksFor(SiteState* state, const ArrayBase& space) {
    const int t = options_.threads;
    return blocks_.Get(state->schedule, space, /*salt=*/{}, [&] {
      return MakeBlocks(state->schedule, space,
                        {.space_parts = t, .time_parts = t, .wave_parts = t, .exact_wave_parts = false});
    });
  }

  const ParallelExecutorOptions options_;
  std::shared_ptr<spdlog::logger> logger_;
  std::optional<tbb::global_control> parallelism_;
  tbb::task_arena arena_;
  // Keyed by the schedule entry, which is unique per call site and lives as long as the program.
  std::map<const EmbeddedSchedule*, SiteState> sites_;
  BlockCache blocks_;  // shared by sites that cut an array alike
  std::set<std::tuple<std::string, unsigned, unsigned>> unscheduled_;  // already logged
};

}  // namespace

std::unique_ptr<Executor> MakeParallelExecutor(const ParallelExecutorOptions& options,
                                               std::shared_ptr<spdlog::logger> logger) {
  return std::make_unique<ParallelExecutor>(options, std::move(logger));
}

}  // namespace tessera::internal
