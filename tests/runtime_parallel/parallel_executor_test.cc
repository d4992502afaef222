// The parallel executor runs tessc's schedules (kernels.cc is built with tessera_add_program) on
// 1-4 threads and must give exactly the serial result, partitioned the way the schedule says.
// Sites without a schedule (this file's own parallel_for calls: tessc does not see this file) run
// serially and say so once; a schedule that does not fit its call aborts naming the call.
#include <gtest/gtest.h>
#include <spdlog/sinks/ringbuffer_sink.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "execution/parallel_executor.h"
#include "kernels.h"
#include "schedule/loop_schedule.h"
#include "tessera/tessera.h"

#ifndef TESSERA_TEST_HAVE_TESSC
#define TESSERA_TEST_HAVE_TESSC 0
#endif

namespace tessera {
namespace {

using testing::KernelRun;

// The parallel executor, recording the schedule each loop found.
class RecordingExecutor final : public Executor {
 public:
  RecordingExecutor(std::unique_ptr<Executor> inner, std::vector<std::string>* schedules)
      : inner_(std::move(inner)), schedules_(schedules) {}
  std::string_view name() const override { return inner_->name(); }
  int concurrency() const override { return inner_->concurrency(); }
  void Run(const LoopSite& site, const internal::ArrayBase& space, const LoopTask& task) override {
    schedules_->push_back(site.schedule != nullptr ? site.schedule->json : "<none>");
    inner_->Run(site, space, task);
  }

