#include "tessera/context.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "checkpoint/checkpointing_executor.h"
#include "distributed/distributed_executor.h"
#include "distributed/malloc_policy.h"
#include "distributed/row_layout.h"
#include "execution/parallel_executor.h"
#include "permute/assign_permuted.h"
#include "permute/permute_records.h"
#include "schedule/loop_schedule.h"
#include "schedule/schedule_table.h"
#include "tessera/client/job_environment.h"
#include "tessera/common/check.h"
#include "tessera/common/logging.h"

namespace tessera {
namespace {

std::string EnvOr(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v == nullptr ? fallback : std::string(v);
}

int EnvIntOr(const char* name, int fallback) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  char* end = nullptr;
  const long parsed = std::strtol(v, &end, 10);
  return (end != nullptr && *end == '\0') ? static_cast<int>(parsed) : fallback;
}

// Why a call site may have found no schedule, for the warning that says it did not.
std::string UnmatchedSiteHint(const std::vector<const EmbeddedSchedule*>& schedules) {
  if (schedules.empty()) {
    return "the program embeds no schedules (build it with tessera_add_program, or run tessc)";
  }
  std::vector<std::string> files;
  for (const EmbeddedSchedule* e : schedules) {
    if (e->file != nullptr && std::find(files.begin(), files.end(), e->file) == files.end()) {
      files.push_back(e->file);
    }
  }
  std::string hint = "the program embeds schedules for ";
  for (size_t i = 0; i < files.size() && i < 3; ++i) hint += (i > 0 ? ", " : "") + files[i];
  if (files.size() > 3) hint += " and " + std::to_string(files.size() - 3) + " more files";
  return hint + " (is this source built through tessera_add_program, and unchanged since?)";
}

// Before main: the job's output defaults (line buffering under a launcher, TESSERA_LOG_LEVEL)
// must precede the first output, and a program's own later settings (a --log-level flag) must
// override them. Every Tessera program links this file, since it constructs a Context.
[[maybe_unused]] const bool kJobOutputDefaultsApplied = [] {
  if (Status s = ApplyJobOutputDefaults(); !s.ok()) spdlog::warn("{}", s.message());
  return true;
}();

}  // namespace

Result<int> ThreadsFromEnvironment() {
  const char* v = std::getenv("TESSERA_THREADS");
  if (v == nullptr || *v == '\0') return 0;
  char* end = nullptr;
  errno = 0;
  const long parsed = std::strtol(v, &end, 10);
  if (errno != 0 || !std::isdigit(static_cast<unsigned char>(*v)) || *end != '\0' || parsed < 1 ||
      parsed >= internal::kMaxExecutorSlots) {
    return Status::InvalidArgument("TESSERA_THREADS='" + std::string(v) +
                                   "' is not a number of executor threads (1 to " +
                                   std::to_string(internal::kMaxExecutorSlots - 1) + ")");
  }
  return static_cast<int>(parsed);
}

struct Context::Impl {
  JobInfo job;
  ExecutionMode mode = ExecutionMode::kSerial;
  std::shared_ptr<spdlog::logger> logger;
  std::vector<const EmbeddedSchedule*> schedules;  // snapshot of the static table
  // Sites already described, keyed by where they are; the schedule lookup and its log line
  // happen once per site, not once per call (loops run every epoch).
  // Only the lookup's fields of each LoopSite are used: schedule, no_schedule, serial_entry.
  std::map<std::tuple<std::string, unsigned, unsigned>, LoopSite> sites;
  int64_t next_array_id = 0;
  bool in_loop = false;
  std::map<int64_t, internal::ArrayBase*> arrays;
  std::vector<internal::AccumulatorBase*> accumulators;
  internal::DistributedExecutor* distributed = nullptr;  // owned by `executor` when set
  // The executor itself when checkpoints are on (it wraps the one running the loops).
  internal::checkpoint::CheckpointingExecutor* checkpointing = nullptr;
  // Every array tessc described in the embedded schedules: where it was created and whether only
  // loop bodies touch it (built at the first DefersInitialization).
  struct DescribedArray {
    std::string file;
    unsigned line = 0;
    std::string member;
    bool loop_only = false;
    bool space = false;  // the loop's iteration space (its first entry)
  };
  std::optional<std::vector<DescribedArray>> described;
  // DistArray::assign_permuted's plans, one per pair of arrays (used in both directions): B's
  // key set is A's under `perm`.
  struct PermutedPair {
    int64_t a = -1, b = -1;
    std::vector<int> perm;
    internal::PermutedValuesPlanPtr plan;
  };
  std::vector<PermutedPair> permuted_pairs;
  uint64_t permuted_bytes = 0;  // Traffic::permuted
  // Declared last: destroyed first, while the registries it may look at still exist.
  std::unique_ptr<Executor> owned_executor;
};

