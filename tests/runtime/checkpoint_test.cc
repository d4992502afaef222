// Checkpoints in one process (serial executor): the on-disk store (atomic files, crc32, the
// manifest last, pruning) and resume by replay -- a program resumed from any of its checkpoints
// ends bit-exact with an uninterrupted run, its serial code seeing the accumulator values it saw.
// The distributed path (tessera run, SIGKILL, --max-restarts) is tests/launcher_faults.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "checkpoint/checkpoint_store.h"
#include "checkpoint/record_shares.h"
#include "tessera/tessera.h"

namespace tessera {
namespace {

namespace ck = internal::checkpoint;
namespace fs = std::filesystem;

class CheckpointTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/tessera-checkpoint-test-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string dir_;
};

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST_F(CheckpointTest, DataFileRoundTripsAndDamageIsNamed) {
  const std::string a = "hello ", b = "checkpoint";
  auto f = ck::WriteDataFile(dir_, "x.bin", {std::span<const char>(a), std::span<const char>(b)});
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ(f->bytes, a.size() + b.size());
  EXPECT_FALSE(fs::exists(dir_ + "/x.bin.tmp"));  // renamed into place
  std::string back;
  ASSERT_TRUE(ck::ReadDataFile(dir_, *f, &back).ok());
  EXPECT_EQ(back, a + b);

  {  // one byte flipped: same size, other crc
    std::fstream io(dir_ + "/x.bin", std::ios::in | std::ios::out | std::ios::binary);
    io.seekp(3);
    io.put('X');
  }
  Status s = ck::ReadDataFile(dir_, *f, &back);
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_NE(s.message().find(dir_ + "/x.bin"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("damaged"), std::string::npos) << s.message();

  fs::resize_file(dir_ + "/x.bin", 4);
  s = ck::ReadDataFile(dir_, *f, &back);
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_NE(s.message().find("4 bytes"), std::string::npos) << s.message();
}

ck::Manifest SmallManifest(int64_t loop) {
  ck::Manifest m;
  m.loop = loop;
  m.sites = {"prog.cc:10:3"};
  m.site_of_loop.assign(static_cast<size_t>(loop), 0);
  m.accumulators.assign(static_cast<size_t>(loop), {std::string("\x01\x02", 2)});
  return m;
}

TEST_F(CheckpointTest, ManifestRoundTripsAndGarbageIsRejected) {
  ck::Manifest m = SmallManifest(2);
  ck::ArrayRecord r;
  r.id = 4;
  r.element_bytes = 4;
  r.count = 10;
  r.rows = 5;
  r.files.push_back({"a4-w0.bin", 40, 0xdeadbeef, {0, 10}});
  m.arrays.push_back(r);
  ck::ArrayRecord relaxed;
  relaxed.id = 5;
  relaxed.on_servers = true;
  m.arrays.push_back(relaxed);
  m.server_files.push_back({"tables-s1.bin", 99, 0x1234, {1}});
  auto back = ck::DecodeManifest(ck::EncodeManifest(m), "here");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->loop, 2);
  EXPECT_EQ(back->accumulators[1][0], std::string("\x01\x02", 2));
  ASSERT_EQ(back->arrays.size(), 2u);
  EXPECT_EQ(back->arrays[0].files[0].crc32, 0xdeadbeefu);
  EXPECT_EQ(back->arrays[0].files[0].ranges, (std::vector<int64_t>{0, 10}));
  EXPECT_FALSE(back->arrays[0].on_servers);
  EXPECT_TRUE(back->arrays[1].on_servers);
  ASSERT_EQ(back->server_files.size(), 1u);
  EXPECT_EQ(back->server_files[0].name, "tables-s1.bin");
  EXPECT_EQ(back->server_files[0].crc32, 0x1234u);
  EXPECT_EQ(back->server_files[0].ranges, (std::vector<int64_t>{1}));

  for (const std::string bad : {"", "{", "[]", R"({"format": 9})",
                                R"({"format":1,"loop":3,"workers":1,"sites":[],"site_of_loop":[],)"
                                R"("accumulators":[],"arrays":[]})"}) {
    auto d = ck::DecodeManifest(bad, "where/MANIFEST");
    EXPECT_EQ(d.status().code(), StatusCode::kDataLoss) << bad;
    EXPECT_NE(d.status().message().find("where/MANIFEST"), std::string::npos);
  }
}

TEST_F(CheckpointTest, SharesAndDataParallelTablesRoundTripInTheManifest) {
  ck::Manifest m = SmallManifest(1);
  ck::ArrayRecord r;
  r.id = 2;
  r.element_bytes = 4;
  r.count = 7;
  r.rows = 3;
  r.sparse = true;
  r.partitioned = true;
  for (int w = 0; w < 2; ++w) {
    ck::FileRecord f{"a2-w" + std::to_string(w) + ".bin", 36u * (3 + w), 7u, {}, std::nullopt};
    f.share = ck::RecordShare{.worker = w, .dim = 0, .lo = w, .hi = w + 2, .count = 3 + w};
    r.files.push_back(f);
  }
  m.arrays.push_back(r);
  m.data_parallel_tables = {{3, 0}, {3, 2}};
  auto back = ck::DecodeManifest(ck::EncodeManifest(m), "here");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  ASSERT_EQ(back->arrays.size(), 1u);
  EXPECT_TRUE(back->arrays[0].partitioned);
  ASSERT_EQ(back->arrays[0].files.size(), 2u);
  const auto& share = back->arrays[0].files[1].share;
  ASSERT_TRUE(share.has_value());
  EXPECT_EQ(share->worker, 1);
  EXPECT_EQ(share->lo, 1);
  EXPECT_EQ(share->hi, 3);
  EXPECT_EQ(share->count, 4);
  EXPECT_EQ(back->data_parallel_tables, m.data_parallel_tables);

  // A share on an array that is not partitioned (or the other way round) is malformed.
  m.arrays[0].partitioned = false;
  auto bad = ck::DecodeManifest(ck::EncodeManifest(m), "there");
  EXPECT_EQ(bad.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(bad.status().message().find("malformed file entry"), std::string::npos);
}

TEST_F(CheckpointTest, ReadIntoPiecesChecksSizeAndCrc) {
  const std::string text = "0123456789abcdef";
  auto f = ck::WriteDataFile(dir_, "p.bin", {std::span<const char>(text)});
  ASSERT_TRUE(f.ok());
  std::string a(6, '\0'), b(10, '\0');
  ASSERT_TRUE(ck::ReadDataFileInto(dir_, *f, {std::span<char>(a), std::span<char>(b)}).ok());
  EXPECT_EQ(a + b, text);
  // Pieces that do not add up to the file, a longer file, a damaged one: DataLoss naming it.
  std::string c(5, '\0');
  Status s = ck::ReadDataFileInto(dir_, *f, {std::span<char>(c)});
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  std::ofstream(dir_ + "/p.bin", std::ios::app) << "x";
  s = ck::ReadDataFileInto(dir_, *f, {std::span<char>(a), std::span<char>(b)});
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_NE(s.message().find(dir_ + "/p.bin: more bytes"), std::string::npos) << s.message();
  fs::resize_file(dir_ + "/p.bin", text.size());
  {
    std::fstream io(dir_ + "/p.bin", std::ios::in | std::ios::out | std::ios::binary);
    io.seekp(9);
    io.put('X');
  }
  s = ck::ReadDataFileInto(dir_, *f, {std::span<char>(a), std::span<char>(b)});
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_NE(s.message().find("damaged"), std::string::npos) << s.message();
}

// A worker's share of a partitioned sparse array: written from the storage (keys, values,
// places), read back whole or only a key range, checked against the array's shape.
TEST_F(CheckpointTest, RecordSharesRoundTripAndAreChecked) {
  ContextOptions o;
  o.read_environment = false;
  Context ctx(std::move(o));
  auto arr = DistArray<float, 2>::sparse(ctx, {6, 5});
  auto& base = const_cast<internal::ArrayBase&>(arr.base());
  // This "worker" holds the rows [2, 6) of a 10-element array, in the serial order.
  internal::RecordBatch held;
  const std::vector<std::array<int64_t, 2>> keys = {{2, 1}, {5, 0}, {3, 4}, {4, 4}};
  for (size_t i = 0; i < keys.size(); ++i) {
    held.keys.insert(held.keys.end(), keys[i].begin(), keys[i].end());
    const float v = 0.5f + static_cast<float>(i);
    const char* bytes = reinterpret_cast<const char*>(&v);
    held.values.insert(held.values.end(), bytes, bytes + sizeof(float));
    held.order.push_back({0, 3 * i + 1});
  }
  const internal::RecordPartition part{.dim = 0, .lo = 2, .hi = 6, .global_size = 10};
  base.ImportRecords({held}, &part);
  auto f = ck::WriteRecordShare(dir_, "a0-w1.bin", base, 1);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  ASSERT_TRUE(f->share.has_value());
  EXPECT_EQ(f->share->worker, 1);
  EXPECT_EQ(f->share->lo, 2);
  EXPECT_EQ(f->share->hi, 6);
  EXPECT_EQ(f->share->count, 4);
  EXPECT_EQ(f->bytes, 4u * (16 + 4 + 16));

  auto all = ck::ReadRecordShare(dir_, *f, base, std::nullopt);
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  EXPECT_EQ(all->keys, held.keys);
  EXPECT_EQ(all->values, held.values);
  EXPECT_EQ(all->order, held.order);
  // Only key[0] in [3, 5): the 3rd and 4th elements.
  auto some = ck::ReadRecordShare(dir_, *f, base, internal::RecordPartition{0, 3, 5, 10});
  ASSERT_TRUE(some.ok());
  EXPECT_EQ(some->keys, (std::vector<int64_t>{3, 4, 4, 4}));
  ASSERT_EQ(some->order.size(), 2u);
  EXPECT_EQ(some->order[0].low, 7u);
  EXPECT_EQ(some->order[1].low, 10u);

  // The same file read for a smaller array: a key outside it is named.
  auto small = DistArray<float, 2>::sparse(ctx, {4, 5});
  auto out = ck::ReadRecordShare(dir_, *f, small.base(), std::nullopt);
  EXPECT_EQ(out.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(out.status().message().find("outside array"), std::string::npos)
      << out.status().ToString();
  // A share of another element type does not fit its size.
  auto doubles = DistArray<double, 2>::sparse(ctx, {6, 5});
  out = ck::ReadRecordShare(dir_, *f, doubles.base(), std::nullopt);
  EXPECT_EQ(out.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(out.status().message().find("not a share of array"), std::string::npos);
  // Only a partitioned array has a share to write.
  EXPECT_EQ(ck::WriteRecordShare(dir_, "x.bin", small.base(), 0).status().code(),
            StatusCode::kFailedPrecondition);
}

// A share in its keys' order stores no places; its checkpoint still has them, made from the keys.
TEST_F(CheckpointTest, ARecordShareInKeyOrderIsWrittenWithItsPlaces) {
  ContextOptions o;
  o.read_environment = false;
  Context ctx(std::move(o));
  auto arr = DistArray<float, 2>::sparse(ctx, {6, 5});
  auto& base = const_cast<internal::ArrayBase&>(arr.base());
  internal::RecordBatch held;
  const std::vector<std::array<int64_t, 2>> keys = {{2, 1}, {3, 4}, {4, 0}, {5, 2}};
  for (size_t i = 0; i < keys.size(); ++i) {
    held.keys.insert(held.keys.end(), keys[i].begin(), keys[i].end());
    const float v = 1.5f + static_cast<float>(i);
    const char* bytes = reinterpret_cast<const char*>(&v);
    held.values.insert(held.values.end(), bytes, bytes + sizeof(float));
    held.order.push_back({0, static_cast<uint64_t>(keys[i][0] * 5 + keys[i][1])});
  }
  const internal::RecordPartition part{.dim = 0, .lo = 2, .hi = 6, .global_size = 9};
  base.ImportRecords({held}, &part);
  ASSERT_EQ(base.order_data(), nullptr);
  auto f = ck::WriteRecordShare(dir_, "k0-w1.bin", base, 1);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ(f->bytes, 4u * (16 + 4 + 16));
  auto all = ck::ReadRecordShare(dir_, *f, base, std::nullopt);
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  EXPECT_EQ(all->keys, held.keys);
  EXPECT_EQ(all->values, held.values);
  EXPECT_EQ(all->order, held.order);
}

// An accumulator's state is every partial sum: restored into another accumulator, later
// additions give the same bits, not only the same value now.
TEST_F(CheckpointTest, AccumulatorStateKeepsThePartialSums) {
  ContextOptions o;
  o.read_environment = false;
  Context ctx(std::move(o));
  Accumulator<double> a(ctx, 1e16);
  {
    internal::ExecutorSlotScope slot(3);
    a += 3.0;
  }
  Accumulator<double> b(ctx);
  internal::AccumulatorBase* ab = ctx.accumulators()[0];
  internal::AccumulatorBase* bb = ctx.accumulators()[1];
  ASSERT_TRUE(bb->SetState(ab->State()));
  EXPECT_EQ(b.value(), a.value());
  for (Accumulator<double>* acc : {&a, &b}) {
    internal::ExecutorSlotScope slot(3);
    *acc += 3.0;  // (1e16 + (3 + 3)) differs from ((1e16 + 3) + 3)
  }
  EXPECT_EQ(b.value(), a.value());
  EXPECT_EQ(b.value(), 1e16 + 6.0);
  // Bytes that are no state of a double accumulator.
  EXPECT_FALSE(bb->SetState("abc"));
  EXPECT_FALSE(bb->SetState(std::string(8, '\0') + std::string(1, '\x50') + std::string(8, '\0')));
}

TEST_F(CheckpointTest, OnlyCompleteCheckpointsAreFoundAndPruningKeepsTheNewest) {
  for (int64_t loop : {2, 4, 6, 8}) {
    const std::string path = ck::CheckpointPath(dir_, loop);
    ASSERT_TRUE(fs::create_directories(path));
    ASSERT_TRUE(ck::WriteManifest(path, SmallManifest(loop)).ok());
  }
  // Interrupted while writing: files and a half-written temporary manifest, no MANIFEST.
  const std::string torn = ck::CheckpointPath(dir_, 10);
  fs::create_directories(torn);
  std::ofstream(torn + "/a1-w0.bin") << "partial";
  std::ofstream(torn + "/MANIFEST.tmp") << "{\"format\": 1, \"lo";
  // A MANIFEST that is not one (written by something else): skipped too.
  const std::string junk = ck::CheckpointPath(dir_, 12);
  fs::create_directories(junk);
  std::ofstream(junk + "/MANIFEST") << "not json";

  std::vector<std::string> notes;
  auto found = ck::FindLatest(dir_, &notes);
  ASSERT_TRUE(found.ok());
  ASSERT_TRUE(found->has_value());
  EXPECT_EQ((*found)->manifest.loop, 8);
  EXPECT_EQ((*found)->path, ck::CheckpointPath(dir_, 8));
  ASSERT_EQ(notes.size(), 2u);
  EXPECT_NE(notes[0].find("not a checkpoint manifest"), std::string::npos) << notes[0];
  EXPECT_NE(notes[1].find("incomplete"), std::string::npos) << notes[1];

  ck::Prune(dir_, 2);
  EXPECT_FALSE(fs::exists(ck::CheckpointPath(dir_, 2)));
  EXPECT_FALSE(fs::exists(ck::CheckpointPath(dir_, 4)));
  EXPECT_TRUE(fs::exists(ck::CheckpointPath(dir_, 6)));
  EXPECT_TRUE(fs::exists(ck::CheckpointPath(dir_, 8)));
  EXPECT_TRUE(fs::exists(torn));  // newer than every complete one: may be in progress

  ck::RemoveAfter(dir_, 8);
  EXPECT_FALSE(fs::exists(torn));
  EXPECT_FALSE(fs::exists(junk));
  EXPECT_TRUE(fs::exists(ck::CheckpointPath(dir_, 8)));
}

TEST_F(CheckpointTest, BadDirectoriesAreClearErrors) {
  std::ofstream(dir_ + "/file") << "x";
  Status s = ck::PrepareDirectory(dir_ + "/file");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("not a directory"), std::string::npos) << s.message();
  s = ck::PrepareDirectory(dir_ + "/file/sub");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("cannot create it"), std::string::npos) << s.message();
  EXPECT_TRUE(ck::PrepareDirectory(dir_ + "/new/nested").ok());
  EXPECT_TRUE(fs::is_directory(dir_ + "/new/nested"));
}

// A small serial program: SGD-like updates of a dense array over a sparse one, an accumulator
// whose value steers the serial code (the step size), and serial random draws between loops.
struct ProgramResult {
  std::vector<float> weights;
  std::vector<double> losses;  // as the serial code saw them, one per epoch
  std::vector<bool> replayed;
  bool operator==(const ProgramResult&) const = default;
};

ProgramResult RunProgram(Context& ctx, int epochs) {
  auto data = DistArray<float, 2>::sparse(ctx, {40, 30});
  uint64_t state = 11;
  for (int i = 0; i < 300; ++i) {
    const uint64_t r = internal::SplitMix64(state);
    data.insert({{static_cast<int64_t>(r % 40), static_cast<int64_t>((r >> 20) % 30)}},
                static_cast<float>((r >> 40) % 5 + 1));
  }
  auto w = DistArray<float, 2>::random(ctx, {40, 4}, 1, 0.0f, 0.5f);
  auto h = DistArray<float, 2>::random(ctx, {30, 4}, 2, 0.0f, 0.5f);
  ProgramResult out;
  float lr = 0.05f;
  uint64_t serial_rng = 99;  // drawn in serial code: replayed, so it draws the same again
  for (int epoch = 0; epoch < epochs; ++epoch) {
    Accumulator<double> loss(ctx);
    parallel_for(data, [&](const Key<2>& k, float& v) {
      auto wr = w.row(k[0]);
      auto hr = h.row(k[1]);
      float dot = 0;
      for (int j = 0; j < 4; ++j) dot += wr[j] * hr[j];
      const float err = v - dot;
      loss += static_cast<double>(err) * err;
      for (int j = 0; j < 4; ++j) {
        const float a = wr[j], b = hr[j];
        wr[j] = a + lr * err * b;
        hr[j] = b + lr * err * a;
      }
    });
    Accumulator<double> check(ctx, 1.0);  // created between loops, added to by serial code
    check += static_cast<double>(internal::SplitMix64(serial_rng) % 7);
    parallel_for(w, [&](const Key<2>&, float& x) { check += x; });
    out.losses.push_back(loss.value() + check.value());
    out.replayed.push_back(ctx.replaying());
    lr *= loss.value() > 500 ? 0.8f : 0.95f;  // control flow from an accumulator
  }
  out.weights.assign(w.data(), w.data() + w.size());
  out.weights.insert(out.weights.end(), h.data(), h.data() + h.size());
  return out;
}

ContextOptions Options(const std::string& dir, bool resume) {
  ContextOptions o;
  o.read_environment = false;
  o.checkpoint.dir = dir;
  o.checkpoint.interval_seconds = 0;  // every loop boundary
  o.checkpoint.resume = resume;
  o.checkpoint.keep = 1000;
  return o;
}

TEST_F(CheckpointTest, ResumingFromAnyCheckpointIsBitExact) {
  constexpr int kEpochs = 6;
  ProgramResult reference;
  {
    ContextOptions o;
    o.read_environment = false;
    Context ctx(std::move(o));
    reference = RunProgram(ctx, kEpochs);
  }
  const std::string all = dir_ + "/all";
  {
    Context ctx(Options(all, false));
    EXPECT_EQ(RunProgram(ctx, kEpochs), reference);  // checkpoints change nothing
  }
  // Loop boundaries 1 .. 2 * kEpochs - 1 each have a checkpoint.
  for (int64_t n = 1; n < 2 * kEpochs; ++n) {
    SCOPED_TRACE("resumed from loop " + std::to_string(n));
    ASSERT_TRUE(fs::exists(ck::CheckpointPath(all, n) + "/MANIFEST"));
    // The state a crash right after checkpoint n leaves.
    const std::string crashed = dir_ + "/crashed-" + std::to_string(n);
    fs::create_directories(crashed);
    fs::copy(ck::CheckpointPath(all, n), ck::CheckpointPath(crashed, n));
    Context ctx(Options(crashed, true));
    ProgramResult resumed = RunProgram(ctx, kEpochs);
    EXPECT_EQ(resumed.weights, reference.weights);
    EXPECT_EQ(resumed.losses, reference.losses);
    for (int e = 0; e < kEpochs; ++e) {
      // Epoch e's serial code after its second loop (loop 2e + 1) runs before loop 2e + 2:
      // replayed when that is at or before the checkpoint's loop.
      EXPECT_EQ(resumed.replayed[e], 2 * e + 2 <= n) << "epoch " << e;
    }
  }
}

TEST_F(CheckpointTest, ResumeSkipsAnIncompleteNewestCheckpoint) {
  const std::string d = dir_ + "/run";
  ProgramResult reference;
  {
    Context ctx(Options(d, false));
    reference = RunProgram(ctx, 4);
  }
  // The newest checkpoint was being written when the job died: its MANIFEST never came.
  fs::remove(ck::CheckpointPath(d, 7) + "/MANIFEST");
  fs::remove_all(ck::CheckpointPath(d, 6));
  Context ctx(Options(d, true));
  ProgramResult resumed = RunProgram(ctx, 4);
  EXPECT_EQ(resumed.weights, reference.weights);
  EXPECT_EQ(resumed.losses, reference.losses);
  EXPECT_TRUE(resumed.replayed[1]);  // after loop 3 < 5
  EXPECT_FALSE(resumed.replayed[2]);
  // Resumed from loop 5; the incomplete 7 was removed before anything was written again.
  EXPECT_TRUE(fs::exists(ck::CheckpointPath(d, 7) + "/MANIFEST"));
}

TEST_F(CheckpointTest, ResumeWithoutCheckpointsStartsFromTheBeginning) {
  ProgramResult reference;
  {
    ContextOptions o;
    o.read_environment = false;
    Context ctx(std::move(o));
    reference = RunProgram(ctx, 2);
  }
  Context ctx(Options(dir_ + "/empty", true));
  ProgramResult r = RunProgram(ctx, 2);
  EXPECT_EQ(r, reference);
  EXPECT_FALSE(r.replayed[0]);
}

// Not RunProgram: its first loop is somewhere else.
void RunAnotherProgram(ContextOptions options) {
  Context ctx(std::move(options));
  auto other = DistArray<float, 1>::dense(ctx, {3});
  parallel_for(other, [](const Key<1>&, float& x) { x += 1; });
}

using CheckpointDeathTest = CheckpointTest;

TEST_F(CheckpointDeathTest, ClearErrors) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  const std::string d = dir_ + "/run";
  {
    Context ctx(Options(d, false));
    RunProgram(ctx, 2);
  }
  // A fresh run into a directory that holds checkpoints would mix two runs.
  EXPECT_DEATH({ Context ctx(Options(d, false)); }, "already holds checkpoints");
  // A directory that cannot be one.
  std::ofstream(dir_ + "/file") << "x";
  EXPECT_DEATH({ Context ctx(Options(dir_ + "/file", false)); }, "not a directory");
  // A damaged file in the newest complete checkpoint is reported by name, never restored.
  const std::string newest = ck::CheckpointPath(d, 3);
  std::string victim;
  for (const auto& e : fs::directory_iterator(newest)) {
    if (e.path().extension() == ".bin") victim = e.path().string();
  }
  ASSERT_FALSE(victim.empty());
  std::string bytes = ReadAll(victim);
  bytes[bytes.size() / 2] ^= 0x55;
  std::ofstream(victim, std::ios::binary | std::ios::trunc) << bytes;
  EXPECT_DEATH(
      {
        Context ctx(Options(d, true));
        RunProgram(ctx, 2);
      },
      "damaged");
  // A program that does not replay the same way (another loop first) is stopped.
  fs::remove_all(d);
  {
    Context ctx(Options(d, false));
    RunProgram(ctx, 2);
  }
  EXPECT_DEATH(RunAnotherProgram(Options(d, true)), "make the same parallel_for calls");
}

}  // namespace
}  // namespace tessera