 private:
  std::unique_ptr<Executor> inner_;
  std::vector<std::string>* schedules_;
};

std::unique_ptr<Context> SerialContext() {
  ContextOptions options;
  options.read_environment = false;
  options.threads = 1;
  return std::make_unique<Context>(std::move(options));
}

std::unique_ptr<Context> ParallelContext(int threads, std::vector<std::string>* schedules,
                                         int64_t min_parallel_wavefront = 1) {
  internal::ParallelExecutorOptions popt;
  popt.threads = threads;
  popt.min_parallel_wavefront = min_parallel_wavefront;
  ContextOptions options;
  options.read_environment = false;
  options.log_name = "parallel-test";
  options.executor = std::make_unique<RecordingExecutor>(
      internal::MakeParallelExecutor(popt, spdlog::default_logger()), schedules);
  return std::make_unique<Context>(std::move(options));
}

// Element-by-element comparison that names the first differences instead of dumping vectors.
::testing::AssertionResult SameValues(const std::vector<int64_t>& expected,
                                      const std::vector<int64_t>& actual) {
  if (expected.size() != actual.size()) {
    return ::testing::AssertionFailure() << "sizes differ: " << expected.size() << " vs "
                                         << actual.size();
  }
  size_t bad = 0;
  std::string first;
  for (size_t i = 0; i < expected.size(); ++i) {
    if (expected[i] == actual[i]) continue;
    if (bad++ < 3) {
      first += " [" + std::to_string(i) + "] " + std::to_string(expected[i]) + " vs " +
               std::to_string(actual[i]);
    }
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << bad << " of " << expected.size()
                                       << " elements differ from the serial run:" << first;
}

// Slots of executed iterations are 1..threads, and iterations that share key `dim` share a slot
// (the space dim is partitioned by key); every thread got work. dim < 0 skips the sharing check.
void ExpectPartitioned(const KernelRun& run, int threads, int dim, const char* what) {
  const int64_t cols = run.cols.at(0);
  std::map<int64_t, int64_t> slot_of_key;
  std::set<int64_t> used;
  for (size_t i = 0; i < run.slots.size(); ++i) {
    const int64_t s = run.slots[i];
    if (s < 0) continue;  // not stored in a sparse space
    ASSERT_GE(s, 1) << what << ": iteration ran outside an executor thread";
    ASSERT_LE(s, threads) << what;
    used.insert(s);
    if (dim < 0) continue;
    const int64_t key = dim == 0 ? static_cast<int64_t>(i) / cols : static_cast<int64_t>(i) % cols;
    auto [it, fresh] = slot_of_key.emplace(key, s);
    ASSERT_TRUE(fresh || it->second == s)
        << what << ": key[" << dim << "] = " << key << " ran on slots " << it->second << " and " << s;
  }
  EXPECT_EQ(static_cast<int>(used.size()), threads) << what << ": not every thread got a block";
}

struct Strategy {
  const char* strategy;  // tessc's spelling in the JSON
  int space_dim;         // key dim whose equal keys must share a thread; -1: none
  std::function<KernelRun(Context&)> kernel;
};

class ParallelExecutorTest : public ::testing::TestWithParam<int> {
 protected:
  // Runs `s` serially and on GetParam() threads; the results must be identical.
  void CheckMatchesSerial(const Strategy& s, const char* what) {
    const KernelRun serial = s.kernel(*SerialContext());
    std::vector<std::string> schedules;
    const KernelRun parallel = s.kernel(*ParallelContext(GetParam(), &schedules));
    ASSERT_EQ(schedules.size(), 1u);
    if (schedules[0] == "<none>") {
      if (!TESSERA_TEST_HAVE_TESSC) GTEST_SKIP() << "built without tessc: no schedules embedded";
      FAIL() << what << ": kernels.cc was built with tessc but the loop found no schedule";
    }
    EXPECT_NE(schedules[0].find(std::string("\"strategy\":\"") + s.strategy + "\""),
              std::string::npos)
        << what << ": expected a " << s.strategy << " schedule, got " << schedules[0];
    EXPECT_TRUE(SameValues(serial.values, parallel.values)) << what;
    ExpectPartitioned(parallel, GetParam(), s.space_dim, what);
  }
};

TEST_P(ParallelExecutorTest, IndependentRowScaling) {
  CheckMatchesSerial({"independent", 0, [](Context& c) { return testing::RowScaling(c, 48, 40); }},
                     "independent");
}

TEST_P(ParallelExecutorTest, OneDColumnRecurrence) {
  CheckMatchesSerial({"1d", 1, [](Context& c) { return testing::ColumnRecurrence(c, 50, 64); }},
                     "1d column recurrence");
}

TEST_P(ParallelExecutorTest, OneDSparseRowFoldKeepsSerialOrderInsideARow) {
  CheckMatchesSerial(
      {"1d", 0, [](Context& c) { return testing::SparseRowFold(c, 40, 200, 3000); }},
      "1d sparse row fold");
}

TEST_P(ParallelExecutorTest, TwoDRotationNeverSharesARowOrColumn) {
  CheckMatchesSerial(
      {"2d", 0, [](Context& c) { return testing::MatrixUpdate2D(c, 80, 70, 2000); }},
      "2d matrix update");
}

// Writes at the permuted key from several threads share one position map per target.
TEST_P(ParallelExecutorTest, PermutedSweepsGiveTheSerialResult) {
  const KernelRun serial = testing::PermutedSweeps(*SerialContext(), 60, 50, 2);
  std::vector<std::string> schedules;
  const KernelRun parallel =
      testing::PermutedSweeps(*ParallelContext(GetParam(), &schedules), 60, 50, 2);
  ASSERT_EQ(schedules.size(), 4u);  // two loops, two rounds
  for (const std::string& s : schedules) {
    if (s == "<none>" && !TESSERA_TEST_HAVE_TESSC) GTEST_SKIP() << "built without tessc";
    EXPECT_NE(s.find("\"strategy\":\"independent\""), std::string::npos) << s;
  }
  EXPECT_GT(serial.values.size(), 1000u);
  EXPECT_TRUE(SameValues(serial.values, parallel.values));
}

// The same, the orders shuffled: every write is a keyed lookup, from several threads at once.
TEST_P(ParallelExecutorTest, ShuffledPermutedSweepsGiveTheSerialResult) {
  const KernelRun serial = testing::PermutedSweeps(*SerialContext(), 60, 50, 2, true);
  std::vector<std::string> schedules;
  const KernelRun parallel =
      testing::PermutedSweeps(*ParallelContext(GetParam(), &schedules), 60, 50, 2, true);
  ASSERT_EQ(schedules.size(), 4u);
  for (const std::string& s : schedules) {
    if (s == "<none>" && !TESSERA_TEST_HAVE_TESSC) GTEST_SKIP() << "built without tessc";
    EXPECT_NE(s.find("\"strategy\":\"independent\""), std::string::npos) << s;
  }
  EXPECT_TRUE(SameValues(serial.values, parallel.values));
}

TEST_P(ParallelExecutorTest, UnimodularWavefront) {
  CheckMatchesSerial({"unimodular", -1, [](Context& c) { return testing::Wavefront(c, 64); }},
                     "unimodular wavefront");
}

TEST_P(ParallelExecutorTest, UnimodularSkewedWavefront) {
  CheckMatchesSerial(
      {"unimodular", -1, [](Context& c) { return testing::SkewedWavefront(c, 64); }},
      "unimodular skewed wavefront");
}

TEST_P(ParallelExecutorTest, SmallWavefrontsRunInlineAndStayExact) {
  const KernelRun serial = testing::Wavefront(*SerialContext(), 40);
  std::vector<std::string> schedules;
  const KernelRun parallel =
      testing::Wavefront(*ParallelContext(GetParam(), &schedules, /*min_parallel_wavefront=*/1000), 40);
  if (schedules.at(0) == "<none>" && !TESSERA_TEST_HAVE_TESSC) GTEST_SKIP();
  EXPECT_TRUE(SameValues(serial.values, parallel.values));
  // Every wavefront (at most 40 iterations) is below the threshold: one thread ran them all.
  for (int64_t s : parallel.slots) EXPECT_EQ(s, 1);
}

TEST_P(ParallelExecutorTest, DataParallelSplitsFreelyAndKeepsLocalWritesExact) {
  // With lock_free, hits(value) += 1 races by the user's permission (not compared); sum(key[0])
  // is local to the space dim, so it is exact.
  CheckMatchesSerial({"data_parallel", 0,
                      [](Context& c) { return testing::DataParallelSums(c, 64, 32, true); }},
                     "data-parallel sums");
}

// Without lock_free, a data-parallel loop that writes plain arrays loses no update on threads:
// every count equals the serial one.
TEST_P(ParallelExecutorTest, DataParallelWritesAreNeverLostByDefault) {
  const KernelRun serial = testing::DataParallelSums(*SerialContext(), 200, 16, false);
  std::vector<std::string> schedules;
  const KernelRun parallel =
      testing::DataParallelSums(*ParallelContext(GetParam(), &schedules), 200, 16, false);
  for (const std::string& s : schedules) {
    if (s == "<none>" && !TESSERA_TEST_HAVE_TESSC) GTEST_SKIP() << "built without tessc";
    EXPECT_NE(s.find("\"strategy\":\"data_parallel\""), std::string::npos) << s;
  }
  EXPECT_TRUE(SameValues(serial.values, parallel.values));
}

INSTANTIATE_TEST_SUITE_P(Threads, ParallelExecutorTest, ::testing::Values(1, 2, 3, 4),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return std::to_string(info.param) + "threads";
                         });

TEST(ParallelExecutorSetupTest, ContextOptionsThreadsChoosesTheExecutor) {
  ContextOptions three;
  three.read_environment = false;
  three.threads = 3;
  Context parallel(std::move(three));
  EXPECT_EQ(parallel.executor().name(), "parallel");
  EXPECT_EQ(parallel.executor().concurrency(), 3);
  EXPECT_EQ(SerialContext()->executor().name(), "serial");
}

TEST(ParallelExecutorSetupTest, TesseraThreadsEnvironmentVariableChoosesTheExecutor) {
  // The launcher passes its environment on, so TESSERA_THREADS is how a job asks for threads.
  ASSERT_EQ(setenv("TESSERA_THREADS", "2", /*overwrite=*/1), 0);
  Context from_env;  // read_environment defaults to true
  unsetenv("TESSERA_THREADS");
  EXPECT_EQ(from_env.executor().name(), "parallel");
  EXPECT_EQ(from_env.executor().concurrency(), 2);
  ContextOptions too_many;
  too_many.read_environment = false;
  too_many.threads = 1000;  // clamped, with a warning
  EXPECT_EQ(Context(std::move(too_many)).executor().concurrency(), internal::kMaxExecutorSlots - 1);
}

TEST(ParallelExecutorSetupTest, BlocksFollowTheArrayWhenItIsReshuffled) {
  // The block cache is keyed by array and layout: after a shuffle the same site must not reuse
  // stale position lists (it would run some positions twice and others never).
  std::vector<std::string> schedules;
  const KernelRun parallel =
      testing::SparseRowFoldReshuffled(*ParallelContext(3, &schedules), 30, 100, 1500, 3);
  if (schedules.at(0) == "<none>" && !TESSERA_TEST_HAVE_TESSC) GTEST_SKIP();
  const KernelRun serial = testing::SparseRowFoldReshuffled(*SerialContext(), 30, 100, 1500, 3);
  EXPECT_TRUE(SameValues(serial.values, parallel.values));
  ExpectPartitioned(parallel, 3, 0, "reshuffled row fold");
}

// The 2D rotation hands a time block from thread p + 1 to thread p, and nothing else waits: with
// block (1, 1) slow, thread 0 must wait for it before its step-1 block (0, 1), while thread 2 goes
// on to its step-1 block (2, 0) at once (a barrier per step would hold it back).
TEST(ParallelExecutorRotationTest, HandsOverTimeBlocksWithoutABarrier) {
  using Clock = std::chrono::steady_clock;
  static const EmbeddedSchedule entry = {
      "tests/runtime_parallel/rotation.cc", 1, 1,
      R"({"version":1,"space":{"rank":2},"strategy":"2d","space_dim":0,"time_dim":1,
          "data_parallel":{"permitted":false},"dependences":[{"vector":[0,"*"]},{"vector":["*",0]}]})"};
  auto ctx = SerialContext();
  auto space = DistArray<int64_t, 2>::sparse(*ctx, {3, 3});
  for (int64_t i = 0; i < 3; ++i) {
    for (int64_t j = 0; j < 3; ++j) space.insert({{i, j}}, 0);  // one element per grid block
  }
  std::vector<Clock::time_point> start(9), end(9);
  auto run_one = [&](int64_t p) {
    const Key<2>& k = space.key_at(p);
    start[k.idx[0] * 3 + k.idx[1]] = Clock::now();
    if (k.idx[0] == 1 && k.idx[1] == 1) std::this_thread::sleep_for(std::chrono::milliseconds(300));
    end[k.idx[0] * 3 + k.idx[1]] = Clock::now();
  };
  auto range = [&](int64_t b, int64_t e) {
    for (int64_t p = b; p < e; ++p) run_one(p);
  };
  auto list = [&](const int64_t* ps, size_t n) {
    for (size_t i = 0; i < n; ++i) run_one(ps[i]);
  };
  LoopSite site;
  site.location = std::source_location::current();
  site.schedule = &entry;
  internal::ParallelExecutorOptions popt;
  popt.threads = 3;
  auto executor = internal::MakeParallelExecutor(popt, spdlog::default_logger());
  executor->Run(site, space.base(), LoopTask(range, list));

