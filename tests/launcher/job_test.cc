#include "tessera/launcher/job.h"

#include <gtest/gtest.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <string>

namespace tessera::launcher {
namespace {

std::map<std::string, std::string> EnvOf(const ProcessSpec& spec) {
  std::map<std::string, std::string> env;
  for (const auto& [k, v] : spec.env) env[k] = v;
  return env;
}

HostEntry Host(std::string name, int slots) {
  HostEntry h;
  h.host = std::move(name);
  h.slots = slots;
  return h;
}

JobOptions TwoByThree() {
  JobOptions o;
  o.num_workers = 3;
  o.num_servers = 2;
  o.program = {"./train", "--epochs", "2"};
  o.server_bin = "/opt/tessera/bin/tessera-server";
  o.job_secret = "s3cret";
  o.log_level = "debug";
  o.working_dir = "/home/me/job dir";
  return o;
}

TEST(JobTest, CoordinatorCommandLineAndEnvironment) {
  ProcessSpec c = CoordinatorSpec(TwoByThree(), "/tmp/x/coordinator.endpoint");
  EXPECT_EQ(c.role, Role::kCoordinator);
  EXPECT_EQ(c.Label(), "coordinator");
  EXPECT_TRUE(c.host.empty());
  const std::vector<std::string> expected = {
      "/opt/tessera/bin/tessera-server", "--role", "coordinator", "--listen",
      "tcp://127.0.0.1:0", "--endpoint-file", "/tmp/x/coordinator.endpoint", "--num-servers", "2",
      "--num-workers", "3"};
  EXPECT_EQ(c.argv, expected);
  auto env = EnvOf(c);
  EXPECT_EQ(env["TESSERA_ROLE"], "coordinator");
  EXPECT_EQ(env["TESSERA_RANK"], "0");
  EXPECT_EQ(env["TESSERA_NUM_WORKERS"], "3");
  EXPECT_EQ(env["TESSERA_NUM_SERVERS"], "2");
  EXPECT_EQ(env["TESSERA_COORDINATOR"], "tcp://127.0.0.1:0");
  EXPECT_EQ(env["TESSERA_BIND_HOST"], "127.0.0.1");
  EXPECT_EQ(env["TESSERA_JOB_SECRET"], "s3cret");
  EXPECT_EQ(env["TESSERA_LOG_LEVEL"], "debug");
  EXPECT_EQ(env["TESSERA_ENDPOINT_FILE"], "/tmp/x/coordinator.endpoint");
  EXPECT_EQ(env["TESSERA_HEARTBEAT_TIMEOUT"], "10");  // the default
}

TEST(JobTest, EveryProcessGetsTheHeartbeatTimeout) {
  JobOptions o = TwoByThree();
  o.heartbeat_timeout = std::chrono::milliseconds(2500);
  EXPECT_EQ(EnvOf(CoordinatorSpec(o, "/tmp/x/e"))["TESSERA_HEARTBEAT_TIMEOUT"], "2.5");
  for (const ProcessSpec& s : MemberSpecs(o, "tcp://127.0.0.1:41233")) {
    EXPECT_EQ(EnvOf(s)["TESSERA_HEARTBEAT_TIMEOUT"], "2.5") << s.Label();
  }
  o.heartbeat_timeout = std::chrono::milliseconds(0);
  EXPECT_EQ(EnvOf(MemberSpecs(o, "tcp://127.0.0.1:41233")[0])["TESSERA_HEARTBEAT_TIMEOUT"], "0");
}

TEST(JobTest, LocalMembersAreServersThenWorkers) {
  std::vector<ProcessSpec> specs = MemberSpecs(TwoByThree(), "tcp://127.0.0.1:41233");
  ASSERT_EQ(specs.size(), 5u);
  EXPECT_EQ(specs[0].Label(), "server 0");
  EXPECT_EQ(specs[1].Label(), "server 1");
  EXPECT_EQ(specs[2].Label(), "worker 0");
  EXPECT_EQ(specs[4].Label(), "worker 2");
  const std::vector<std::string> server1 = {"/opt/tessera/bin/tessera-server", "--role", "server",
                                            "--rank", "1", "--coordinator",
                                            "tcp://127.0.0.1:41233"};
  EXPECT_EQ(specs[1].argv, server1);
  const std::vector<std::string> program = {"./train", "--epochs", "2"};
  EXPECT_EQ(specs[3].argv, program);
  for (const ProcessSpec& s : specs) {
    EXPECT_TRUE(s.host.empty());
    auto env = EnvOf(s);
    EXPECT_EQ(env["TESSERA_ROLE"], std::string(RoleName(s.role)));
    EXPECT_EQ(env["TESSERA_RANK"], std::to_string(s.rank));
    EXPECT_EQ(env["TESSERA_COORDINATOR"], "tcp://127.0.0.1:41233");
    EXPECT_EQ(env["TESSERA_BIND_HOST"], "127.0.0.1");
    EXPECT_EQ(env["TESSERA_JOB_SECRET"], "s3cret");
    EXPECT_EQ(env.count("TESSERA_ENDPOINT_FILE"), 0u);
  }
}

TEST(JobTest, HostsTakeServersRoundRobinAndWorkersBySlot) {
  JobOptions o = TwoByThree();
  o.num_workers = 5;
  o.hosts = {Host("a", 2), Host("b", 1)};
  o.bind_host = "10.0.0.1";
  std::vector<ProcessSpec> specs = MemberSpecs(o, "tcp://10.0.0.1:1");
  std::vector<std::string> hosts;
  for (const ProcessSpec& s : specs) hosts.push_back(s.host);
  // servers: a, b; workers: a, a, b, then wrap around: a, a.
  const std::vector<std::string> expected = {"a", "b", "a", "a", "b", "a", "a"};
  EXPECT_EQ(hosts, expected);
  EXPECT_EQ(EnvOf(specs[1])["TESSERA_BIND_HOST"], "b");
  // With an address, processes bind to it; ssh still gets the name.
  o.hosts[1].address = "10.0.0.2";
  specs = MemberSpecs(o, "tcp://10.0.0.1:1");
  EXPECT_EQ(specs[1].host, "b");
  EXPECT_EQ(EnvOf(specs[1])["TESSERA_BIND_HOST"], "10.0.0.2");
  EXPECT_EQ(EnvOf(specs[4])["TESSERA_BIND_HOST"], "10.0.0.2");
  EXPECT_EQ(EnvOf(specs[2])["TESSERA_BIND_HOST"], "a");
}

TEST(JobTest, RemoteLaunchUsesSshAndKeepsTheSecretOffTheCommandLine) {
  JobOptions o = TwoByThree();
  o.hosts = {Host("localhost", 1)};
  o.ssh_command = {"ssh", "-o", "BatchMode=yes"};
  o.extra_env = {{"OMP_NUM_THREADS", "2"}};
  std::vector<ProcessSpec> specs = MemberSpecs(o, "tcp://127.0.0.1:9");
  LaunchCommand cmd = MakeLaunchCommand(specs[2], o);
  ASSERT_EQ(cmd.argv.size(), 5u);
  EXPECT_EQ(cmd.argv[0], "ssh");
  EXPECT_EQ(cmd.argv[3], "localhost");
  const std::string& line = cmd.argv[4];
  EXPECT_EQ(line.find("s3cret"), std::string::npos) << line;
  EXPECT_TRUE(cmd.stdin_pipe);
  EXPECT_EQ(cmd.stdin_data, "s3cret\n");
  EXPECT_NE(line.find("IFS= read -r TESSERA_JOB_SECRET; export TESSERA_JOB_SECRET;"),
            std::string::npos);
  EXPECT_NE(line.find("cd '/home/me/job dir' || exit 127; exec 3<&0; setsid env "),
            std::string::npos)
      << line;
  EXPECT_NE(line.find("(trap '' HUP INT TERM; cat >/dev/null; kill -TERM -$p 2>/dev/null && "
                      "{ sleep 3; kill -KILL -$p 2>/dev/null; }) <&3"),
            std::string::npos)
      << line;
  EXPECT_NE(line.find(" OMP_NUM_THREADS=2 "), std::string::npos) << line;
  EXPECT_NE(line.find(" TESSERA_ROLE=worker TESSERA_RANK=0 "), std::string::npos) << line;
  EXPECT_NE(line.find(" TESSERA_BIND_HOST=localhost "), std::string::npos) << line;
  EXPECT_NE(line.find(" ./train --epochs 2 3<&- & p=$!;"), std::string::npos) << line;

  // Local processes get their argv and env directly.
  o.hosts.clear();
  LaunchCommand local = MakeLaunchCommand(MemberSpecs(o, "tcp://127.0.0.1:9")[2], o);
  EXPECT_EQ(local.argv[0], "./train");
  EXPECT_FALSE(local.stdin_pipe);
}

TEST(JobTest, ShellQuoteSurvivesARealShell) {
  EXPECT_EQ(ShellQuote("plain-word_1.2/x=y:z"), "plain-word_1.2/x=y:z");
  EXPECT_EQ(ShellQuote(""), "''");
  EXPECT_EQ(ShellQuote("it's"), "'it'\\''s'");
  const std::string tricky = "a b'c\"d$HOME`e`\\f;g|h*";
  std::string command = "printf %s " + ShellQuote(tricky);
  FILE* p = popen(command.c_str(), "r");
  ASSERT_NE(p, nullptr);
  char buf[256] = {0};
  size_t n = fread(buf, 1, sizeof(buf) - 1, p);
  pclose(p);
  EXPECT_EQ(std::string(buf, n), tricky);
}

TEST(JobTest, SplitCommandAndLoopback) {
  const std::vector<std::string> expected = {"ssh", "-o", "BatchMode=yes"};
  EXPECT_EQ(SplitCommand("  ssh -o\tBatchMode=yes "), expected);
  EXPECT_TRUE(IsLoopbackHost("localhost"));
  EXPECT_TRUE(IsLoopbackHost("127.0.0.1"));
  EXPECT_TRUE(IsLoopbackHost("127.1.2.3"));
  EXPECT_TRUE(IsLoopbackHost("::1"));
  EXPECT_FALSE(IsLoopbackHost("10.0.0.1"));
  EXPECT_FALSE(IsLoopbackHost("node1"));
}

TEST(JobTest, ValidationNamesTheProblem) {
  JobOptions o = TwoByThree();
  EXPECT_TRUE(ValidateJobOptions(o).ok());
  o.num_workers = 0;
  EXPECT_NE(ValidateJobOptions(o).message().find("workers (-w) must be at least 1"),
            std::string::npos);
  o = TwoByThree();
  o.num_servers = -1;
  EXPECT_NE(ValidateJobOptions(o).message().find("servers (-s) must be at least 1"),
            std::string::npos);
  o = TwoByThree();
  o.program.clear();
  EXPECT_FALSE(ValidateJobOptions(o).ok());
  o = TwoByThree();
  o.hosts = {Host("localhost", 1), Host("node7", 1)};
  Status remote_on_loopback = ValidateJobOptions(o);
  EXPECT_NE(remote_on_loopback.message().find("host 'node7' is not this machine"),
            std::string::npos)
      << remote_on_loopback.message();
  o.bind_host = "10.0.0.1";
  EXPECT_TRUE(ValidateJobOptions(o).ok());
}

TEST(JobTest, ResolveExecutable) {
  Result<std::string> sh = ResolveExecutable("sh");
  ASSERT_TRUE(sh.ok()) << sh.status().ToString();
  EXPECT_EQ(sh->back(), 'h');
  EXPECT_EQ(ResolveExecutable("no-such-program-tessera").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(ResolveExecutable("/no/such/file").status().code(), StatusCode::kNotFound);

  char dir[] = "/tmp/tessera-resolve-test-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  std::string plain = std::string(dir) + "/data.txt";
  std::ofstream(plain) << "not a program\n";
  Result<std::string> not_exec = ResolveExecutable(plain);
  ASSERT_FALSE(not_exec.ok());
  EXPECT_NE(not_exec.status().message().find("not executable"), std::string::npos);
  EXPECT_NE(ResolveExecutable(dir).status().message().find("not a regular file"),
            std::string::npos);
  chmod(plain.c_str(), 0755);
  EXPECT_TRUE(ResolveExecutable(plain).ok());
  unlink(plain.c_str());
  rmdir(dir);
}

TEST(JobTest, SecretsAreFreshHex) {
  Result<std::string> a = GenerateJobSecret();
  Result<std::string> b = GenerateJobSecret();
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->size(), 32u);
  EXPECT_TRUE(std::all_of(a->begin(), a->end(), [](char c) { return isxdigit(c); }));
  EXPECT_NE(*a, *b);
}

}  // namespace
}  // namespace tessera::launcher