namespace {

// The distributed executor for a launched worker, from the launcher's environment
// (docs/running.md); aborts with the reason when the job cannot be joined, because running
// the program alone would silently compute something else.
std::unique_ptr<internal::DistributedExecutor> JoinDistributedJob(
    Context& ctx, int threads, std::shared_ptr<spdlog::logger> log) {
  Result<std::optional<JobEnvironment>> env = JobEnvironmentFromEnv();
  if (!env.ok()) {
    internal::CheckFailed(__FILE__, __LINE__, "joining the job:", env.status().ToString().c_str());
  }
  TESSERA_CHECK_MSG(env->has_value(), "launched as a worker without TESSERA_COORDINATOR");
  const JobEnvironment& job = **env;
  log->info("{}", internal::SetWorkerMallocPolicy());
  internal::DistributedExecutorOptions o;
  o.rank = job.rank;
  o.num_workers = job.num_workers;
  o.client = job.client;
  o.peer_bind = "tcp://" + EnvOr("TESSERA_BIND_HOST", "127.0.0.1") + ":0";
  o.threads = threads;
  o.pipeline_depth = EnvIntOr("TESSERA_PIPELINE_DEPTH", o.pipeline_depth);
  o.data_parallel_clocks = EnvIntOr("TESSERA_DATA_PARALLEL_CLOCKS", o.data_parallel_clocks);
  o.data_parallel_flushes = EnvIntOr("TESSERA_DATA_PARALLEL_FLUSHES", o.data_parallel_flushes);
  o.min_parallel_wavefront = EnvIntOr("TESSERA_MIN_PARALLEL_WAVEFRONT", 4096);
  Result<std::unique_ptr<internal::DistributedExecutor>> ex =
      internal::DistributedExecutor::Start(o, ctx, std::move(log));
  if (!ex.ok()) {
    const std::string why = "worker " + std::to_string(job.rank) + " could not join the job at " +
                            job.client.coordinator + ": " + ex.status().ToString();
    internal::CheckFailed(__FILE__, __LINE__, "joining the job:", why.c_str());
  }
  return std::move(ex).value();
}

// TESSERA_CHECKPOINT_DIR, TESSERA_CHECKPOINT_INTERVAL and TESSERA_RESUME (set by `tessera run
// --checkpoint-dir/--checkpoint-interval/--resume`); a malformed value aborts with its name.
CheckpointOptions CheckpointOptionsFromEnvironment() {
  CheckpointOptions o;
  o.dir = EnvOr("TESSERA_CHECKPOINT_DIR", "");
  const std::string interval = EnvOr("TESSERA_CHECKPOINT_INTERVAL", "");
  if (!interval.empty()) {
    char* end = nullptr;
    o.interval_seconds = std::strtod(interval.c_str(), &end);
    if (end == interval.c_str() || *end != '\0' || !(o.interval_seconds >= 0)) {
      const std::string why =
          "TESSERA_CHECKPOINT_INTERVAL='" + interval + "' is not a number of seconds >= 0";
      internal::CheckFailed(__FILE__, __LINE__, "reading the environment:", why.c_str());
    }
  }
  o.resume = EnvOr("TESSERA_RESUME", "") == "1";
  return o;
}

}  // namespace

Context::Context(int argc, char** argv) : Context(argc, argv, ContextOptions{}) {}

Context::Context(ContextOptions options) : Context(0, nullptr, std::move(options)) {}

