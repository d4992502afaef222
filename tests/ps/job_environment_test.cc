#include "tessera/client/job_environment.h"

#include <gtest/gtest.h>
#include <stdlib.h>

namespace tessera {
namespace {

// The variables are process-wide, so each test sets all it needs and clears them after.
class JobEnvironmentTest : public ::testing::Test {
 protected:
  void TearDown() override {
    for (const char* v : {"TESSERA_COORDINATOR", "TESSERA_ROLE", "TESSERA_RANK", "TESSERA_NUM_WORKERS",
                          "TESSERA_NUM_SERVERS", "TESSERA_JOB_SECRET"}) {
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

}  // namespace
}  // namespace tessera
