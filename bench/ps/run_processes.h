// The processes of one ps_bench run: forking them (pinned or not), the pipe each client reports
// its rows and seconds through, waiting for all of them, and the files through which a
// process publishes its endpoint to the others.
//
// A run whose every process exited cleanly and reported is `ok`; any other run's numbers would
// be wrong (a missing client's rows not counted), so the caller never prints them as a result.
// Only a run's processes may be children of the calling process while it runs (FinishRun waits
// for any child).
#ifndef TESSERA_BENCH_PS_RUN_PROCESSES_H_
#define TESSERA_BENCH_PS_RUN_PROCESSES_H_

#include <sched.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace tessera::bench {

// What a run measured. Children report "<rows> <seconds>" through a pipe (WriteReport).
struct Report {
  uint64_t rows = 0;
  double seconds = 0;
  bool ok = false;
  // CPU seconds (user + system) of the run's client processes, and of its others (servers,
  // coordinator), start-up included: what each exited child used, from wait4.
  double client_cpu = 0;
  double other_cpu = 0;
  double rate() const { return seconds > 0 ? static_cast<double>(rows) / seconds : 0.0; }
};

// A client's report of the rows it moved in `seconds`, written to its pipe `fd`.
void WriteReport(int fd, uint64_t rows, double seconds);

// Runs `child` in a new process, on CPU `cpu` alone unless it is -1; the child exits with what
// `child` returns. Returns the child's pid (<= 0 if fork failed).
template <typename F>
pid_t Fork(int cpu, F child) {
  pid_t pid = fork();
  if (pid == 0) {
    if (cpu >= 0) {
      cpu_set_t set;
      CPU_ZERO(&set);
      CPU_SET(cpu, &set);
      if (sched_setaffinity(0, sizeof(set), &set) != 0) {
        std::fprintf(stderr, "ps_bench: cannot pin a process to CPU %d: %s\n", cpu,
                     std::strerror(errno));
        _exit(1);
      }
    }
    int rc = child();
    std::fflush(nullptr);
    _exit(rc);
  }
  return pid;
}

// Gives up a run that could not make a pipe for its next client: stops its processes and closes
// the report pipes made so far.
void AbandonRun(const std::vector<pid_t>& clients, const std::vector<pid_t>& others,
                const std::vector<int>& pipes);

// A run's result once its processes are done: the clients' reports read from `pipes` (which it
// closes), the rows summed and the seconds of the slowest client, ok only if every process
// exited cleanly and every client reported, with the run's CPU seconds. The first process to
// fail stops the run (the others would wait for it for good).
Report FinishRun(const std::vector<pid_t>& clients, const std::vector<pid_t>& others,
                 const std::vector<int>& pipes);

// A path, unique to this process and moment, under /tmp for PublishFile.
std::string TempEndpointFile();

// Writes `text` to `path` atomically (a rename), so a reader sees all of it or nothing.
void PublishFile(const std::string& path, const std::string& text);

// The first line of `path` once another process has published it; "" after about 10 s.
std::string WaitForFile(const std::string& path);

}  // namespace tessera::bench

#endif  // TESSERA_BENCH_PS_RUN_PROCESSES_H_
