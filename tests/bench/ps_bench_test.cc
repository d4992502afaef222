// ps_bench as a user runs it, on tiny sizes: every round of every configuration is printed and
// summarised, and bad flags are refused with a clear message. The rates themselves are not
// checked (they are measurements, not behaviour), only that each run produced one.
#include <gtest/gtest.h>
#include <sched.h>

#include <algorithm>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/run_command.h"

namespace {

using tessera::testing::RunCommand;
using tessera::testing::RunResult;

// The cells of a markdown table row ("| a | b |" -> {"a", "b"}); empty for any other line.
std::vector<std::string> Cells(const std::string& line) {
  std::vector<std::string> cells;
  if (line.size() < 2 || line.front() != '|') return cells;
  std::stringstream in(line.substr(1));
  std::string cell;
  while (std::getline(in, cell, '|')) {
    const size_t b = cell.find_first_not_of(' '), e = cell.find_last_not_of(' ');
    cells.push_back(b == std::string::npos ? "" : cell.substr(b, e - b + 1));
  }
  return cells;
}

// The data rows of the tables in `output`, split into the per-round table (10 cells) and the
// summary (10 cells too, after a blank line): rows before the first blank line are rounds.
struct Tables {
  std::vector<std::vector<std::string>> rounds, summary;
  std::string output;  // all of it, for failure messages
};
Tables Parse(const std::string& output) {
  Tables t;
  std::stringstream in(output);
  std::string line;
  bool in_summary = false;
  while (std::getline(in, line)) {
    if (line.empty()) in_summary = true;
    auto cells = Cells(line);
    if (cells.empty() || cells[0] == "pattern" || cells[0].starts_with("---")) continue;
    (in_summary ? t.summary : t.rounds).push_back(cells);
  }
  t.output = output;
  return t;
}

// Runs ps_bench with `args`, expecting success, and returns what it printed.
Tables RunBench(const std::string& args) {
  const RunResult r = RunCommand(std::string(TESSERA_PS_BENCH) + " " + args);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  return Parse(r.output);
}

TEST(PsBenchTest, RunsEveryRoundOfEveryConfigurationAndSummarisesThem) {
  const Tables t = RunBench(
      "--widths 16 --clients 1,2 --servers 1 --bytes-per-client 200000 --cache-rows 64 "
      "--window 2,3 --rounds 2");
  // Per client count: inc once (it has no window), get and get-uncached once per window; twice.
  ASSERT_EQ(t.rounds.size(), 20u) << t.output;
  for (const auto& row : t.rounds) {
    ASSERT_EQ(row.size(), 10u) << t.output;
    EXPECT_GT(std::stod(row[5]), 0) << "Tessera rows/s: " << t.output;
    EXPECT_GT(std::stod(row[7]), 0) << "ZeroMQ rows/s: " << t.output;
  }
  ASSERT_EQ(t.summary.size(), 10u) << t.output;
  std::vector<std::string> runs;  // pattern/clients/window
  for (const auto& row : t.summary) {
    ASSERT_EQ(row.size(), 10u) << t.output;
    runs.push_back(row[0] + "/" + row[2] + "/" + row[4]);
    EXPECT_GT(std::stod(row[7]), 0) << "ratio of medians: " << t.output;
    // One ratio per round.
    std::stringstream each(row[9]);
    double ratio;
    int n = 0;
    while (each >> ratio) ++n;
    EXPECT_EQ(n, 2) << row[9];
  }
  EXPECT_EQ(runs, (std::vector<std::string>{"inc/1/-", "inc/2/-", "get/1/2", "get/1/3", "get/2/2",
                                            "get/2/3", "get-uncached/1/2", "get-uncached/1/3",
                                            "get-uncached/2/2", "get-uncached/2/3"}));
}

// get-written fails its run if a row it reads is not what it wrote, so a printed rate says the
// reads returned the written rows (whole batches and, with --per-row-get, row by row).
TEST(PsBenchTest, GetWrittenReadsWhatItWrote) {
  for (const std::string extra : {"", " --per-row-get"}) {
    const Tables t = RunBench(
        "--widths 16 --clients 2 --servers 1,2 --patterns get-written --bytes-per-client 200000 "
        "--cache-rows 64" +
        extra);
    ASSERT_EQ(t.rounds.size(), 2u) << t.output;
    for (const auto& row : t.rounds) {
      EXPECT_EQ(row[0], "get-written") << t.output;
      EXPECT_GT(std::stod(row[5]), 0) << "Tessera rows/s: " << t.output;
      EXPECT_GT(std::stod(row[7]), 0) << "ZeroMQ rows/s: " << t.output;
    }
  }
}

// --client-stats adds each run's CPU per row over all its processes, for both sides and split
// into the clients' and the others': measured (positive), not left at zero, and the parts add
// up. And each client and server process's threads by name with their CPU per row, on both
// sides: ZeroMQ's I/O thread and the thread that does the process's work (the calling thread,
// named after the program, or Tessera's server loop, which has ended by then and is counted as
// "ended") each measured.
TEST(PsBenchTest, ClientStatsPrintCpuPerRowByProcessAndThread) {
  const std::string args =
      "--widths 16 --clients 1 --servers 1 --patterns get --bytes-per-client 200000 "
      "--client-stats";
  const RunResult r = RunCommand(std::string(TESSERA_PS_BENCH) + " " + args);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string label = "all processes' CPU per row (us): Tessera ";
  const size_t at = r.output.find(label);
  ASSERT_NE(at, std::string::npos) << r.output;
  double ours = 0, ours_clients = 0, ours_others = 0;
  double ceiling = 0, ceiling_clients = 0, ceiling_servers = 0;
  ASSERT_EQ(
      std::sscanf(r.output.c_str() + at + label.size(),
                  "%lf (clients %lf, others %lf), ceiling %lf (clients %lf, servers %lf)", &ours,
                  &ours_clients, &ours_others, &ceiling, &ceiling_clients, &ceiling_servers),
      6)
      << r.output;
  for (double v : {ours_clients, ours_others, ceiling_clients, ceiling_servers}) {
    EXPECT_GT(v, 0) << r.output;
  }
  // Each printed with 3 decimals: the parts add up to the whole within their rounding.
  EXPECT_NEAR(ours, ours_clients + ours_others, 0.0015) << r.output;
  EXPECT_NEAR(ceiling, ceiling_clients + ceiling_servers, 0.0015) << r.output;

  for (const std::string threads :
       {"client 0 threads, us per row since start:",
        "ceiling client threads, us per row since start:",
        "server 0 threads, us per row of the run since start:",
        "ceiling server 0 threads, us per row of the run since start:"}) {
    const size_t from = r.output.find(threads);
    ASSERT_NE(from, std::string::npos) << threads << "\n" << r.output;
    const size_t begin = from + threads.size();
    std::istringstream line(r.output.substr(begin, r.output.find('\n', begin) - begin));
    std::string name;
    double per_row = 0;
    double io_thread = 0, worker = 0;
    while (line >> name >> per_row) {
      if (name == "ZMQbg/IO/0") io_thread = per_row;
      if (name == "ps_bench" || name == "ended") worker = std::max(worker, per_row);
    }
    EXPECT_GT(io_thread, 0) << threads << "\n" << r.output;
    EXPECT_GT(worker, 0) << threads << "\n" << r.output;
  }
}

TEST(PsBenchTest, OneRoundPrintsNoSummary) {
  const Tables t =
      RunBench("--widths 16 --clients 1 --servers 1 --patterns inc --bytes-per-client 100000");
  EXPECT_EQ(t.rounds.size(), 1u) << t.output;
  EXPECT_TRUE(t.summary.empty()) << t.output;
}

// --pin split puts the clients on one CPU and the servers on another: it runs where this
// process may use two CPUs, and is refused before anything runs where it may use one.
TEST(PsBenchTest, PinSplitRunsOnTwoCpusOrSaysWhyNot) {
  cpu_set_t mine;
  ASSERT_EQ(sched_getaffinity(0, sizeof(mine), &mine), 0);
  const std::string args =
      "--widths 16 --clients 1 --servers 1 --patterns get-uncached --bytes-per-client 100000 "
      "--pin split";
  if (CPU_COUNT(&mine) >= 2) {
    const Tables t = RunBench(args);
    ASSERT_EQ(t.rounds.size(), 1u) << t.output;
    EXPECT_GT(std::stod(t.rounds[0][5]), 0) << t.output;
    EXPECT_GT(std::stod(t.rounds[0][7]), 0) << t.output;
  } else {
    const RunResult r = RunCommand(std::string(TESSERA_PS_BENCH) + " " + args);
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find("--pin split needs two CPUs"), std::string::npos) << r.output;
    EXPECT_EQ(r.output.find("| get"), std::string::npos) << "ran before refusing: " << r.output;
  }
}

