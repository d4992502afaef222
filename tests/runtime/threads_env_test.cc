// TESSERA_THREADS: read strictly, so that a typo is an error rather than a silently serial run.
#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <string>

#include "tessera/tessera.h"

namespace tessera {
namespace {

// Sets (or with nullptr unsets) TESSERA_THREADS for one test and restores it.
class ScopedThreads {
 public:
  explicit ScopedThreads(const char* value) {
    if (const char* old = std::getenv("TESSERA_THREADS")) old_ = old;
    if (value == nullptr) {
      ::unsetenv("TESSERA_THREADS");
    } else {
      ::setenv("TESSERA_THREADS", value, 1);
    }
  }
  ~ScopedThreads() {
    if (old_.has_value()) {
      ::setenv("TESSERA_THREADS", old_->c_str(), 1);
    } else {
      ::unsetenv("TESSERA_THREADS");
    }
  }

 private:
  std::optional<std::string> old_;
};

TEST(ThreadsFromEnvironmentTest, UnsetOrEmptyIsZero) {
  {
    ScopedThreads t(nullptr);
    ASSERT_TRUE(ThreadsFromEnvironment().ok());
    EXPECT_EQ(*ThreadsFromEnvironment(), 0);
  }
  ScopedThreads t("");
  ASSERT_TRUE(ThreadsFromEnvironment().ok());
  EXPECT_EQ(*ThreadsFromEnvironment(), 0);
}

TEST(ThreadsFromEnvironmentTest, AcceptsOneToSixtyThree) {
  for (const char* v : {"1", "4", "63"}) {
    ScopedThreads t(v);
    Result<int> r = ThreadsFromEnvironment();
    ASSERT_TRUE(r.ok()) << v;
    EXPECT_EQ(*r, std::stoi(v));
  }
}

TEST(ThreadsFromEnvironmentTest, RejectsWhatIsNotAThreadCount) {
  for (const char* v : {"abc", "4x", "2.5", " 4", "0", "-1", "64", "99999999999999999999"}) {
    ScopedThreads t(v);
    Result<int> r = ThreadsFromEnvironment();
    ASSERT_FALSE(r.ok()) << v;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << v;
    EXPECT_NE(r.status().message().find("TESSERA_THREADS='" + std::string(v) + "'"),
              std::string::npos)
        << r.status().message();
  }
}

TEST(ThreadsFromEnvironmentTest, AContextUsesIt) {
  ScopedThreads t("3");
  Context ctx;
  EXPECT_EQ(ctx.executor().name(), "parallel");
  EXPECT_EQ(ctx.executor().concurrency(), 3);
}

TEST(ThreadsFromEnvironmentTest, ExplicitThreadsWinOverTheEnvironment) {
  ScopedThreads t("not a number");  // not read at all when the program says how many
  ContextOptions o;
  o.threads = 2;
  Context ctx(std::move(o));
  EXPECT_EQ(ctx.executor().concurrency(), 2);
}

TEST(ThreadsFromEnvironmentDeathTest, AContextStopsOnAMalformedValue) {
  ScopedThreads t("four");
  EXPECT_DEATH({ Context ctx; }, "TESSERA_THREADS='four' is not a number of executor threads");
}

}  // namespace
}  // namespace tessera
