// Schedules match their call sites however the source path is spelt (tessera/schedule.h), and a
// parallel run whose loop found no schedule says so at warning level, once per site.
#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "schedule/schedule_table.h"
#include "tessera/tessera.h"

namespace tessera {
namespace {

namespace fs = std::filesystem;
using internal::SameSourceFile;
using internal::SourcePathSpellings;

TEST(SchedulePathTest, SpellingsAreLexicallyNormal) {
  EXPECT_EQ(SourcePathSpellings("./apps/mf/mf.cc"), std::vector<std::string>{"apps/mf/mf.cc"});
  EXPECT_EQ(SourcePathSpellings("apps//mf/./x/../mf.cc"),
            std::vector<std::string>{"apps/mf/mf.cc"});
  // The directories a relative path climbs out of are unknown at run time.
  EXPECT_EQ(SourcePathSpellings("../../apps/mf.cc"), std::vector<std::string>{"apps/mf.cc"});
  EXPECT_EQ(SourcePathSpellings("/no/such/./dir/../mf.cc"),
            std::vector<std::string>{"/no/such/mf.cc"});
  EXPECT_TRUE(SourcePathSpellings("").empty());
  EXPECT_TRUE(SourcePathSpellings("..").empty());
  EXPECT_TRUE(SourcePathSpellings(".").empty());
}

TEST(SchedulePathTest, DotsSlashesAndRelativePathsMatch) {
  EXPECT_TRUE(SameSourceFile("/work/main/apps/./mf/../mf/mf.cc", "apps/mf/mf.cc"));
  EXPECT_TRUE(SameSourceFile("../apps/mf/mf.cc", "/work/main/apps/mf/mf.cc"));
  EXPECT_TRUE(SameSourceFile("/work//main/apps/mf/mf.cc", "/work/main/apps/mf/mf.cc"));
  EXPECT_TRUE(SameSourceFile("./mf.cc", "/work/main/apps/mf/mf.cc"));
  EXPECT_TRUE(SameSourceFile("../../apps/mf/mf.cc", "./apps/mf/mf.cc"));
  // Still whole components only, and different files stay different.
  EXPECT_FALSE(SameSourceFile("../xmf.cc", "/src/mf.cc"));
  EXPECT_FALSE(SameSourceFile("/src/mf/../lda.cc", "/src/mf/lda.cc"));
  EXPECT_FALSE(SameSourceFile("../apps/lda/mf.cc", "/work/apps/mf/mf.cc"));
  EXPECT_FALSE(SameSourceFile("..", "/src/mf.cc"));
  EXPECT_FALSE(SameSourceFile("", ""));
}

// A source tree reached through a symlink: /tmp/x/real/src/a.cc and /tmp/x/link/src/a.cc.
class SymlinkedTree : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("tessera_schedule_paths_" + std::to_string(::getpid()) + "_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(root_ / "real" / "src");
    std::ofstream(root_ / "real" / "src" / "a.cc") << "// a source\n";
    std::ofstream(root_ / "real" / "src" / "b.cc") << "// another\n";
    fs::create_directory_symlink(root_ / "real", root_ / "link");
  }
  void TearDown() override { fs::remove_all(root_); }
  std::string Path(const std::string& rel) const { return (root_ / rel).string(); }

  fs::path root_;
};

TEST_F(SymlinkedTree, SymlinksAreResolvedForFilesThatExist) {
  EXPECT_TRUE(SameSourceFile(Path("link/src/a.cc"), Path("real/src/a.cc")));
  EXPECT_TRUE(SameSourceFile(Path("link/src/../src/a.cc"), Path("real/./src/a.cc")));
  EXPECT_FALSE(SameSourceFile(Path("link/src/a.cc"), Path("real/src/b.cc")));
  // A relative spelling still matches the symlinked absolute one by its suffix.
  EXPECT_TRUE(SameSourceFile("../src/a.cc", Path("link/src/a.cc")));
}

TEST_F(SymlinkedTree, LookupFindsAnEntrySpeltThroughASymlink) {
  const std::string a_file = Path("link/src/../src/a.cc");
  const std::string b_file = Path("real/src/b.cc");
  const EmbeddedSchedule table[] = {
      {a_file.c_str(), 12, 0, "{\"site\":1}"},
      {b_file.c_str(), 12, 0, "{\"site\":2}"},
  };
  std::vector<const EmbeddedSchedule*> entries{&table[0], &table[1]};
  const std::string site = Path("real/src/a.cc");
  internal::ScheduleMatch m = internal::MatchSchedule(entries, site, 12, 7);
  EXPECT_EQ(m.schedule, &table[0]);
  EXPECT_EQ(m.count, 1u);
  m = internal::MatchSchedule(entries, site, 13, 7);
  EXPECT_EQ(m.schedule, nullptr);
}

// Captures what every logger made afterwards writes (Context loggers share the default sinks)
// and restores the previous default logger.
class LogCapture {
 public:
  LogCapture() : previous_(spdlog::default_logger()) {
    auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(out_);
    sink->set_pattern("%l %v");
    spdlog::set_default_logger(std::make_shared<spdlog::logger>("capture", sink));
  }
  ~LogCapture() { spdlog::set_default_logger(previous_); }
  std::string text() const { return out_.str(); }
  size_t Count(const std::string& needle) const {
    const std::string t = text();
    size_t n = 0;
    for (size_t at = t.find(needle); at != std::string::npos; at = t.find(needle, at + 1)) ++n;
    return n;
  }