TEST(PsBenchTest, RefusesBadFlagsBeforeRunningAnything) {
  RunResult r = RunCommand(std::string(TESSERA_PS_BENCH) + " --patterns inc,scan");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("unknown pattern 'scan'"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("| inc"), std::string::npos) << "ran before refusing: " << r.output;

  r = RunCommand(std::string(TESSERA_PS_BENCH) + " --rounds 0");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("--rounds"), std::string::npos) << r.output;

  // Lists: each element is checked, and a bad one names its flag.
  for (const std::string bad :
       {"--window 0", "--window 4,0", "--window 4,x", "--widths x", "--widths 16,0", "--clients 0",
        "--clients 1,-2", "--servers 1,x", "--servers 65"}) {
    r = RunCommand(std::string(TESSERA_PS_BENCH) + " " + bad);
    EXPECT_NE(r.exit_code, 0) << bad;
    const std::string flag = bad.substr(0, bad.find(' '));
    EXPECT_NE(r.output.find(flag), std::string::npos) << bad << ": " << r.output;
    EXPECT_EQ(r.output.find("| "), std::string::npos) << "ran before refusing: " << r.output;
  }

  r = RunCommand(std::string(TESSERA_PS_BENCH) + " --pin cores");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("--pin"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("| inc"), std::string::npos) << "ran before refusing: " << r.output;
}

}  // namespace
