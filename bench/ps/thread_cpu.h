// CPU time of a benchmark process's threads, per row moved: what --client-stats prints to say
// which thread (a client's caller, ZeroMQ's I/O thread, Tessera's I/O thread or server loop)
// costs what, on both sides.
#ifndef TESSERA_BENCH_PS_THREAD_CPU_H_
#define TESSERA_BENCH_PS_THREAD_CPU_H_

#include <cstdint>
#include <string>

namespace tessera::bench {

// CPU time of the calling thread: user and system.
struct ThreadCpu {
  double user = 0;
  double system = 0;
};
ThreadCpu ThreadCpuSeconds();

// The thread CPU (us) per row of `rows` moved between `start` and `end`; zero for no rows.
ThreadCpu PerRow(const ThreadCpu& start, const ThreadCpu& end, uint64_t rows);

// The CPU time (us per row of `rows`) of each thread of this process so far, by name, from
// /proc/self/task/*/schedstat (" name value" per thread). Threads that have ended (a server's
// loop, by the time it is done) are summed as "ended": the process's CPU time less its live
// threads'.
std::string ThreadsPerRow(uint64_t rows);

}  // namespace tessera::bench

#endif  // TESSERA_BENCH_PS_THREAD_CPU_H_
