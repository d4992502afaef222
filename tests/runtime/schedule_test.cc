// The schedule lookup rule of tessera/schedule.h, and that serial mode only reports schedules.
#include <gtest/gtest.h>

#include <source_location>
#include <vector>

#include "schedule/schedule_table.h"
#include "tessera/tessera.h"

namespace tessera {
namespace {

TEST(ScheduleLookupTest, PathsMatchOnWholeComponents) {
  EXPECT_TRUE(internal::SameSourceFile("/work/main/apps/mf/mf.cc", "apps/mf/mf.cc"));
  EXPECT_TRUE(internal::SameSourceFile("apps/mf/mf.cc", "/work/main/apps/mf/mf.cc"));
  EXPECT_TRUE(internal::SameSourceFile("a.cc", "a.cc"));
  EXPECT_FALSE(internal::SameSourceFile("/src/xmf.cc", "mf.cc"));  // not at a '/'
  EXPECT_FALSE(internal::SameSourceFile("/src/mf.cc", "/other/mf.cc"));
  EXPECT_FALSE(internal::SameSourceFile("/src/mf.cc", ""));
}

TEST(ScheduleLookupTest, LineMustMatchAndColumnBreaksTies) {
  static const EmbeddedSchedule table[] = {
      {"/repo/apps/mf/mf.cc", 10, 5, "{\"site\":1}"},
      {"/repo/apps/mf/mf.cc", 20, 5, "{\"site\":2}"},
      {"/repo/apps/mf/mf.cc", 20, 40, "{\"site\":3}"},
      {"/repo/apps/lda/lda.cc", 30, 0, "{\"site\":4}"},
      {"/repo/apps/lda/lda.cc", 30, 0, "{\"site\":5}"},
  };
  std::vector<const EmbeddedSchedule*> entries;
  for (const auto& e : table) entries.push_back(&e);

  auto m = internal::MatchSchedule(entries, "apps/mf/mf.cc", 10, 99);
  EXPECT_EQ(m.schedule, &table[0]);  // unique by line; column irrelevant
  m = internal::MatchSchedule(entries, "apps/mf/mf.cc", 11, 5);
  EXPECT_EQ(m.schedule, nullptr);
  EXPECT_EQ(m.count, 0u);
  m = internal::MatchSchedule(entries, "apps/mf/mf.cc", 20, 40);
  EXPECT_EQ(m.schedule, &table[2]);
  m = internal::MatchSchedule(entries, "apps/mf/mf.cc", 20, 7);  // no column to break the tie
  EXPECT_EQ(m.schedule, nullptr);
  EXPECT_EQ(m.count, 2u);
  m = internal::MatchSchedule(entries, "apps/lda/lda.cc", 30, 0);  // column 0 never narrows
  EXPECT_EQ(m.schedule, nullptr);
  EXPECT_EQ(m.count, 2u);
}

// An executor that records what parallel_for tells it, then runs serially: shows the plug-in seam.
class RecordingExecutor final : public Executor {
 public:
  explicit RecordingExecutor(std::vector<LoopSite>* sites) : sites_(sites) {}
  std::string_view name() const override { return "recording"; }
  void Run(const LoopSite& site, const internal::ArrayBase& space, const LoopTask& task) override {
    sites_->push_back(site);
    // Run in two halves, the second via positions, as a blocked executor would.
    const int64_t half = space.size() / 2;
    task.RunRange(0, half);
    std::vector<int64_t> rest;
    for (int64_t p = space.size() - 1; p >= half; --p) rest.push_back(p);
    task.RunPositions(rest.data(), rest.size());
  }

 private:
  std::vector<LoopSite>* sites_;
};

// A registration as tessc-generated code does it (static initialization), for the parallel_for
// on the same line -- kept on one line so that __LINE__ is the call's line.
// clang-format off
void RegisteredSite(DistArray<int, 1>& a) { parallel_for(a, [](const Key<1>& k, int& v) { v = static_cast<int>(k[0]) + 1; }); } const EmbeddedSchedule kSite[] = {{__FILE__, __LINE__, 0, "{\"strategy\":\"independent\"}"}};
// clang-format on
[[maybe_unused]] const bool kRegistered =
    (RegisterEmbeddedSchedules(std::begin(kSite), std::end(kSite)), true);

void UnregisteredSite(DistArray<int, 1>& a, bool permit) {
  if (permit) {
    parallel_for(a, [](const Key<1>& k, int& v) { v = 2; }, DataParallel{.staleness = 3});
  } else {
    parallel_for(a, [](const Key<1>& k, int& v) { v = 1; });
  }
}

TEST(ScheduleLookupTest, ExecutorReceivesTheSiteAndItsSchedule) {
  std::vector<LoopSite> sites;
  ContextOptions o;
  o.read_environment = false;
  o.executor = std::make_unique<RecordingExecutor>(&sites);
  Context ctx(std::move(o));
  EXPECT_EQ(ctx.executor().name(), "recording");
  auto a = DistArray<int, 1>::dense(ctx, {5});
  RegisteredSite(a);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(a(i), i + 1);  // every position ran once
  UnregisteredSite(a, /*permit=*/true);
  UnregisteredSite(a, /*permit=*/false);
  ASSERT_EQ(sites.size(), 3u);
  ASSERT_NE(sites[0].schedule, nullptr);
  EXPECT_STREQ(sites[0].schedule->json, "{\"strategy\":\"independent\"}");
  EXPECT_FALSE(sites[0].data_parallel);
  EXPECT_EQ(sites[1].schedule, nullptr);
  EXPECT_TRUE(sites[1].data_parallel);
  EXPECT_EQ(sites[1].staleness, 3);
  EXPECT_EQ(sites[2].schedule, nullptr);
  EXPECT_NE(sites[1].location.line(), sites[2].location.line());
  EXPECT_EQ(ctx.FindSchedule(sites[0].location), sites[0].schedule);
}

}  // namespace
}  // namespace tessera
