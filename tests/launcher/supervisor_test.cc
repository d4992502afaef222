// RunJob in-process, with the fake programs from fakes/ and the cancel seam the driver's signal
// handler uses.
#include "tessera/launcher/supervisor.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "tessera_harness.h"

namespace tessera::launcher {
namespace {

using Clock = std::chrono::steady_clock;
const std::string kFakes = TESSERA_LAUNCHER_FAKES_DIR;

class SupervisorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/tessera-supervisor-test-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    out_fd_ = ::open((dir_ + "/out").c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    err_fd_ = ::open((dir_ + "/err").c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    ASSERT_GE(out_fd_, 0);
    ASSERT_GE(err_fd_, 0);
  }
  void TearDown() override {
    ::close(out_fd_);
    ::close(err_fd_);
    std::string cmd = "rm -rf '" + dir_ + "'";
    [[maybe_unused]] int rc = std::system(cmd.c_str());
  }

  RunOptions Options(int workers, std::vector<std::string> behaviours) {
    RunOptions o;
    o.job.num_workers = workers;
    o.job.num_servers = 1;
    o.job.program = {kFakes + "/fake_worker.sh"};
    for (auto& b : behaviours) o.job.program.push_back(b);
    o.job.server_bin = kFakes + "/fake_server.sh";
    o.job.job_secret = "test-secret";
    o.job.extra_env = {{"FAKE_LOG_DIR", dir_}};
    o.grace_period = std::chrono::milliseconds(2000);
    o.startup_timeout = std::chrono::milliseconds(10000);
    return o;
  }

  std::string Slurp(const std::string& name) {
    std::ifstream in(dir_ + "/" + name);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }

  std::string dir_;
  int out_fd_ = -1;
  int err_fd_ = -1;
};

// A worker that exits 76 stopped only because another worker left the program early: the job's
// status is that other worker's own, when it exits after it; 76 only when the other exited 0, or
// did not exit within the wait (then it is stopped). (The launcher's report naming the worker is
// checked on real jobs, tests/launcher_faults.)
TEST_F(SupervisorTest, PeerLeftExitIsHeldForTheEarlyWorkersOwnStatus) {
  RunIo io{out_fd_, err_fd_, -1};
  {
    RunOptions o = Options(2, {"after:1:exit:3", "exit:76"});
    o.job.heartbeat_timeout = std::chrono::milliseconds(0);
    Result<int> code = RunJob(o, io);
    ASSERT_TRUE(code.ok()) << code.status().ToString();
    EXPECT_EQ(*code, 3) << Slurp("err");
  }
  std::remove((dir_ + "/exiting-1").c_str());
  {
    RunOptions o = Options(2, {"after:1:exit:0", "exit:76"});
    o.job.heartbeat_timeout = std::chrono::milliseconds(0);
    Result<int> code = RunJob(o, io);
    ASSERT_TRUE(code.ok()) << code.status().ToString();
    EXPECT_EQ(*code, 76) << Slurp("err");
  }
  {
    RunOptions o = Options(2, {"hang", "exit:76"});
    o.job.heartbeat_timeout = std::chrono::milliseconds(0);
    o.grace_period = std::chrono::milliseconds(500);  // also the wait for worker 0's own status
    const auto start = Clock::now();
    Result<int> code = RunJob(o, io);
    ASSERT_TRUE(code.ok()) << code.status().ToString();
    EXPECT_EQ(*code, 76) << Slurp("err");
    EXPECT_LT(Clock::now() - start, std::chrono::seconds(8));
  }
}

TEST_F(SupervisorTest, StreamsPrefixedLinesToTheGivenDescriptors) {
  RunIo io{out_fd_, err_fd_, -1};
  Result<int> code = RunJob(Options(2, {"print:2", "nonl"}), io);
  ASSERT_TRUE(code.ok()) << code.status().ToString();
  EXPECT_EQ(*code, 0);
  std::string out = Slurp("out");
  EXPECT_EQ(testing::LinesOf(out, "[worker 0] "),
            "[worker 0] line 1 of worker 0\n[worker 0] line 2 of worker 0\n")
      << out;
  EXPECT_NE(out.find("[worker 1] no newline at the end\n"), std::string::npos) << out;
  EXPECT_NE(out.find("[server 0] server 0 up\n"), std::string::npos) << out;
  EXPECT_NE(Slurp("err").find("[worker 0] a warning from worker 0\n"), std::string::npos);
}

TEST_F(SupervisorTest, CancelFdStopsEverythingWithTheSignalsExitCode) {
  int cancel[2];
  ASSERT_EQ(::pipe(cancel), 0);
  RunIo io{out_fd_, err_fd_, cancel[0]};
  // Once both workers are up (their pid files exist), "press Ctrl-C".
  std::thread interrupter([&] {
    const auto deadline = Clock::now() + std::chrono::seconds(20);
    while (Clock::now() < deadline) {
      if (::access((dir_ + "/hang-0.pid").c_str(), F_OK) == 0 &&
          ::access((dir_ + "/hang-1.pid").c_str(), F_OK) == 0) {
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    unsigned char sig = SIGINT;
    [[maybe_unused]] ssize_t n = ::write(cancel[1], &sig, 1);
  });
  const auto start = Clock::now();
  Result<int> code = RunJob(Options(2, {"hang"}), io);
  const auto elapsed = Clock::now() - start;
  interrupter.join();
  ::close(cancel[0]);
  ::close(cancel[1]);
  ASSERT_TRUE(code.ok()) << code.status().ToString();
  EXPECT_EQ(*code, 128 + SIGINT);
  EXPECT_LT(elapsed, std::chrono::seconds(15));
  for (const char* f : {"hang-0.pid", "hang-1.pid"}) {
    pid_t pid = std::stoi(Slurp(f));
    EXPECT_NE(::kill(pid, 0), 0) << f << ": pid " << pid << " is still alive";
  }
}

TEST_F(SupervisorTest, CoordinatorThatNeverPublishesTimesOut) {
  RunOptions o = Options(1, {"print:1"});
  o.job.extra_env.emplace_back("FAKE_COORDINATOR", "never");
  o.startup_timeout = std::chrono::milliseconds(300);
  RunIo io{out_fd_, err_fd_, -1};
  Result<int> code = RunJob(o, io);
  ASSERT_FALSE(code.ok());
  EXPECT_EQ(code.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(code.status().message().find("did not write its endpoint"), std::string::npos);
}

}  // namespace
}  // namespace tessera::launcher
