// Test harness for running build/bin/tessera as a subprocess: a fixture with a fresh temporary
// directory, bounded waits, and readers for the files the fake programs write. Used by the
// launcher's CLI and end-to-end tests.
#ifndef TESSERA_TESTS_LAUNCHER_TESSERA_HARNESS_H_
#define TESSERA_TESTS_LAUNCHER_TESSERA_HARNESS_H_

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace tessera::launcher::testing {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
using std::chrono::seconds;

struct RunResult {
  int exit_code = -1;
  std::string out;
  std::string err;
  Clock::duration elapsed{};
};

// Alive and not a zombie (an orphaned "remote" process waits as a zombie until init reaps it).
inline bool IsAlive(pid_t pid) {
  if (kill(pid, 0) != 0) return false;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  size_t paren = text.rfind(')');
  return paren == std::string::npos || paren + 2 >= text.size() || text[paren + 2] != 'Z';
}

inline bool Contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

// The lines of `output` that start with `prefix` (e.g. "[worker 1] "), each with its newline, in
// the order printed. Processes print concurrently, so only one process's lines have an order.
inline std::string LinesOf(const std::string& output, const std::string& prefix) {
  std::string picked;
  std::istringstream lines(output);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind(prefix, 0) == 0) picked += line + "\n";
  }
  return picked;
}

// Runs `binary` (the tessera launcher) in a fresh temporary directory, removed afterwards.
class TesseraHarness : public ::testing::Test {
 protected:
  explicit TesseraHarness(std::string binary) : binary_(std::move(binary)) {}

  void SetUp() override {
    char tmpl[] = "/tmp/tessera-cli-test-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    std::string cmd = "rm -rf '" + dir_ + "'";
    [[maybe_unused]] int rc = std::system(cmd.c_str());
  }

  // Starts `tessera ARGS` in dir_ with FAKE_LOG_DIR=dir_ and TMPDIR=dir_ plus `env`, and no
  // inherited Slurm, OpenMPI, TESSERA_ or FAKE_ variables. Output goes to files read by Wait().
  pid_t Start(const std::vector<std::string>& args,
              const std::map<std::string, std::string>& env = {}) {
    ++runs_;
    const std::string out = dir_ + "/stdout." + std::to_string(runs_);
    const std::string err = dir_ + "/stderr." + std::to_string(runs_);
    pid_t pid = fork();
    if (pid == 0) {
      setpgid(0, 0);
      if (chdir(dir_.c_str()) != 0) _exit(126);
      int o = open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      int e = open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      dup2(o, 1);
      dup2(e, 2);
      std::vector<std::string> drop;
      for (char** v = environ; *v != nullptr; ++v) {
        std::string entry(*v);
        if (entry.rfind("SLURM_", 0) == 0 || entry.rfind("OMPI_", 0) == 0 ||
            entry.rfind("TESSERA_", 0) == 0 || entry.rfind("FAKE_", 0) == 0) {
          drop.push_back(entry.substr(0, entry.find('=')));
        }
      }
      for (const std::string& name : drop) unsetenv(name.c_str());
      setenv("FAKE_LOG_DIR", dir_.c_str(), 1);
      setenv("TMPDIR", dir_.c_str(), 1);  // the launcher's scratch directory, even if it is killed
      for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
      std::vector<char*> argv = {const_cast<char*>(binary_.c_str())};
      for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
      argv.push_back(nullptr);
      execv(argv[0], argv.data());
      _exit(127);
    }
    launches_[pid] = Launch{runs_, Clock::now()};
    return pid;
  }

  RunResult Wait(pid_t pid, Clock::duration timeout = seconds(20)) {
    RunResult r;
    const auto deadline = Clock::now() + timeout;
    int status = 0;
    while (true) {
      pid_t w = waitpid(pid, &status, WNOHANG);
      if (w == pid) break;
      if (Clock::now() >= deadline) {
        ADD_FAILURE() << "tessera did not exit within the timeout; killing it";
        kill(-pid, SIGKILL);
        waitpid(pid, &status, 0);
        break;
      }
      std::this_thread::sleep_for(milliseconds(5));
    }
    const Launch run = launches_[pid];
    r.elapsed = Clock::now() - run.start;
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    r.out = Slurp("stdout." + std::to_string(run.index));
    r.err = Slurp("stderr." + std::to_string(run.index));
    return r;
  }

  RunResult Run(const std::vector<std::string>& args,
                const std::map<std::string, std::string>& env = {}) {
    return Wait(Start(args, env));
  }

  std::string Slurp(const std::string& name) const {
    std::ifstream in(dir_ + "/" + name);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }

  // KEY=VALUE lines of a fake's recorded environment.
  std::map<std::string, std::string> EnvFile(const std::string& name) const {
    std::map<std::string, std::string> env;
    std::istringstream in(Slurp(name));
    std::string line;
    while (std::getline(in, line)) {
      size_t eq = line.find('=');
      if (eq != std::string::npos) env[line.substr(0, eq)] = line.substr(eq + 1);
    }
    return env;
  }

  // Waits (bounded) until all `files` exist in dir_.
  bool WaitForFiles(const std::vector<std::string>& files, Clock::duration timeout) {
    const auto deadline = Clock::now() + timeout;
    while (Clock::now() < deadline) {
      bool all = true;
      for (const std::string& f : files) all = all && access((dir_ + "/" + f).c_str(), F_OK) == 0;
      if (all) return true;
      std::this_thread::sleep_for(milliseconds(5));
    }
    return false;
  }

  // The process whose pid is in `pid_file` is gone, or goes within `within` (for "remote"
  // processes, which are not the launcher's children and may take a moment after it exits).
  void ExpectDead(const std::string& pid_file, Clock::duration within = {}) {
    std::string text = Slurp(pid_file);
    ASSERT_FALSE(text.empty()) << pid_file;
    pid_t pid = std::stoi(text);
    const auto deadline = Clock::now() + within;
    while (IsAlive(pid) && Clock::now() < deadline) std::this_thread::sleep_for(milliseconds(10));
    EXPECT_FALSE(IsAlive(pid)) << pid_file << ": process " << pid << " outlived the launcher";
    if (IsAlive(pid)) kill(pid, SIGKILL);  // leave nothing behind
  }

  const std::string binary_;
  std::string dir_;
  int runs_ = 0;  // launches so far; the last one's output is in stdout.<runs_>, stderr.<runs_>
  struct Launch {
    int index = 0;
    Clock::time_point start;
  };
  std::map<pid_t, Launch> launches_;
};

}  // namespace tessera::launcher::testing

#endif  // TESSERA_TESTS_LAUNCHER_TESSERA_HARNESS_H_
