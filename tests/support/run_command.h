// Runs a shell command to completion for tests that drive a built binary (an app, a benchmark)
// as a user would.
#ifndef TESSERA_TESTS_SUPPORT_RUN_COMMAND_H_
#define TESSERA_TESTS_SUPPORT_RUN_COMMAND_H_

#include <sys/wait.h>

#include <cstdio>
#include <string>

namespace tessera::testing {

struct RunResult {
  int exit_code = -1;  // -1: killed by a signal, or the command could not be started
  std::string output;  // stdout and stderr, interleaved as written
};

// Runs `command` under /bin/sh, waits for it, and returns its exit code and output.
inline RunResult RunCommand(const std::string& command) {
  RunResult r;
  FILE* p = ::popen((command + " 2>&1").c_str(), "r");
  if (p == nullptr) return r;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) r.output.append(buf, n);
  const int status = ::pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

}  // namespace tessera::testing

#endif  // TESSERA_TESTS_SUPPORT_RUN_COMMAND_H_
