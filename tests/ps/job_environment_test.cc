#include "tessera/client/job_environment.h"

#include <gtest/gtest.h>
#include <stdlib.h>

namespace tessera {
namespace {

// The variables are process-wide, so each test sets all it needs and clears them after.
class JobEnvironmentTest : public ::testing::Test {
 protected:
  void TearDown() override {
    for (const char* v : {"TESSERA_COORDINATOR", "TESSERA_ROLE", "TESSERA_RANK",
                          "TESSERA_NUM_WORKERS", "TESSERA_NUM_SERVERS", "TESSERA_JOB_SECRET",
                          "TESSERA_COMM_POLICY", "TESSERA_COMM_BYTES_PER_SECOND",
                          "TESSERA_CACHE_ROWS"}) {
      unsetenv(v);
    }
  }
  void SetJob(const char* rank, const char* workers) {
    setenv("TESSERA_COORDINATOR", "tcp://127.0.0.1:5555", 1);
    setenv("TESSERA_ROLE", "worker", 1);
    setenv("TESSERA_RANK", rank, 1);
    setenv("TESSERA_NUM_WORKERS", workers, 1);
    setenv("TESSERA_NUM_SERVERS", "2", 1);
    setenv("TESSERA_JOB_SECRET", "abc", 1);
  }
};

TEST_F(JobEnvironmentTest, NotLaunchedMeansNoJob) {
  auto job = JobEnvironmentFromEnv();
  ASSERT_TRUE(job.ok());
  EXPECT_FALSE(job->has_value());
}

TEST_F(JobEnvironmentTest, ReadsTheLaunchersVariables) {
  SetJob("1", "3");
  auto job = JobEnvironmentFromEnv();
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  ASSERT_TRUE(job->has_value());
  EXPECT_EQ((*job)->rank, 1);
  EXPECT_EQ((*job)->num_workers, 3);
  EXPECT_EQ((*job)->num_servers, 2);
  EXPECT_EQ((*job)->client.coordinator, "tcp://127.0.0.1:5555");
  EXPECT_EQ((*job)->client.secret, "abc");
  EXPECT_EQ((*job)->client.rank, 1);
}

TEST_F(JobEnvironmentTest, MalformedVariablesAreClearErrors) {
  SetJob("x1", "3");
  auto bad_rank = JobEnvironmentFromEnv();
  EXPECT_EQ(bad_rank.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad_rank.status().message().find("TESSERA_RANK"), std::string::npos);
  SetJob("3", "3");
  EXPECT_EQ(JobEnvironmentFromEnv().status().code(), StatusCode::kInvalidArgument);
  SetJob("0", "0");
  EXPECT_EQ(JobEnvironmentFromEnv().status().code(), StatusCode::kInvalidArgument);
  SetJob("0", "1");
  setenv("TESSERA_ROLE", "server", 1);
  EXPECT_EQ(JobEnvironmentFromEnv().status().code(), StatusCode::kInvalidArgument);
}

TEST_F(JobEnvironmentTest, ManagedCommunicationSplitsTheJobBudget) {
  SetJob("0", "4");
  setenv("TESSERA_COMM_POLICY", "relative-magnitude", 1);
  setenv("TESSERA_COMM_BYTES_PER_SECOND", "1e6", 1);
  auto job = JobEnvironmentFromEnv();
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  EXPECT_EQ((*job)->client.comm.policy, SendPolicy::kRelativeMagnitude);
  EXPECT_DOUBLE_EQ((*job)->client.comm.bytes_per_second, 250000.0);
  auto server_share = CommOptionsFromEnv(2);
  ASSERT_TRUE(server_share.ok());
  EXPECT_DOUBLE_EQ(server_share->bytes_per_second, 500000.0);
  setenv("TESSERA_COMM_POLICY", "loudest-first", 1);
  EXPECT_EQ(JobEnvironmentFromEnv().status().code(), StatusCode::kInvalidArgument);
  setenv("TESSERA_COMM_POLICY", "fifo", 1);
  setenv("TESSERA_COMM_BYTES_PER_SECOND", "fast", 1);
  EXPECT_EQ(JobEnvironmentFromEnv().status().code(), StatusCode::kInvalidArgument);
}

TEST_F(JobEnvironmentTest, CacheCapacityFromTheEnvironment) {
  SetJob("1", "2");
  auto job = JobEnvironmentFromEnv();
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  EXPECT_EQ((*job)->client.cache_rows, 0u);  // no limit unless asked
  setenv("TESSERA_CACHE_ROWS", "100000", 1);
  job = JobEnvironmentFromEnv();
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  EXPECT_EQ((*job)->client.cache_rows, 100000u);
  for (const char* bad : {"-5", "lots", "10k", ""}) {
    setenv("TESSERA_CACHE_ROWS", bad, 1);
    auto refused = JobEnvironmentFromEnv();
    EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(refused.status().message().find("TESSERA_CACHE_ROWS"), std::string::npos);
  }
}

}  // namespace
}  // namespace tessera