Context::Context(int argc, char** argv, ContextOptions options) : impl_(std::make_unique<Impl>()) {
  if (options.read_environment) {
    impl_->job.role = EnvOr("TESSERA_ROLE", "");
    impl_->job.coordinator = EnvOr("TESSERA_COORDINATOR", "");
    impl_->job.rank = EnvIntOr("TESSERA_RANK", 0);
    impl_->job.num_workers = EnvIntOr("TESSERA_NUM_WORKERS", 1);
  }
  std::string name = options.log_name;
  if (name.empty()) {
    name = impl_->job.launched() ? "worker-" + std::to_string(impl_->job.rank) : "tessera";
  }
  impl_->logger = MakeLogger(name);
  impl_->schedules = internal::AllEmbeddedSchedules();

  const std::string program = (argc > 0 && argv != nullptr && argv[0] != nullptr) ? argv[0] : "";
  int threads = options.threads > 0 ? options.threads : 1;
  if (options.threads <= 0 && options.read_environment) {
    const Result<int> env_threads = ThreadsFromEnvironment();
    if (!env_threads.ok()) {
      internal::CheckFailed(__FILE__, __LINE__,
                            "reading the environment:", env_threads.status().message().c_str());
    }
    if (*env_threads > 0) threads = *env_threads;
  }
  if (threads < 1 || threads >= internal::kMaxExecutorSlots) {
    impl_->logger->warn("{} executor threads requested; using {}", threads,
                        std::clamp(threads, 1, internal::kMaxExecutorSlots - 1));
    threads = std::clamp(threads, 1, internal::kMaxExecutorSlots - 1);
  }
  // Checkpoints are checked before joining a job: no worker can write one before every worker
  // has looked at the directory (joining waits for all of them).
  CheckpointOptions checkpoint = options.checkpoint;
  if (checkpoint.dir.empty() && options.read_environment) {
    checkpoint = CheckpointOptionsFromEnvironment();
  }
  std::optional<internal::checkpoint::Found> resume_from;
  if (!checkpoint.dir.empty()) {
    auto found = internal::checkpoint::PrepareCheckpoints(checkpoint, *impl_->logger);
    if (!found.ok()) {
      internal::CheckFailed(__FILE__, __LINE__, "checkpoints:", found.status().message().c_str());
    }
    resume_from = std::move(found).value();
  }
  if (options.executor != nullptr) {
    impl_->owned_executor = std::move(options.executor);
    impl_->mode = impl_->job.launched() ? ExecutionMode::kDistributed : ExecutionMode::kSerial;
  } else if (impl_->job.launched() && impl_->job.role == "worker") {
    auto ex = JoinDistributedJob(*this, threads, impl_->logger);
    impl_->distributed = ex.get();
    impl_->owned_executor = std::move(ex);
    impl_->mode = ExecutionMode::kDistributed;
  } else {
    impl_->owned_executor =
        threads > 1 ? internal::MakeParallelExecutor({.threads = threads}, impl_->logger)
                    : MakeSerialExecutor();
    if (impl_->job.launched()) {
      impl_->logger->warn("{} was launched as '{}', which runs no program; running serially",
                          program, impl_->job.role);
    }
  }
  if (!checkpoint.dir.empty()) {
    auto host = impl_->distributed != nullptr
                    ? internal::checkpoint::MakeDistributedHost(
                          *impl_->distributed, impl_->job.rank, impl_->job.num_workers)
                    : internal::checkpoint::MakeLocalHost();
    auto wrapped = std::make_unique<internal::checkpoint::CheckpointingExecutor>(
        std::move(impl_->owned_executor), std::move(host), checkpoint, std::move(resume_from),
        *this, impl_->logger);
    impl_->checkpointing = wrapped.get();
    impl_->owned_executor = std::move(wrapped);
  }
  impl_->logger->debug("context: mode={}, executor={}, {} embedded schedule(s)",
                       impl_->mode == ExecutionMode::kSerial ? "serial" : "distributed",
                       impl_->owned_executor->name(), impl_->schedules.size());
}

Context::~Context() = default;

ExecutionMode Context::mode() const { return impl_->mode; }
const JobInfo& Context::job() const { return impl_->job; }
bool Context::replaying() const {
  return impl_->checkpointing != nullptr && impl_->checkpointing->replaying();
}
void Context::on_restore(std::function<void()> f) {
  if (impl_->checkpointing != nullptr) impl_->checkpointing->OnRestore(std::move(f));
}
Executor& Context::executor() { return *impl_->owned_executor; }
spdlog::logger& Context::logger() { return *impl_->logger; }

const EmbeddedSchedule* Context::FindSchedule(const std::source_location& loc) const {
  const EmbeddedSchedule* e =
      internal::MatchSchedule(impl_->schedules, loc.file_name(), loc.line(), loc.column()).schedule;
  // tessc's record of a site it runs serially is no schedule.
  return e != nullptr && internal::TesscSerialReasons(e->json) ? nullptr : e;
}

