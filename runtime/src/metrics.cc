#include "tessera/metrics.h"

#include <cerrno>
#include <cmath>
#include <cstring>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tessera/context.h"
#include "tessera/transport/liveness.h"

namespace tessera {

static_assert(kExitAnotherWorkerFailed == kExitPeerLeft, "one code for a consequence");

std::string FormatEta(double elapsed_seconds, int64_t done, int64_t total) {
  if (done <= 0 || done >= total || !(elapsed_seconds >= 0)) return "";
  const double left = elapsed_seconds / static_cast<double>(done) * static_cast<double>(total - done);
  const int64_t s = static_cast<int64_t>(std::llround(left));
  if (s < 60) return fmt::format("eta {}s", s);
  if (s < 3600) return fmt::format("eta {}m{:02d}s", s / 60, s % 60);
  return fmt::format("eta {}h{:02d}m", s / 3600, (s % 3600) / 60);
}

Result<double> SumOverWorkers(Context& ctx, double value) {
  if (ctx.mode() != ExecutionMode::kDistributed) return value;
  // A native double: the workers of a job share one architecture (as patches do).
  std::string bytes(sizeof value, '\0');
  std::memcpy(bytes.data(), &value, sizeof value);
  Result<std::vector<std::string>> all = ctx.AllGather(std::move(bytes));
  if (!all.ok()) return all.status();
  double total = 0;
  for (const std::string& b : *all) {
    if (b.size() != sizeof value) {
      return Status::DataLoss("SumOverWorkers: a worker sent a malformed value");
    }
    double v = 0;
    std::memcpy(&v, b.data(), sizeof v);
    total += v;
  }
  return total;
}

int AgreedExitStatus(Context& ctx, bool ok, std::string_view program) {
  Result<double> failed = SumOverWorkers(ctx, ok ? 0.0 : 1.0);
  if (!ok) return 1;
  if (!failed.ok()) return kExitAnotherWorkerFailed;  // a peer left: its output says why
  if (*failed == 0) return 0;
  fmt::print(stderr, "{}: another worker failed; stopping\n", program);
  return kExitAnotherWorkerFailed;
}

MetricsRecord& MetricsRecord::set(std::string name, double value) {
  fields_.emplace_back(std::move(name), value);
  return *this;
}
MetricsRecord& MetricsRecord::set(std::string name, int64_t value) {
  fields_.emplace_back(std::move(name), value);
  return *this;
}
MetricsRecord& MetricsRecord::set(std::string name, std::string value) {
  fields_.emplace_back(std::move(name), std::move(value));
  return *this;
}

std::string MetricsRecord::ToJson() const {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  for (const auto& [name, value] : fields_) {
    if (const double* d = std::get_if<double>(&value)) {
      j[name] = std::isfinite(*d) ? nlohmann::ordered_json(*d) : nlohmann::ordered_json(nullptr);
    } else if (const int64_t* i = std::get_if<int64_t>(&value)) {
      j[name] = *i;
    } else {
      j[name] = std::get<std::string>(value);
    }
  }
  return j.dump();
}

void MetricsLog::Closer::operator()(std::FILE* f) const {
  if (f != nullptr) std::fclose(f);
}

Result<MetricsLog> MetricsLog::Open(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) {
    return Status::NotFound(
        fmt::format("cannot open metrics file '{}' for writing: {}", path, std::strerror(errno)));
  }
  MetricsLog log;
  log.file_.reset(f);
  log.path_ = path;
  return log;
}

MetricsLog::~MetricsLog() = default;

Status MetricsLog::Write(const MetricsRecord& record) {
  const std::string line = record.ToJson() + "\n";
  if (std::fwrite(line.data(), 1, line.size(), file_.get()) != line.size() ||
      std::fflush(file_.get()) != 0) {
    return Status::DataLoss(fmt::format("cannot write metrics to '{}': {}", path_, std::strerror(errno)));
  }
  return Status::Ok();
}

}  // namespace tessera
