// The distributed executor end to end: dist_kernels (every strategy tessc emits, a relaxed
// array, an accumulator) under `tessera run` with real coordinator, server and worker processes
// over tcp loopback must write exactly what the serial run writes, on every worker.
#include <gtest/gtest.h>

#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "job_test_base.h"

namespace {

class DistributedExecutorTest : public tessera::testing::JobTest {
 protected:
  // The serial reference (computed once per test).
  std::string Serial() {
    EXPECT_EQ(RunProcess("serial", {DIST_KERNELS_BINARY, dir_ + "/serial"}, {}), 0)
        << Read(dir_ + "/log.serial");
    return Read(dir_ + "/serial.0");
  }

  // `tessera run -w workers -s servers -- dist_kernels` with `env`; every worker's output must
  // equal `expected`.
  void ExpectDistributedEquals(const std::string& expected, int workers, int servers,
                               const std::map<std::string, std::string>& env) {
    const std::string name =
        "w" + std::to_string(workers) + "s" + std::to_string(servers) + "t" +
        (env.count("TESSERA_THREADS") ? env.at("TESSERA_THREADS") : "1") + "d" +
        (env.count("TESSERA_PIPELINE_DEPTH") ? env.at("TESSERA_PIPELINE_DEPTH") : "2");
    const int rc =
        RunProcess(name,
                   {TESSERA_LAUNCHER_BINARY, "run", "-w", std::to_string(workers), "-s",
                    std::to_string(servers), "--", DIST_KERNELS_BINARY, dir_ + "/" + name},
                   env);
    ASSERT_EQ(rc, 0) << Read(dir_ + "/log." + name);
    int64_t ran = 0;
    for (int r = 0; r < workers; ++r) {
      EXPECT_EQ(Read(dir_ + "/" + name + "." + std::to_string(r)), expected)
          << "worker " << r << " of " << name << "\n"
          << Read(dir_ + "/log." + name);
      // The accumulator loop (1000 iterations) is split, not run whole by every worker.
      const int64_t share =
          std::stoll("0" + Read(dir_ + "/" + name + ".share." + std::to_string(r)));
      EXPECT_GT(share, 0) << "worker " << r << " ran none of the loop";
      EXPECT_LT(share, 1000) << "worker " << r << " ran all of the loop";
      ran += share;
    }
    EXPECT_EQ(ran, 1000) << "every iteration runs exactly once across the workers";
  }
};

TEST_F(DistributedExecutorTest, SerialReferenceRunsAlone) {
  const std::string serial = Serial();
  EXPECT_NE(serial.find("wavefront"), std::string::npos);
  EXPECT_NE(serial.find("accumulator 1 "), std::string::npos);
}

// Small wavefronts would run whole on every worker; 8 makes the executor split them.
const std::map<std::string, std::string> kSplitWaves = {{"TESSERA_MIN_PARALLEL_WAVEFRONT", "8"}};

TEST_F(DistributedExecutorTest, TwoWorkersGiveTheSerialResult) {
  ExpectDistributedEquals(Serial(), 2, 1, kSplitWaves);
  // The 2d kernel's names are bound to their arrays (so its rotating and local arrays travel
  // whole, per step and after the loop, instead of as diffs against snapshots).
  const std::string log = Read(dir_ + "/log.w2s1t1d2");
  EXPECT_NE(log.find("bound 'R' = array #"), std::string::npos) << log;
  EXPECT_NE(log.find("'B' = array #"), std::string::npos) << log;
  // The loop tessc runs serially says so (with tessc's reason), not that it lacks a build step.
  EXPECT_NE(log.find("has no schedule: tessc chose to run it serially ('total' writes 'total'"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("; every worker runs all of it"), std::string::npos) << log;
  EXPECT_EQ(log.find("not built with tessera_add_program"), std::string::npos) << log;
}

TEST_F(DistributedExecutorTest, ThreeWorkersTwoServersGiveTheSerialResult) {
  ExpectDistributedEquals(Serial(), 3, 2, kSplitWaves);
}

TEST_F(DistributedExecutorTest, FourWorkersGiveTheSerialResult) {
  ExpectDistributedEquals(Serial(), 4, 1, kSplitWaves);
}

// Two threads per worker: the data-parallel loop that writes plain arrays runs on one thread of
// each worker (no lock_free), so even its shared arrays come out as the serial run's.
TEST_F(DistributedExecutorTest, TwoWorkersWithTwoThreadsEachGiveTheSerialResult) {
  auto env = kSplitWaves;
  env["TESSERA_THREADS"] = "2";
  const std::string serial = Serial();
  ASSERT_NE(serial.find("data_parallel_shared "), std::string::npos);
  ExpectDistributedEquals(serial, 2, 1, env);
}

TEST_F(DistributedExecutorTest, PipelineDepthsOneAndThreeGiveTheSerialResult) {
  const std::string serial = Serial();
  for (const char* depth : {"1", "3"}) {
    auto env = kSplitWaves;
    env["TESSERA_PIPELINE_DEPTH"] = depth;
    ExpectDistributedEquals(serial, 2, 1, env);
  }
}

TEST_F(DistributedExecutorTest, WholeSmallWavefrontsOnEveryWorkerGiveTheSerialResult) {
  ExpectDistributedEquals(Serial(), 2, 1, {});
}

}  // namespace