LoopSite Context::MakeSite(const std::source_location& loc, bool data_parallel, int staleness,
                           bool lock_free) {
  LoopSite site;
  site.location = loc;
  site.data_parallel = data_parallel;
  site.staleness = staleness;
  site.lock_free = data_parallel && lock_free;
  auto key = std::make_tuple(std::string(loc.file_name()), static_cast<unsigned>(loc.line()),
                             static_cast<unsigned>(loc.column()));
  auto it = impl_->sites.find(key);
  if (it == impl_->sites.end()) {
    const internal::ScheduleMatch m =
        internal::MatchSchedule(impl_->schedules, loc.file_name(), loc.line(), loc.column());
    LoopSite found;  // the schedule, or why there is none
    std::optional<std::vector<std::string>> serial_reasons;
    if (m.schedule != nullptr) serial_reasons = internal::TesscSerialReasons(m.schedule->json);
    if (serial_reasons) {
      found.no_schedule = NoScheduleCause::kTesscSerial;
      found.serial_entry = m.schedule;
    } else if (m.schedule != nullptr) {
      found.schedule = m.schedule;
    } else if (m.count > 1) {
      found.no_schedule = NoScheduleCause::kAmbiguous;
    }
    const bool loses_parallelism =
        impl_->mode == ExecutionMode::kDistributed || impl_->owned_executor->concurrency() > 1;
    if (serial_reasons) {
      // tessc warned at build time; a parallel or distributed run says what it costs.
      if (loses_parallelism) {
        impl_->logger->warn(
            "parallel_for at {}:{}: tessc chose to run it serially, so executor '{}' runs it "
            "unpartitioned ({})",
            loc.file_name(), loc.line(), impl_->owned_executor->name(),
            internal::JoinSerialReasons(*serial_reasons));
      } else {
        impl_->logger->debug("parallel_for at {}:{}: tessc chose to run it serially; executor '{}'",
                             loc.file_name(), loc.line(), impl_->owned_executor->name());
      }
    } else if (m.schedule != nullptr) {
      impl_->logger->debug("parallel_for at {}:{}: embedded schedule {}; executor '{}'",
                           loc.file_name(), loc.line(), m.schedule->json,
                           impl_->owned_executor->name());
    } else if (m.count > 1) {
      impl_->logger->warn(
          "parallel_for at {}:{}: {} embedded schedules match (ambiguous); ignoring them",
          loc.file_name(), loc.line(), m.count);
    } else if (loses_parallelism) {
      // Only a parallel or distributed run loses anything without a schedule.
      impl_->logger->warn(
          "parallel_for at {}:{}: no schedule from tessc matches this call site, "
          "so executor '{}' runs it unpartitioned; {}",
          loc.file_name(), loc.line(), impl_->owned_executor->name(),
          UnmatchedSiteHint(impl_->schedules));
    } else {
      impl_->logger->debug("parallel_for at {}:{}: no embedded schedule; executor '{}'",
                           loc.file_name(), loc.line(), impl_->owned_executor->name());
    }
    it = impl_->sites.emplace(std::move(key), found).first;
  }
  site.schedule = it->second.schedule;
  site.no_schedule = it->second.no_schedule;
  site.serial_entry = it->second.serial_entry;
  return site;
}

int64_t Context::NextArrayId() { return impl_->next_array_id++; }

bool Context::DefersInitialization(const internal::ArrayOrigin& origin) {
  return OnlyLoopsTouch(origin, /*space_too=*/false);
}

bool Context::PartitionsLoadedArray(const internal::ArrayOrigin& origin) {
  // TESSERA_PARTITIONED_DATA=0 loads every record on every worker, as a reference to compare
  // with (memory benchmarks, tests).
  const char* env = std::getenv("TESSERA_PARTITIONED_DATA");
  if (env != nullptr && std::string_view(env) == "0") return false;
  return OnlyLoopsTouch(origin, /*space_too=*/true);
}

bool Context::OnlyLoopsTouch(const internal::ArrayOrigin& origin, bool space_too) {
  // Only the distributed executor partitions arrays, and only in jobs it can lay out.
  if (impl_->distributed == nullptr || impl_->job.num_workers < 2 ||
      impl_->job.num_workers > internal::kMaxLayoutWorkers) {
    return false;
  }
  if (!impl_->described) {
    impl_->described.emplace();
    for (const EmbeddedSchedule* e : impl_->schedules) {
      Result<internal::LoopSchedule> s = internal::ParseLoopSchedule(e->json);
      if (!s.ok()) continue;  // reported when its loop runs
      for (size_t i = 0; i < s->arrays.size(); ++i) {
        const internal::LoopSchedule::Array& a = s->arrays[i];
        if (!a.origin) continue;
        impl_->described->push_back(
            {a.origin->file, a.origin->line, a.origin->member, a.loop_only, i == 0});
      }
    }
  }
  // Every schedule that names an array created here must say that only loops touch it.
  bool seen = false;
  for (const Impl::DescribedArray& d : *impl_->described) {
    if (d.line != origin.line || d.member != origin.member ||
        !internal::SameSourceFile(d.file, origin.file)) {
      continue;
    }
    // A dense iteration space is iterated whole: never left uncomputed.
    if (!d.loop_only || (d.space && !space_too)) return false;
    seen = true;
  }
  return seen;
}

