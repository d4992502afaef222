// A real job (`tessera run -w 2 -s 1`, separate processes over tcp loopback) attacked by a
// stranger -- a process without the job secret -- on every port it has: the coordinator, the
// server, and each worker's peer-mesh inbox. The stranger sends an HTTP health check, garbage,
// 16 MiB of bytes, a ZeroMQ frame claiming 1 GiB, and well-formed ZeroMQ messages without and with
// a wrong secret: forged peer-mesh patches claiming to come from worker 1, a forged update batch
// claiming to come from worker 0, barriers. Every handshake must fail, and the job must finish with
// exactly the serial program's results.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>
#include <zmq.hpp>

#include "tessera/proto/tessera.capnp.h"
#include "tessera/transport/message.h"
#include "tests/support/stranger.h"

namespace tessera::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

std::string Read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string Bytes(OutgoingMessage& msg) {
  const zmq::message_t frame = msg.ToFrame();
  return std::string(static_cast<const char*>(frame.data()), frame.size());
}

// A forged peer-mesh message: worker 1 "sending" an additive patch of array 0.
std::string ForgedPeerMessage() {
  OutgoingMessage msg(1, 0);
  auto peer = msg.envelope().getBody().initPeer();
  peer.setTag(1);
  peer.setStep(0);
  auto patch = peer.initPatches(1)[0];
  patch.setArray(0);
  patch.setAdditive(true);
  patch.setElementBytes(8);
  auto runs = patch.initRuns(2);
  runs.set(0, 0);
  runs.set(1, 4);
  patch.setValues(kj::heapArray<kj::byte>(32).asPtr());
  return Bytes(msg);
}

// A forged update batch: worker 0's first batch, adding to row 0 of table 0.
std::string ForgedUpdate() {
  OutgoingMessage msg(0, 0);
  auto update = msg.envelope().getBody().initUpdate();
  update.setSeq(1);
  auto row = update.initRows(1)[0];
  row.setTable(0);
  row.setRow(0);
  row.initValues().initF64(1).set(0, 1e9);
  return Bytes(msg);
}

std::string ForgedBarrier() {
  OutgoingMessage msg(0, 1);
  msg.envelope().getBody().initBarrier().setId(1);
  return Bytes(msg);
}

class JobUnderAttackTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/tessera-security-test-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    // A test that stopped early (a failed assertion) stops the job it started, so that its output
    // reader ends and the test fails instead of terminating on a joinable thread.
    if (job_ > 0) {
      kill(job_, SIGTERM);
      waitpid(job_, nullptr, 0);
    }
    if (reader_.joinable()) reader_.join();
    std::filesystem::remove_all(dir_);
  }

  // Starts `args` with stdout and stderr into a pipe read by a thread of this test.
  pid_t Start(const std::vector<std::string>& args) {
    int fds[2];
    EXPECT_EQ(pipe(fds), 0);
    const pid_t pid = fork();
    if (pid == 0) {
      dup2(fds[1], 1);
      dup2(fds[1], 2);
      close(fds[0]);
      close(fds[1]);
      for (const char* v : {"TESSERA_ROLE", "TESSERA_COORDINATOR", "TESSERA_RANK",
                            "TESSERA_NUM_WORKERS", "TESSERA_THREADS", "TESSERA_JOB_SECRET"}) {
        unsetenv(v);
      }
      std::vector<char*> argv;
      for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
      argv.push_back(nullptr);
      execv(argv[0], argv.data());
      _exit(127);
    }
    close(fds[1]);
    job_ = pid;
    reader_ = std::thread([this, fd = fds[0]] {
      FILE* in = fdopen(fd, "r");
      char* line = nullptr;
      size_t cap = 0;
      while (getline(&line, &cap, in) > 0) {
        std::lock_guard lock(mu_);
        output_ += line;
        cv_.notify_all();
      }
      free(line);
      fclose(in);
      std::lock_guard lock(mu_);
      output_done_ = true;
      cv_.notify_all();
    });
    return pid;
  }

  // Waits (at most 120 s, a failure bound) until the output matches `pattern`; its first group.
  std::string AwaitOutput(const std::string& pattern) {
    const std::regex re(pattern);
    std::unique_lock lock(mu_);
    std::smatch m;
    cv_.wait_for(lock, seconds(120),
                 [&] { return std::regex_search(output_, m, re) || output_done_; });
    return std::regex_search(output_, m, re) ? m[1].str() : "";
  }

  std::string Output() {
    std::lock_guard lock(mu_);
    return output_;
  }

  std::string dir_;
  pid_t job_ = -1;  // the job Start() started, until the test has waited for it
  std::thread reader_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::string output_;
  bool output_done_ = false;
};