  auto block = [](int s, int t) { return s * 3 + t; };
  // Step 0 is (0,0), (1,1), (2,2); step 1 is (0,1), (1,2), (2,0); step 2 is (0,2), (1,0), (2,1).
  EXPECT_GE(start[block(0, 1)], end[block(1, 1)]) << "thread 0 took time block 1 before thread 1 released it";
  EXPECT_LT(start[block(2, 0)], end[block(1, 1)]) << "thread 2 waited for an unrelated block (a barrier)";
  for (int s = 0; s < 3; ++s) {  // every block ran, each thread's blocks in step order
    for (int t = 1; t < 3; ++t) {
      EXPECT_GE(start[block(s, (s + t) % 3)], end[block(s, (s + t - 1) % 3)]);
    }
  }
}

// No schedule: this file is not given to tessc, so these calls have none.
TEST(ParallelExecutorFallbackTest, LoopWithoutScheduleRunsSeriallyAndSaysSoOnce) {
  ContextOptions options;
  options.read_environment = false;
  options.threads = 4;
  Context ctx(std::move(options));
  auto sink = std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(64);
  ctx.logger().sinks().push_back(sink);
  ctx.logger().set_level(spdlog::level::info);

  auto A = DistArray<int64_t, 1>::dense(ctx, {1000});
  std::vector<int> slots;
  std::vector<int64_t> order;
  for (int round = 0; round < 2; ++round) {
    parallel_for(A, [&](const Key<1>& key, int64_t& a) {
      a += key[0];
      slots.push_back(internal::CurrentExecutorSlot());  // unsynchronized: must be serial
      order.push_back(key[0]);
    });
  }
  ASSERT_EQ(order.size(), 2000u);
  for (size_t i = 0; i < order.size(); ++i) ASSERT_EQ(order[i], static_cast<int64_t>(i % 1000));
  for (int s : slots) ASSERT_EQ(s, 0);  // the calling thread, outside any executor slot
  int notes = 0;
  for (const std::string& line : sink->last_formatted()) {
    if (line.find("has no schedule from tessc") != std::string::npos &&
        line.find("parallel_executor_test.cc") != std::string::npos) {
      ++notes;
    }
  }
  EXPECT_EQ(notes, 1) << "the serial fallback must be logged exactly once per site";
}

// Loops of this file with hand-made entries, as tessc embeds them: one tessc runs serially (its
// entry gives the reason), one whose line has two entries (ambiguous). Each entry names its
// loop's line.
// clang-format off
int64_t SerialByTessc(DistArray<int64_t, 1>& a) { int64_t hits = 0; parallel_for(a, [&](const Key<1>&, int64_t& v) { hits += v; }); return hits; } const EmbeddedSchedule kSerialSite[] = {{__FILE__, __LINE__, 0, R"({"version":1,"strategy":"serial","serial_reasons":["'hits' writes 'hits'"]})"}};
void AmbiguousSite(DistArray<int64_t, 1>& a) { parallel_for(a, [](const Key<1>&, int64_t& v) { v += 1; }); } const EmbeddedSchedule kAmbiguousSite[] = {{__FILE__, __LINE__, 0, "{}"}, {__FILE__, __LINE__, 0, "{}"}};
// clang-format on
[[maybe_unused]] const bool kHandMadeRegistered =
    (RegisterEmbeddedSchedules(std::begin(kSerialSite), std::end(kSerialSite)),
     RegisterEmbeddedSchedules(std::begin(kAmbiguousSite), std::end(kAmbiguousSite)), true);

std::string At(const EmbeddedSchedule& e) {
  return "parallel_for at " + std::string(e.file) + ":" + std::to_string(e.line);
}

// Each loop without a schedule says why, once: tessc chose to run it serially (a hand-made entry
// here; kernels.cc's SharedTotal gets a real one from tessc), the program embeds no entry for it,
// or several entries match it.
TEST(ParallelExecutorFallbackTest, EachLoopWithoutAScheduleSaysWhy) {
  ContextOptions options;
  options.read_environment = false;
  options.threads = 4;
  Context ctx(std::move(options));
  auto sink = std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(64);
  ctx.logger().sinks().push_back(sink);
  ctx.logger().set_level(spdlog::level::info);

  auto a = DistArray<int64_t, 1>::filled(ctx, {100}, 2);
  const int unscheduled_line = __LINE__ + 3;
  for (int round = 0; round < 2; ++round) {
    EXPECT_EQ(SerialByTessc(a), 200 + 100 * round);
    parallel_for(a, [](const Key<1>&, int64_t& v) { v += 0; });
    AmbiguousSite(a);
  }
  const KernelRun shared = testing::SharedTotal(ctx, 500);
  EXPECT_EQ(shared.values, testing::SharedTotal(*SerialContext(), 500).values);

  std::vector<std::string> lines = sink->last_formatted();
  auto count = [&](const std::string& needle) {
    return std::count_if(lines.begin(), lines.end(), [&](const std::string& line) {
      return line.find(needle) != std::string::npos;
    });
  };
  std::string all;
  for (const std::string& line : lines) all += line;
  EXPECT_EQ(count(At(kSerialSite[0]) +
                  " has no schedule: tessc chose to run it serially ('hits' writes 'hits'); "
                  "running it serially"),
            1)
      << all;
  EXPECT_EQ(
      count(At(kSerialSite[0]) + ": tessc chose to run it serially, so executor 'parallel' runs it "
                                 "unpartitioned ('hits' writes 'hits')"),
      1)
      << all;
  EXPECT_EQ(
      count("parallel_for at " + std::string(__FILE__) + ":" + std::to_string(unscheduled_line) +
            " has no schedule from tessc (the program embeds none for this call site: it "
            "was not built with tessera_add_program); running it serially"),
      1)
      << all;
  EXPECT_EQ(count(At(kAmbiguousSite[0]) +
                  " has no schedule from tessc (several embedded schedules match this call site, "
                  "so none is used); running it serially"),
            1)
      << all;
  // Nothing else claims a cause it does not have.
  EXPECT_EQ(count(At(kSerialSite[0]) + " has no schedule from tessc"), 0) << all;
  EXPECT_EQ(count("tessc chose to run it serially"), TESSERA_TEST_HAVE_TESSC ? 4 : 2) << all;
  if (TESSERA_TEST_HAVE_TESSC) {
    // kernels.cc's entry is tessc's own, with tessc's reason.
    EXPECT_EQ(count("kernels.cc:"), 2) << all;
    EXPECT_EQ(count("has no schedule: tessc chose to run it serially ('total' writes 'total'"), 1)
        << all;
  }
}

TEST(NoScheduleReasonTest, NamesEachCauseAndNumbersSeveralReasons) {
  LoopSite site;
  EXPECT_NE(internal::NoScheduleReason(site).find("not built with tessera_add_program"),
            std::string::npos);
  site.no_schedule = NoScheduleCause::kAmbiguous;
  EXPECT_NE(internal::NoScheduleReason(site).find("several embedded schedules match"),
            std::string::npos);
  const EmbeddedSchedule two{"x.cc", 3, 0,
                             R"({"version":1,"strategy":"serial","serial_reasons":["a; b","c"]})"};
  site.no_schedule = NoScheduleCause::kTesscSerial;
  site.serial_entry = &two;
  EXPECT_EQ(internal::NoScheduleReason(site),
            "has no schedule: tessc chose to run it serially ((1) a; b (2) c)");
  const EmbeddedSchedule none{"x.cc", 3, 0, R"({"version":1,"strategy":"serial"})"};
  site.serial_entry = &none;
  EXPECT_EQ(internal::NoScheduleReason(site),
            "has no schedule: tessc chose to run it serially (tessc's warning for this call says "
            "why)");
}

TEST(NoScheduleReasonTest, OnlyASerialEntryIsTesscsChoice) {
  EXPECT_EQ(internal::TesscSerialReasons(R"({"strategy":"serial","serial_reasons":["x"]})"),
            std::vector<std::string>{"x"});
  EXPECT_EQ(internal::TesscSerialReasons(R"({"strategy":"serial"})"), std::vector<std::string>{});
  EXPECT_EQ(internal::TesscSerialReasons(R"({"strategy":"1d"})"), std::nullopt);
  EXPECT_EQ(internal::TesscSerialReasons("{}"), std::nullopt);
  EXPECT_EQ(internal::TesscSerialReasons("not json"), std::nullopt);
}

// --- Schedules that do not fit their call abort, naming the call. ---

class ParallelExecutorMismatchTest : public ::testing::Test {
 protected:
  void SetUp() override { GTEST_FLAG_SET(death_test_style, "threadsafe"); }