bool Context::EnterLoop() {
  if (impl_->in_loop) return false;
  impl_->in_loop = true;
  return true;
}

void Context::ExitLoop() { impl_->in_loop = false; }

void Context::AttachArray(internal::ArrayBase* array) { impl_->arrays[array->id()] = array; }

void Context::DetachArray(internal::ArrayBase* array) {
  auto it = impl_->arrays.find(array->id());
  if (it != impl_->arrays.end() && it->second == array) impl_->arrays.erase(it);
  auto& pairs = impl_->permuted_pairs;
  pairs.erase(std::remove_if(pairs.begin(), pairs.end(),
                             [id = array->id()](const Impl::PermutedPair& p) {
                               return p.a == id || p.b == id;
                             }),
              pairs.end());
}

void Context::AttachAccumulator(internal::AccumulatorBase* acc) {
  impl_->accumulators.push_back(acc);
}

void Context::DetachAccumulator(internal::AccumulatorBase* acc) {
  auto& v = impl_->accumulators;
  v.erase(std::remove(v.begin(), v.end(), acc), v.end());
}

const std::map<int64_t, internal::ArrayBase*>& Context::arrays() const { return impl_->arrays; }

const std::vector<internal::AccumulatorBase*>& Context::accumulators() const {
  return impl_->accumulators;
}

Result<std::vector<std::string>> Context::AllGather(std::string bytes) {
  if (impl_->distributed == nullptr) return std::vector<std::string>{std::move(bytes)};
  return impl_->distributed->AllGather(std::move(bytes));
}

Traffic Context::traffic() const {
  Traffic t = impl_->distributed != nullptr ? impl_->distributed->traffic() : Traffic{};
  t.permuted = impl_->permuted_bytes;
  return t;
}

Result<std::vector<std::string>> Context::AllToAll(std::vector<std::string> to_each) {
  if (impl_->distributed == nullptr) {
    TESSERA_CHECK_MSG(to_each.size() == 1, "AllToAll outside a job takes one message");
    return to_each;
  }
  return impl_->distributed->AllToAll(std::move(to_each));
}

std::optional<Status> Context::SavePartitioned(const internal::ArrayBase& array,
                                               const std::string& path, bool text) {
  if (impl_->distributed == nullptr) return std::nullopt;
  return impl_->distributed->SavePartitioned(array, path, text);
}

namespace {

// This worker's rank, the job's size and the Context's all-gather and all-to-all, into the
// options of a collective (PermuteOptions, AssignPermutedOptions).
template <typename Options>
void SetCollectives(Context& ctx, Options* o) {
  o->rank = ctx.job().rank;
  o->num_workers = ctx.job().num_workers;
  o->all_gather = [&ctx](std::string bytes) { return ctx.AllGather(std::move(bytes)); };
  o->all_to_all = [&ctx](std::vector<std::string> to_each) {
    return ctx.AllToAll(std::move(to_each));
  };
}

}  // namespace

void Context::PermuteInto(const internal::ArrayBase& source, const std::vector<int>& perm,
                          internal::ArrayBase& result) {
  internal::PermuteOptions options;
  const bool job = impl_->distributed != nullptr && impl_->job.num_workers > 1;
  if (job) {
    SetCollectives(*this, &options);
    options.keep_partitioned = PartitionsLoadedArray(result.origin());
  }
  const auto start = std::chrono::steady_clock::now();
  Result<internal::PermuteReport> r = internal::PermuteRecords(options, source, perm, &result);
  if (!r.ok()) {
    internal::CheckFailed(__FILE__, __LINE__,
                          "permuting a sparse array:", r.status().ToString().c_str());
  }
  if (!job) return;
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (r->partitioned) {
    impl_->logger->info(
        "permuted array #{} into #{}: {} of {} elements held by this worker, key[0] in [{}, {}) "
        "(partitioned; {} rounds, {} B sent, {:.3f} s of which {:.3f} s ordering rows)",
        source.id(), result.id(), r->held, result.record_partition()->global_size, r->lo, r->hi,
        r->rounds, r->bytes_sent, seconds, r->order_seconds);
  } else {
    impl_->logger->info(
        "permuted array #{} into #{}: {} elements, whole on every worker ({} B "
        "sent, {:.3f} s)",
        source.id(), result.id(), r->held, r->bytes_sent, seconds);
  }
}

