// Context: what it takes from the launcher's environment, and that without a distributed executor
// a launched program says so and runs serially rather than silently doing something else.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "tessera/tessera.h"

namespace tessera {
namespace {

// Sets environment variables for one test and restores them (the launcher's interface is the
// environment, so that is what this test drives).
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    ::setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (old_.empty()) {
      ::unsetenv(name_);
    } else {
      ::setenv(name_, old_.c_str(), 1);
    }
  }

 private:
  const char* name_;
  std::string old_;
};

TEST(ContextTest, AloneIsSerial) {
  ContextOptions o;
  o.read_environment = false;
  Context ctx(std::move(o));
  EXPECT_EQ(ctx.mode(), ExecutionMode::kSerial);
  EXPECT_FALSE(ctx.job().launched());
  EXPECT_EQ(ctx.job().num_workers, 1);
}

TEST(ContextTest, ReadsTheLaunchersVariables) {
  // A role that runs no program (not a worker) reads the variables but stays serial.
  ScopedEnv role("TESSERA_ROLE", "server");
  ScopedEnv coord("TESSERA_COORDINATOR", "tcp://127.0.0.1:4242");
  ScopedEnv rank("TESSERA_RANK", "3");
  ScopedEnv workers("TESSERA_NUM_WORKERS", "4");
  ScopedEnv threads("TESSERA_THREADS", "1");
  char arg0[] = "context_test";
  char* argv[] = {arg0, nullptr};
  Context ctx(1, argv);
  EXPECT_TRUE(ctx.job().launched());
  EXPECT_EQ(ctx.job().role, "server");
  EXPECT_EQ(ctx.job().coordinator, "tcp://127.0.0.1:4242");
  EXPECT_EQ(ctx.job().rank, 3);
  EXPECT_EQ(ctx.job().num_workers, 4);
  EXPECT_EQ(ctx.mode(), ExecutionMode::kSerial);
  auto a = DistArray<int, 1>::dense(ctx, {10});
  parallel_for(a, [](const Key<1>& k, int& v) { v += static_cast<int>(k[0]); });
  for (int i = 0; i < 10; ++i) EXPECT_EQ(a(i), i);
}

TEST(ContextDeathTest, AWorkerThatCannotJoinItsJobSaysWhy) {
  // Running alone instead would silently compute something else: the worker stops, naming why.
  ScopedEnv role("TESSERA_ROLE", "worker");
  ScopedEnv coord("TESSERA_COORDINATOR", "tcp://127.0.0.1:4242");
  ScopedEnv rank("TESSERA_RANK", "4");
  ScopedEnv workers("TESSERA_NUM_WORKERS", "4");
  char arg0[] = "context_test";
  char* argv[] = {arg0, nullptr};
  EXPECT_DEATH({ Context ctx(1, argv); }, "joining the job");
}

TEST(ContextTest, ArrayIdsAreCreationNumbers) {
  ContextOptions o;
  o.read_environment = false;
  Context ctx(std::move(o));
  auto a = DistArray<float, 2>::dense(ctx, {2, 2});
  auto b = RelaxedArray<int64_t, 1>::dense(ctx, {3});
  auto c = DistArray<float, 2>::sparse(ctx, {2, 2});
  EXPECT_EQ(a.base().id() + 1, b.base().id());
  EXPECT_EQ(b.base().id() + 1, c.base().id());
}

}  // namespace
}  // namespace tessera
