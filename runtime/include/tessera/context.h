// Context: everything a Tessera program's runtime state hangs off (no singletons).
//
//   int main(int argc, char** argv) {
//     tessera::Context ctx(argc, argv);
//     ...  // create DistArrays from ctx, run parallel_for loops
//   }
//
// Started by the launcher (`tessera run`, which sets TESSERA_ROLE and TESSERA_COORDINATOR) the
// Context joins that job; otherwise it runs the program in serial mode, the reference semantics.
//
// Ownership: the Context owns its Executor and logger. Every DistArray, RelaxedArray and
// parallel_for refers to the Context it was created from, which must outlive them.
// Thread safety: not thread-safe. Create arrays and call parallel_for from one thread (main);
// the executor decides which threads run loop bodies.
#ifndef TESSERA_CONTEXT_H_
#define TESSERA_CONTEXT_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <source_location>
#include <string>
#include <vector>

#include "tessera/common/status.h"
#include "tessera/executor.h"
#include "tessera/schedule.h"
#include "tessera/traffic.h"

namespace spdlog {
class logger;
}

namespace tessera {

enum class ExecutionMode {
  kSerial,       // alone, or no distributed executor available: every loop runs serially
  kDistributed,  // joined a launcher-started job through a distributed executor
};

// What the launcher told this process through the environment.
struct JobInfo {
  std::string role;         // TESSERA_ROLE, e.g. "worker"; empty when not launched
  std::string coordinator;  // TESSERA_COORDINATOR, e.g. "tcp://127.0.0.1:5555"
  int rank = 0;             // TESSERA_RANK; Default: 0
  int num_workers = 1;      // TESSERA_NUM_WORKERS; Default: 1
  bool launched() const { return !role.empty(); }
};

// Checkpoints of the program's state at loop boundaries, and resuming from them by replaying the
// program (docs/programming-model.md, "Checkpoints and resume").
struct CheckpointOptions {
  // Where checkpoints go; empty: none. Default: TESSERA_CHECKPOINT_DIR when read_environment.
  std::string dir;
  // At most one checkpoint per interval, at the first loop boundary after it ends; 0: at every
  // loop boundary. Default: TESSERA_CHECKPOINT_INTERVAL when read_environment, else 300.
  double interval_seconds = 300;
  // Continue from the newest complete checkpoint in `dir` (from the beginning when there is
  // none). Without it, a `dir` holding checkpoints is an error. Default: TESSERA_RESUME=1.
  bool resume = false;
  // Complete checkpoints kept (older ones are removed). Default: 3.
  int keep = 3;
};

struct ContextOptions {
  // The executor to run loops with. Default: nullptr, meaning the serial executor.
  // A distributed runtime passes its own (and the mode becomes kDistributed).
  std::unique_ptr<Executor> executor;
  // Name on the context's log lines. Default: "tessera" (or "worker-<rank>" when launched).
  std::string log_name;
  // Read TESSERA_* variables from the environment. Default: true. Tests set false to stay hermetic.
  bool read_environment = true;
  // Executor threads when `executor` is null: above 1, loops run under tessc's schedules on that
  // many threads (the parallel executor, docs/runtime.md); 1 is the serial executor. Default: 0,
  // meaning TESSERA_THREADS from the environment when read_environment (ThreadsFromEnvironment;
  // a malformed value aborts), else 1.
  int threads = 0;
  // Default: none, or what the TESSERA_CHECKPOINT_* variables say (read_environment).
  CheckpointOptions checkpoint;
};

// The executor threads TESSERA_THREADS asks for: 0 when it is unset or empty; InvalidArgument
// (naming the variable and its value) when it is not an integer in [1, 63]. A Context reads it when
// ContextOptions::threads is 0 (and aborts with that message on a bad value); programs with a
// --threads flag use it as the flag's default.
Result<int> ThreadsFromEnvironment();

class Context {
 public:
  // Joins the launcher's job if TESSERA_ROLE/TESSERA_COORDINATOR are set; otherwise serial mode.
  // argv is only read (the program name goes into the log); it is not modified.
  Context(int argc, char** argv);
  Context(int argc, char** argv, ContextOptions options);
  // A serial (or options.executor-driven) context without command-line arguments.
  explicit Context(ContextOptions options = {});
  ~Context();

  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  ExecutionMode mode() const;
  // True while a resumed program re-runs the part before its checkpoint: its parallel_for calls
  // are skipped (accumulators take their logged values), its serial code runs as it did.
  bool replaying() const;
  // Registers `f` to run once a resumed program has restored its arrays from the checkpoint,
  // just before the loop it continues with. Serial state derived from arrays (a snapshot, a
  // cache, an index) that the replay computed from arrays no loop had written yet is recomputed
  // there. `f` may read and write arrays but must not call parallel_for. Never called when the
  // program does not resume.
  void on_restore(std::function<void()> f);
  const JobInfo& job() const;
  // Bytes this worker sent so far, by kind (all zero outside a distributed job).
  Traffic traffic() const;
  Executor& executor();
  spdlog::logger& logger();

