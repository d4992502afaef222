#include "bench/ps/run_processes.h"

#include <fmt/format.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <thread>

namespace tessera::bench {
namespace {

int ReadPipeReport(int fd, Report* r) {
  char buf[128] = {};
  ssize_t n = read(fd, buf, sizeof(buf) - 1);
  if (n <= 0) return -1;
  return std::sscanf(buf, "%lu %lf", &r->rows, &r->seconds) == 2 ? 0 : -1;
}

// Sums the clients' rows; the job took as long as its slowest client. Closes the pipes. Not
// `ok` if a client reported nothing.
Report CollectReports(const std::vector<int>& pipes) {
  Report total;
  total.ok = true;
  for (int fd : pipes) {
    Report r;
    if (ReadPipeReport(fd, &r) == 0) {
      total.rows += r.rows;
      total.seconds = std::max(total.seconds, r.seconds);
    } else {
      total.ok = false;
    }
    close(fd);
  }
  return total;
}

double CpuSeconds(const rusage& u) {
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

// Whether every process exited with status 0; adds their CPU seconds to `cpu` (if not null).
bool WaitAll(const std::vector<pid_t>& pids, double* cpu = nullptr) {
  bool all_ok = true;
  for (pid_t p : pids) {
    int status = 0;
    if (p <= 0) {  // fork failed
      all_ok = false;
      continue;
    }
    rusage u{};
    if (wait4(p, &status, 0, &u) != p || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
      all_ok = false;
    if (cpu != nullptr) *cpu += CpuSeconds(u);
  }
  return all_ok;
}

// Stops the processes of a run that cannot go on.
void KillAll(const std::vector<pid_t>& pids) {
  for (pid_t p : pids) {
    if (p > 0) kill(p, SIGKILL);
  }
  (void)WaitAll(pids);
}

// Waits for a run's clients, then for its other processes (coordinator, servers), and returns
// whether all exited with status 0. The first process to fail stops the run: the others would
// wait for it for good (at a barrier, or for its leaving). Only a run's processes are children
// of this process while it runs. Adds the clients' CPU seconds and the others' to `report`.
bool WaitRun(std::vector<pid_t> clients, std::vector<pid_t> others, Report* report) {
  auto stop = [&] {
    KillAll(clients);
    KillAll(others);
    return false;
  };
  for (pid_t p : clients) {
    if (p <= 0) return stop();  // fork failed
  }
  while (!clients.empty()) {
    int status = 0;
    rusage u{};
    const pid_t p = wait4(-1, &status, 0, &u);
    if (p < 0) return stop();
    const bool was_client = std::erase(clients, p) > 0;
    (was_client ? report->client_cpu : report->other_cpu) += CpuSeconds(u);
    std::erase(others, p);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return stop();
  }
  return WaitAll(others, &report->other_cpu);
}

}  // namespace

void WriteReport(int fd, uint64_t rows, double seconds) {
  std::string s = fmt::format("{} {}\n", rows, seconds);
  [[maybe_unused]] ssize_t n = write(fd, s.data(), s.size());
}

void AbandonRun(const std::vector<pid_t>& clients, const std::vector<pid_t>& others,
                const std::vector<int>& pipes) {
  std::perror("ps_bench: pipe");
  KillAll(clients);
  KillAll(others);
  for (int fd : pipes) close(fd);
}

// The clients' reports are each written before the client exits, so the pipes are read after
// the waits.
Report FinishRun(const std::vector<pid_t>& clients, const std::vector<pid_t>& others,
                 const std::vector<int>& pipes) {
  Report cpu;
  const bool run_ok = WaitRun(clients, others, &cpu);
  Report total = CollectReports(pipes);
  total.ok = total.ok && run_ok;
  total.client_cpu = cpu.client_cpu;
  total.other_cpu = cpu.other_cpu;
  return total;
}

std::string TempEndpointFile() {
  return fmt::format("/tmp/tessera-bench-{}-{}", getpid(),
                     std::chrono::steady_clock::now().time_since_epoch().count());
}

std::string WaitForFile(const std::string& path) {
  for (int i = 0; i < 2000; ++i) {
    if (FILE* f = std::fopen(path.c_str(), "r")) {
      char buf[256] = {};
      bool ok = std::fgets(buf, sizeof(buf), f) != nullptr;
      std::fclose(f);
      std::string s(buf);
      while (!s.empty() && (s.back() == '\n')) s.pop_back();
      if (ok && !s.empty()) return s;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return "";
}

void PublishFile(const std::string& path, const std::string& text) {
  std::string tmp = path + ".tmp";
  FILE* f = std::fopen(tmp.c_str(), "w");
  std::fprintf(f, "%s\n", text.c_str());
  std::fclose(f);
  std::rename(tmp.c_str(), path.c_str());
}

}  // namespace tessera::bench
