// A fixture for tests that run Tessera programs as real processes (alone or under
// `tessera run`): a fresh temporary directory per test, a fork/exec runner that captures each
// run's output in the directory and clears the launcher's variables inherited from the caller.
#ifndef TESSERA_TESTS_RUNTIME_DISTRIBUTED_JOB_TEST_BASE_H_
#define TESSERA_TESTS_RUNTIME_DISTRIBUTED_JOB_TEST_BASE_H_

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace tessera::testing {

class JobTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/tessera-job-test-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // Runs `args` with `env` added, stdout and stderr to dir_/log.<name>; returns the exit code
  // (128 + signal when killed).
  int RunProcess(const std::string& name, const std::vector<std::string>& args,
                 const std::map<std::string, std::string>& env = {}) {
    const std::string log = dir_ + "/log." + name;
    pid_t pid = fork();
    if (pid == 0) {
      FILE* f = std::freopen(log.c_str(), "w", stdout);
      if (f == nullptr || dup2(fileno(stdout), 2) < 0) _exit(126);
      for (const char* v : {"TESSERA_ROLE", "TESSERA_COORDINATOR", "TESSERA_RANK",
                            "TESSERA_NUM_WORKERS", "TESSERA_THREADS"}) {
        unsetenv(v);
      }
      for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
      std::vector<char*> argv;
      for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
      argv.push_back(nullptr);
      execv(argv[0], argv.data());
      _exit(127);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }

  static std::string Read(const std::string& path) {
    std::ifstream in(path);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }

  std::string dir_;

  // How often `what` occurs in `log`.
  static int Count(const std::string& log, const std::string& what) {
    int n = 0;
    for (size_t at = log.find(what); at != std::string::npos; at = log.find(what, at + 1)) ++n;
    return n;
  }

  // The numbers in the workers' "N relayouts, M gathered whole" lines, summed over the workers.
  static std::pair<int, int> Moves(const std::string& log) {
    const std::regex re(R"((\d+) relayouts, (\d+) gathered whole)");
    std::pair<int, int> sum{0, 0};
    for (auto it = std::sregex_iterator(log.begin(), log.end(), re); it != std::sregex_iterator();
         ++it) {
      sum.first += std::stoi((*it)[1]);
      sum.second += std::stoi((*it)[2]);
    }
    return sum;
  }
};

}  // namespace tessera::testing

#endif  // TESSERA_TESTS_RUNTIME_DISTRIBUTED_JOB_TEST_BASE_H_
