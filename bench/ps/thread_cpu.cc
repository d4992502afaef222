#include "bench/ps/thread_cpu.h"

#include <fmt/format.h>
#include <sys/resource.h>

#include <algorithm>
#include <ctime>
#include <filesystem>
#include <fstream>

namespace tessera::bench {

ThreadCpu ThreadCpuSeconds() {
  rusage ru{};
  getrusage(RUSAGE_THREAD, &ru);
  auto secs = [](const timeval& tv) {
    return static_cast<double>(tv.tv_sec) + static_cast<double>(tv.tv_usec) * 1e-6;
  };
  return {secs(ru.ru_utime), secs(ru.ru_stime)};
}

ThreadCpu PerRow(const ThreadCpu& start, const ThreadCpu& end, uint64_t rows) {
  if (rows == 0) return {};
  const double per_row = 1e6 / static_cast<double>(rows);
  return {(end.user - start.user) * per_row, (end.system - start.system) * per_row};
}

std::string ThreadsPerRow(uint64_t rows) {
  auto per_row = [rows](double ns) {
    return rows > 0 ? ns / 1e3 / static_cast<double>(rows) : 0.0;
  };
  std::string out;
  double live_ns = 0;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream comm(task.path() / "comm"), sched(task.path() / "schedstat");
    std::string name;
    double ns = 0;
    if (!std::getline(comm, name) || !(sched >> ns)) continue;
    live_ns += ns;
    out += fmt::format(" {} {:.3f}", name, per_row(ns));
  }
  timespec process{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &process);
  const double process_ns =
      static_cast<double>(process.tv_sec) * 1e9 + static_cast<double>(process.tv_nsec);
  out += fmt::format(" ended {:.3f}", per_row(std::max(0.0, process_ns - live_ns)));
  return out;
}

}  // namespace tessera::bench