namespace tessera::launcher {
namespace {

// Processes bound to a wildcard get TESSERA_ADVERTISE_HOST; remote processes bound to their
// host's address (and processes bound to a specific address) do not need it.
TEST(JobTest, WildcardBindPassesTheAdvertisedAddress) {
  JobOptions o = TwoByThree();
  o.bind_host = "0.0.0.0";
  o.advertise_host = "10.0.0.1";
  EXPECT_EQ(EnvOf(CoordinatorSpec(o, "/tmp/e"))["TESSERA_ADVERTISE_HOST"], "10.0.0.1");
  for (const ProcessSpec& spec : MemberSpecs(o, "tcp://10.0.0.1:5000")) {
    EXPECT_EQ(EnvOf(spec)["TESSERA_ADVERTISE_HOST"], "10.0.0.1") << spec.Label();
  }
  HostEntry remote = Host("node2", 3);
  remote.address = "10.0.0.2";
  o.hosts = {remote};
  for (const ProcessSpec& spec : MemberSpecs(o, "tcp://10.0.0.1:5000")) {
    EXPECT_EQ(EnvOf(spec).count("TESSERA_ADVERTISE_HOST"), 0u) << spec.Label();
    EXPECT_EQ(EnvOf(spec)["TESSERA_BIND_HOST"], "10.0.0.2") << spec.Label();
  }
  o.hosts.clear();
  o.bind_host = "10.0.0.1";
  EXPECT_EQ(EnvOf(CoordinatorSpec(o, "/tmp/e")).count("TESSERA_ADVERTISE_HOST"), 0u);
  o.bind_host = "0.0.0.0";
  o.advertise_host = "0.0.0.0";
  EXPECT_FALSE(ValidateJobOptions(o).ok());
  EXPECT_TRUE(IsWildcardHost("::"));
  EXPECT_TRUE(IsWildcardHost("*"));
  EXPECT_FALSE(IsWildcardHost("10.0.0.1"));
}

}  // namespace
}  // namespace tessera::launcher