  // Runs a parallel executor over a dense 8x8 space with `json` as the site's schedule.
  static void RunWith(const char* json, bool data_parallel = false) {
    static EmbeddedSchedule entry;
    entry = {"tests/runtime_parallel/fake.cc", 7, 3, json};
    auto ctx = SerialContext();
    auto A = DistArray<int64_t, 2>::dense(*ctx, {8, 8});
    LoopSite site;
    site.location = std::source_location::current();
    site.data_parallel = data_parallel;
    site.schedule = &entry;
    auto range = [](int64_t, int64_t) {};
    auto list = [](const int64_t*, size_t) {};
    internal::ParallelExecutorOptions popt;
    popt.threads = 2;
    auto executor = internal::MakeParallelExecutor(popt, spdlog::default_logger());
    executor->Run(site, A.base(), LoopTask(range, list));
  }
};

TEST_F(ParallelExecutorMismatchTest, WrongRankAbortsNamingTheCall) {
  EXPECT_DEATH(RunWith(R"({"version":1,"space":{"rank":3},"strategy":"1d","space_dim":0,
                           "time_dim":null,"skew":null,"data_parallel":{"permitted":false},
                           "dependences":[]})"),
               "parallel_executor_test.cc:[0-9]+.*rank-3 iteration space.*rank-2 array.*rebuild");
}