void Context::AssignPermuted(internal::ArrayBase& to, internal::ArrayBase& from,
                             const std::vector<int>& perm) {
  TESSERA_CHECK_MSG(!impl_->in_loop,
                    "DistArray::assign_permuted inside a parallel_for body: it copies whole arrays "
                    "(collectively, in a distributed job); call it between loops");
  const bool job = impl_->distributed != nullptr && impl_->job.num_workers > 1;
  internal::AssignPermutedOptions options;
  if (job) {
    SetCollectives(*this, &options);
    options.exchange_rounds = [this](const internal::RoundsSpec& spec) {
      return impl_->distributed->ExchangeRounds(spec);
    };
    // Values move between shares only when both arrays are partitioned; otherwise the
    // partitioned one is made whole (collective, as every worker gets here) and each worker
    // copies locally.
    const bool to_split = to.record_partition() != nullptr;
    if (to_split != (from.record_partition() != nullptr)) {
      internal::ArrayBase& split = to_split ? to : from;
      impl_->logger->info(
          "assign_permuted #{} -> #{}: array #{} is partitioned and the other whole on every "
          "worker, so it is gathered whole first",
          from.id(), to.id(), split.id());
      GatherWhole(split);
    }
  }
  // The pair's plan, made for (A = from, B = to, perm) or for the other direction (A = to, B =
  // from, perm's inverse: from key[e] = to key[inverse[e]]).
  std::vector<int> inverse(perm.size());
  for (size_t d = 0; d < perm.size(); ++d)
    inverse[static_cast<size_t>(perm[d])] = static_cast<int>(d);
  auto& pairs = impl_->permuted_pairs;
  bool a_to_b = true;
  auto it = std::find_if(pairs.begin(), pairs.end(), [&](const Impl::PermutedPair& p) {
    return p.a == from.id() && p.b == to.id() && p.perm == perm;
  });
  if (it == pairs.end()) {
    it = std::find_if(pairs.begin(), pairs.end(), [&](const Impl::PermutedPair& p) {
      return p.a == to.id() && p.b == from.id() && p.perm == inverse;
    });
    a_to_b = it == pairs.end();
  }
  if (it == pairs.end()) {
    pairs.push_back({from.id(), to.id(), perm, nullptr});
    it = pairs.end() - 1;
  }
  internal::ArrayBase& a = a_to_b ? from : to;
  internal::ArrayBase& b = a_to_b ? to : from;
  const auto start = std::chrono::steady_clock::now();
  Result<internal::AssignPermutedReport> r =
      internal::AssignPermuted(options, a, b, it->perm, a_to_b, &it->plan);
  if (!r.ok()) {
    internal::CheckFailed(__FILE__, __LINE__,
                          "assigning permuted values:", r.status().ToString().c_str());
  }
  impl_->permuted_bytes += r->bytes_sent;
  if (!job) return;
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (r->planned) {
    impl_->logger->info(
        "assign_permuted #{} -> #{}: plan made ({}; {} elements assigned here, plan {} B, {} "
        "rounds, {} B sent, {:.3f} s)",
        from.id(), to.id(), r->distributed ? "partitioned" : "whole on every worker", r->held,
        internal::PlanBytes(*it->plan), r->rounds, r->bytes_sent, seconds);
  } else {
    impl_->logger->debug(
        "assign_permuted #{} -> #{}: {} elements assigned here, {} rounds, {} B "
        "sent, {:.3f} s",
        from.id(), to.id(), r->held, r->rounds, r->bytes_sent, seconds);
  }
}

void Context::FetchRow(internal::ArrayBase& array, int64_t row) {
  TESSERA_CHECK_MSG(impl_->distributed != nullptr, "a partitioned array outside a job");
  impl_->distributed->FetchRow(array, row);
}

void Context::GatherWhole(internal::ArrayBase& array) {
  TESSERA_CHECK_MSG(impl_->distributed != nullptr, "a partitioned array outside a job");
  impl_->distributed->GatherWhole(array);
}

}  // namespace tessera