TEST_F(JobUnderAttackTest, StrangersOnEveryPortChangeNothing) {
  const std::string serial_log = dir_ + "/serial.log";
  ASSERT_EQ(std::system((std::string(GUARDED_KERNELS_BINARY) + " " + dir_ + "/serial > " +
                         serial_log + " 2>&1")
                            .c_str()),
            0)
      << Read(serial_log);
  const std::string expected = Read(dir_ + "/serial.0");
  ASSERT_NE(expected.find("matrix_update_2d"), std::string::npos);

  for (int r = 0; r < 2; ++r) {
    ASSERT_EQ(mkfifo((dir_ + "/pause." + std::to_string(r)).c_str(), 0600), 0);
  }
  const pid_t job = Start({TESSERA_LAUNCHER_BINARY, "run", "-w", "2", "-s", "1", "--log-level",
                           "debug", "--", GUARDED_KERNELS_BINARY, dir_ + "/job", dir_ + "/pause"});
  const std::string coordinator = AwaitOutput(R"(\[coordinator\].*listening on (tcp://\S+))");
  const std::string server = AwaitOutput(R"(server 0 registered at (tcp://\S+))");
  const std::string peers = AwaitOutput(R"(peer mesh endpoints: (tcp://\S+ tcp://\S+))");
  ASSERT_FALSE(coordinator.empty() || server.empty() || peers.empty()) << Output();
  std::vector<std::string> inboxes;
  std::istringstream split(peers);
  for (std::string ep; split >> ep;) inboxes.push_back(ep);
  ASSERT_EQ(inboxes.size(), 2u);

  // Every worker now waits at its pause FIFO, so the whole attack lands while the job runs.
  zmq::context_t context;
  struct Target {
    std::string endpoint;
    zmq::socket_type type;
    std::string forged;
  };
  std::vector<Target> targets = {{coordinator, zmq::socket_type::dealer, ForgedBarrier()},
                                 {server, zmq::socket_type::dealer, ForgedUpdate()}};
  for (const std::string& inbox : inboxes) {
    targets.push_back({inbox, zmq::socket_type::push, ForgedPeerMessage()});
  }
  for (const Target& t : targets) {
    SCOPED_TRACE(t.endpoint);
    EXPECT_TRUE(SendRawTcp(t.endpoint, HttpHealthCheck()));
    EXPECT_TRUE(SendRawTcp(t.endpoint, std::string(300, '\xff')));
    SendRawTcp(t.endpoint, std::string(16 << 20, 'x'));  // refused early: may not all be sent
    // A frame claiming 1 GiB, over every socket's bound: its connection is closed unread.
    EXPECT_TRUE(SendRawTcp(t.endpoint, OversizedZmtpFrame("CURVE", uint64_t{1} << 30)));
    EXPECT_EQ(ConnectAndSend(context, t.endpoint, "", t.forged, t.type), Handshake::kFailed);
    EXPECT_EQ(ConnectAndSend(context, t.endpoint, "not-the-job-secret", t.forged, t.type),
              Handshake::kFailed);
  }

  // While the job computes, the stranger keeps at it (a few rounds per second).
  std::atomic<bool> done{false};
  std::thread hammer([&] {
    while (!done.load()) {
      for (const Target& t : targets) {
        SendRawTcp(t.endpoint, HttpHealthCheck());
        ConnectAndSend(context, t.endpoint, "", t.forged, t.type, milliseconds(200));
      }
      std::this_thread::sleep_for(milliseconds(100));  // a rate, not a synchronization
    }
  });
  for (int r = 0; r < 2; ++r) {
    std::ofstream(dir_ + "/pause." + std::to_string(r)) << "go\n";
  }
  int status = 0;
  waitpid(job, &status, 0);
  job_ = -1;
  done = true;
  hammer.join();
  reader_.join();
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << Output();
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(Read(dir_ + "/job." + std::to_string(r)), expected) << "worker " << r;
  }
  // Every receiver logged the refusals and went on.
  const std::string out = Output();
  EXPECT_NE(out.find("coordinator: refused a connection"), std::string::npos) << out;
  EXPECT_NE(out.find("server 0: refused a connection"), std::string::npos) << out;
  // And the connections they closed without a message (oversized frames, garbage), naming the
  // socket and its bound.
  EXPECT_NE(out.find("server 0 " + server + ": a connection on which no whole message arrived"),
            std::string::npos)
      << out;
  for (const std::string& inbox : inboxes) {
    EXPECT_NE(out.find("peer-mesh inbox " + inbox + ": a connection that sent no hello"),
              std::string::npos)
        << inbox;
  }
  for (int r = 0; r < 2; ++r) {
    const std::regex worker_refused("\\[worker " + std::to_string(r) +
                                    "\\].*peer-mesh inbox: refused a connection");
    EXPECT_TRUE(std::regex_search(out, worker_refused)) << "worker " << r;
  }
}

}  // namespace
}  // namespace tessera::testing