TEST_F(ParallelExecutorMismatchTest, UnknownStrategyAborts) {
  EXPECT_DEATH(RunWith(R"({"version":1,"space":{"rank":2},"strategy":"zigzag","space_dim":0})"),
               "parallel_executor_test.cc:[0-9]+.*unknown schedule strategy 'zigzag'");
}

TEST_F(ParallelExecutorMismatchTest, UnknownVersionAborts) {
  EXPECT_DEATH(RunWith(R"({"version":2,"space":{"rank":2},"strategy":"1d","space_dim":0})"),
               "format version 2 is not the supported version 1");
}

TEST_F(ParallelExecutorMismatchTest, MalformedJsonAborts) {
  EXPECT_DEATH(RunWith("{\"version\":1,"), "not a JSON object");
}

TEST_F(ParallelExecutorMismatchTest, SpaceDimOutOfRangeAborts) {
  EXPECT_DEATH(RunWith(R"({"version":1,"space":{"rank":2},"strategy":"1d","space_dim":2})"),
               "'space_dim' = 2 is not a key dim");
}

TEST_F(ParallelExecutorMismatchTest, DataParallelPermissionMustMatchTheCall) {
  const char* json = R"({"version":1,"space":{"rank":2},"strategy":"data_parallel","space_dim":0,
                         "data_parallel":{"permitted":true,"staleness":1},"dependences":[]})";
  EXPECT_DEATH(RunWith(json, /*data_parallel=*/false), "with tessera::DataParallel");
}

