// MetricsLog: per-epoch (per-clock) metrics as JSON lines, one object per line, e.g.
//   {"app":"mf","epoch":3,"train_rmse":0.91,"test_rmse":0.95,"updates_per_s":1.2e7,"elapsed_s":0.4}
// scripts/plot_metrics turns such files into convergence plots.
//
// Ownership: owns its file, flushed after every record (a crashed run keeps what it logged).
// Thread safety: not thread-safe; write from the thread that runs the epochs.
#ifndef TESSERA_METRICS_H_
#define TESSERA_METRICS_H_

#include <cstdio>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "tessera/common/status.h"

namespace tessera {

class Context;

// `value` summed over the workers of the job (e.g. each worker's CPU seconds, for rates per
// CPU-second that count every worker). Every worker calls it at the same point of the program;
// alone (serial mode) it returns `value`. Errors: those of Context::AllGather (a peer gone).
Result<double> SumOverWorkers(Context& ctx, double value);

// The status a worker returns from main when it stops only because another worker failed (e.g.
// it learned so from SumOverWorkers of a failure flag): `tessera run` then reports the other
// worker, with that worker's own status, rather than this consequence (docs/running.md, "Exit
// codes"). The runtime exits with it too when another worker leaves the program early.
inline constexpr int kExitAnotherWorkerFailed = 76;

// Agrees on a check every worker makes (collective, like SumOverWorkers): 0 when `ok` holds on
// every worker, else the status to return from main -- 1 on a worker where it does not,
// kExitAnotherWorkerFailed on the others, which print "<program>: another worker failed;
// stopping" to stderr. A check that only some workers make (worker 0's output files) must be
// agreed on, or the others would wait for that worker forever. Serially: 0 or 1.
int AgreedExitStatus(Context& ctx, bool ok, std::string_view program);

// "eta 3m20s" for a progress line: the time left when `done` of `total` steps took
// `elapsed_seconds`, at their mean pace ("eta 45s", "eta 1h02m"). Empty when no step is done
// yet or none is left.
std::string FormatEta(double elapsed_seconds, int64_t done, int64_t total);

// One line: fields in insertion order.
class MetricsRecord {
 public:
  MetricsRecord& set(std::string name, double value);
  MetricsRecord& set(std::string name, int64_t value);
  MetricsRecord& set(std::string name, int value) { return set(std::move(name), int64_t{value}); }
  MetricsRecord& set(std::string name, std::string value);
  MetricsRecord& set(std::string name, const char* value) { return set(std::move(name), std::string(value)); }
  // The record as one line of JSON (no newline). Non-finite doubles become null.
  std::string ToJson() const;

 private:
  std::vector<std::pair<std::string, std::variant<double, int64_t, std::string>>> fields_;
};

class MetricsLog {
 public:
  // Creates (truncates) the file. Errors: NotFound when it cannot be opened for writing.
  static Result<MetricsLog> Open(const std::string& path);
  MetricsLog(MetricsLog&&) noexcept = default;
  MetricsLog& operator=(MetricsLog&&) noexcept = default;
  ~MetricsLog();

  // Appends one line. Errors: DataLoss when the write fails (disk full, ...).
  Status Write(const MetricsRecord& record);

 private:
  MetricsLog() = default;
  struct Closer {
    void operator()(std::FILE* f) const;
  };
  std::unique_ptr<std::FILE, Closer> file_;
  std::string path_;
};

}  // namespace tessera

#endif  // TESSERA_METRICS_H_