  // The embedded schedule for a parallel_for at `loc` under the rule documented in schedule.h;
  // nullptr if none or ambiguous.
  const EmbeddedSchedule* FindSchedule(const std::source_location& loc) const;

  // --- Used by the runtime's templates; not meant for programs. ---
  // Describes a call site; looks its schedule up once per site and logs what it found (debug).
  LoopSite MakeSite(const std::source_location& loc, bool data_parallel, int staleness,
                    bool lock_free = false);
  // Creation number for the next array (deterministic across SPMD workers).
  int64_t NextArrayId();
  // Whether a factory at `origin` may leave its elements to the executor: in a distributed job,
  // when tessc recorded that only loop bodies touch the array created there (docs/runtime.md,
  // "Partitioned arrays"), so that each worker computes only the rows it holds.
  bool DefersInitialization(const internal::ArrayOrigin& origin);
  // Whether a loader may keep the array it creates at `origin` partitioned between the workers
  // (docs/runtime.md, "Partitioned data"): as above, where the array may also be an iteration
  // space.
  bool PartitionsLoadedArray(const internal::ArrayOrigin& origin);
  // Makes a partitioned sparse array whole on every worker (collective: every worker calls it at
  // the same point, as SPMD serial code does); aborts naming the cause when a peer is gone.
  void GatherWhole(internal::ArrayBase& array);
  // Code outside loops touches row `row` of a dense array this distributed job keeps
  // partitioned: unless every worker holds it already, its holder sends it to every other worker,
  // which keep it (collective, as SPMD serial code is). Aborts naming the cause when a peer is gone.
  void FetchRow(internal::ArrayBase& array, int64_t row);
  // save_array / save_array_text (`text`) of an array this distributed job keeps partitioned:
  // collective (every worker calls it at the same point), worker 0 writes `path`, and every
  // worker returns its result. nullopt when `array` is whole here (serial mode, or an array serial
  // code uses): the caller writes it itself.
  std::optional<Status> SavePartitioned(const internal::ArrayBase& array, const std::string& path,
                                        bool text);
  // DistArray::permuted: fills the new sparse `result` with the elements of `source` under the
  // key permutation `perm` (result key[d] = source key[perm[d]]), in key order, where the data
  // lives (docs/runtime.md, "Permuted arrays"). Collective in a distributed job; aborts naming
  // the cause when a peer is gone or sends a malformed message.
  void PermuteInto(const internal::ArrayBase& source, const std::vector<int>& perm,
                   internal::ArrayBase& result);
  // DistArray::assign_permuted: every element of the sparse `to` takes the value of the element of
  // `from` its key permutes from (to key[d] = from key[perm[d]]), where the data lives, by a plan
  // kept for the pair while neither array's layout changes (docs/runtime.md, "Permuted arrays").
  // Collective in a distributed job; aborts naming the cause when the arrays do not hold the same
  // elements, a peer is gone or sends a malformed message.
  void AssignPermuted(internal::ArrayBase& to, internal::ArrayBase& from,
                      const std::vector<int>& perm);
  // Guards against parallel_for inside a parallel_for body (not part of the model).
  bool EnterLoop();
  void ExitLoop();
  // Every live array and accumulator, so that a distributed executor can keep the workers'
  // copies equal. Arrays and accumulators attach themselves on construction and detach on
  // destruction.
  void AttachArray(internal::ArrayBase* array);
  void DetachArray(internal::ArrayBase* array);
  void AttachAccumulator(internal::AccumulatorBase* acc);
  void DetachAccumulator(internal::AccumulatorBase* acc);
  // Live arrays by creation number (identical on every worker of an SPMD job) and live
  // accumulators in creation order.
  const std::map<int64_t, internal::ArrayBase*>& arrays() const;
  const std::vector<internal::AccumulatorBase*>& accumulators() const;
  // All-gather of one byte string per worker, in rank order: every worker calls it at the same
  // point of the program. Alone (serial mode) it returns {bytes}. Used by the data loaders. A lost
  // peer (a dropped connection, a peer that never answers) is not returned: it stops this worker
  // with exit 75, the job having failed.
  Result<std::vector<std::string>> AllGather(std::string bytes);
  // All-to-all: to_each[w] goes to worker w; returns what each worker sent this one, in rank
  // order (this worker's own entry is to_each[rank]). Collective like AllGather. Alone it takes
  // and returns one message.
  Result<std::vector<std::string>> AllToAll(std::vector<std::string> to_each);

 private:
  bool OnlyLoopsTouch(const internal::ArrayOrigin& origin, bool space_too);

  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tessera

#endif  // TESSERA_CONTEXT_H_
