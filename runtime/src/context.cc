#include "tessera/context.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "internal/parallel_executor.h"
#include "internal/schedule_table.h"
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

}  // namespace

struct Context::Impl {
  JobInfo job;
  ExecutionMode mode = ExecutionMode::kSerial;
  std::unique_ptr<Executor> executor;
  std::shared_ptr<spdlog::logger> logger;
  std::vector<const EmbeddedSchedule*> schedules;  // snapshot of the static table
  // Sites already described, keyed by where they are; the schedule lookup and its log line
  // happen once per site, not once per call (loops run every epoch).
  std::map<std::tuple<std::string, unsigned, unsigned>, const EmbeddedSchedule*> sites;
  int64_t next_array_id = 0;
  bool in_loop = false;
};

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
  if (options.executor != nullptr) {
    impl_->executor = std::move(options.executor);
    impl_->mode = impl_->job.launched() ? ExecutionMode::kDistributed : ExecutionMode::kSerial;
  } else {
    int threads = options.threads > 0       ? options.threads
                  : options.read_environment ? EnvIntOr("TESSERA_THREADS", 1)
                                             : 1;
    if (threads < 1 || threads >= internal::kMaxExecutorSlots) {
      impl_->logger->warn("{} executor threads requested; using {}", threads,
                          std::clamp(threads, 1, internal::kMaxExecutorSlots - 1));
      threads = std::clamp(threads, 1, internal::kMaxExecutorSlots - 1);
    }
    impl_->executor = threads > 1 ? internal::MakeParallelExecutor({.threads = threads}, impl_->logger)
                                  : MakeSerialExecutor();
    if (impl_->job.launched()) {
      // Not silently wrong: every worker would run the whole program; say so loudly.
      impl_->logger->warn(
          "{} was launched as '{}' (coordinator {}) but no distributed executor is linked in; "
          "running serially",
          program, impl_->job.role, impl_->job.coordinator);
    }
  }
  impl_->logger->debug("context: mode={}, executor={}, {} embedded schedule(s)",
                       impl_->mode == ExecutionMode::kSerial ? "serial" : "distributed",
                       impl_->executor->name(), impl_->schedules.size());
}

Context::~Context() = default;

ExecutionMode Context::mode() const { return impl_->mode; }
const JobInfo& Context::job() const { return impl_->job; }
Executor& Context::executor() { return *impl_->executor; }
spdlog::logger& Context::logger() { return *impl_->logger; }

const EmbeddedSchedule* Context::FindSchedule(const std::source_location& loc) const {
  return internal::MatchSchedule(impl_->schedules, loc.file_name(), loc.line(), loc.column())
      .schedule;
}

LoopSite Context::MakeSite(const std::source_location& loc, bool data_parallel, int staleness) {
  LoopSite site;
  site.location = loc;
  site.data_parallel = data_parallel;
  site.staleness = staleness;
  auto key = std::make_tuple(std::string(loc.file_name()), static_cast<unsigned>(loc.line()),
                             static_cast<unsigned>(loc.column()));
  auto it = impl_->sites.find(key);
  if (it == impl_->sites.end()) {
    const internal::ScheduleMatch m =
        internal::MatchSchedule(impl_->schedules, loc.file_name(), loc.line(), loc.column());
    if (m.schedule != nullptr) {
      impl_->logger->debug("parallel_for at {}:{}: embedded schedule {}; executor '{}'",
                           loc.file_name(), loc.line(), m.schedule->json,
                           impl_->executor->name());
    } else if (m.count > 1) {
      impl_->logger->warn("parallel_for at {}:{}: {} embedded schedules match (ambiguous); ignoring them",
                          loc.file_name(), loc.line(), m.count);
    } else {
      impl_->logger->debug("parallel_for at {}:{}: no embedded schedule; executor '{}'",
                           loc.file_name(), loc.line(), impl_->executor->name());
    }
    it = impl_->sites.emplace(std::move(key), m.schedule).first;
  }
  site.schedule = it->second;
  return site;
}

int64_t Context::NextArrayId() { return impl_->next_array_id++; }

bool Context::EnterLoop() {
  if (impl_->in_loop) return false;
  impl_->in_loop = true;
  return true;
}

void Context::ExitLoop() { impl_->in_loop = false; }

}  // namespace tessera