 private:
  std::ostringstream out_;
  std::shared_ptr<spdlog::logger> previous_;
};

// Runs loops serially but reports the concurrency of a parallel executor, so that the Context
// treats a missing schedule as lost parallelism.
class ParallelLookingExecutor final : public Executor {
 public:
  explicit ParallelLookingExecutor(int concurrency) : concurrency_(concurrency) {}
  std::string_view name() const override { return "parallel-looking"; }
  int concurrency() const override { return concurrency_; }
  void Run(const LoopSite& site, const internal::ArrayBase& space, const LoopTask& task) override {
    sites_.push_back(site);
    task.RunRange(0, space.size());
  }
  std::vector<bool> found() const {
    std::vector<bool> f;
    for (const LoopSite& s : sites_) f.push_back(s.schedule != nullptr);
    return f;
  }
  const std::vector<LoopSite>& sites() const { return sites_; }

 private:
  int concurrency_;
  std::vector<LoopSite> sites_;
};

// The entry of the loop below, registered under a different spelling of this file's path
// ("dir/./" and "dir/x/../" inserted), as a hand-made build could spell it.
std::string Respelt(const std::string& file) {
  const fs::path p(file);
  return (p.parent_path() / "." / "x" / ".." / p.filename()).string();
}
const std::string kRespeltFile = Respelt(__FILE__);
// clang-format off
void ScheduledLoop(DistArray<int, 1>& a) { parallel_for(a, [](const Key<1>& k, int& v) { v = 1; }); } const EmbeddedSchedule kRespeltSite[] = {{kRespeltFile.c_str(), __LINE__, 0, "{\"strategy\":\"independent\"}"}};
// clang-format on
[[maybe_unused]] const bool kRegistered =
    (RegisterEmbeddedSchedules(std::begin(kRespeltSite), std::end(kRespeltSite)), true);

void UnscheduledLoop(DistArray<int, 1>& a) {
  parallel_for(a, [](const Key<1>& k, int& v) { v = 2; });
}

TEST(ScheduleWarningTest, AParallelRunWarnsOncePerSiteWithoutASchedule) {
  LogCapture log;
  ContextOptions o;
  o.read_environment = false;
  auto executor = std::make_unique<ParallelLookingExecutor>(2);
  ParallelLookingExecutor* ex = executor.get();
  o.executor = std::move(executor);
  Context ctx(std::move(o));
  auto a = DistArray<int, 1>::dense(ctx, {4});
  for (int round = 0; round < 3; ++round) {
    ScheduledLoop(a);
    UnscheduledLoop(a);
  }
  EXPECT_EQ(ex->found(), (std::vector<bool>{true, false, true, false, true, false}));
  EXPECT_EQ(log.Count("no schedule from tessc matches"), 1u) << log.text();
  EXPECT_EQ(log.Count("warning "), 1u) << log.text();
  // The warning names the site and what the program does embed.
  const std::source_location& unscheduled = ex->sites()[1].location;
  EXPECT_NE(log.text().find("parallel_for at " + std::string(unscheduled.file_name()) + ":" +
                            std::to_string(unscheduled.line()) + ": no schedule"),
            std::string::npos)
      << log.text();
  EXPECT_NE(log.text().find("the program embeds schedules for"), std::string::npos) << log.text();
}

TEST(ScheduleWarningTest, ASerialRunDoesNotWarn) {
  LogCapture log;
  ContextOptions o;
  o.read_environment = false;
  o.executor = std::make_unique<ParallelLookingExecutor>(1);
  Context ctx(std::move(o));
  auto a = DistArray<int, 1>::dense(ctx, {4});
  UnscheduledLoop(a);
  EXPECT_EQ(log.Count("no schedule from tessc matches"), 0u) << log.text();
  EXPECT_EQ(log.Count("warning "), 0u) << log.text();
}

}  // namespace
}  // namespace tessera