TEST_F(ParallelExecutorMismatchTest, ScheduleThatBreaksItsOwnDependenceAborts) {
  // 1d along key[0] with a recurrence along key[0]: blocks would run it out of order.
  EXPECT_DEATH(RunWith(R"({"version":1,"space":{"rank":2},"strategy":"1d","space_dim":0,
                           "dependences":[{"array":"A","vector":[1,0]}]})"),
               "does not preserve its dependence \\(1, 0\\)");
  // The identity skew does not carry (0, 1) forward: not a wavefront order.
  EXPECT_DEATH(RunWith(R"({"version":1,"space":{"rank":2},"strategy":"unimodular",
                           "skew":[[1,0],[0,1]],"dependences":[{"vector":[0,1]}]})"),
               "does not preserve its dependence \\(0, 1\\)");
  // Not unimodular at all.
  EXPECT_DEATH(RunWith(R"({"version":1,"space":{"rank":2},"strategy":"unimodular",
                           "skew":[[2,0],[0,1]],"dependences":[]})"),
               "determinant 2");
}

TEST_F(ParallelExecutorMismatchTest, FittingScheduleRuns) {
  RunWith(R"({"version":1,"space":{"rank":2},"strategy":"2d","space_dim":0,"time_dim":1,
              "dependences":[{"vector":[0,"*"]},{"vector":["*",0]}]})");
}

}  // namespace
}  // namespace tessera
