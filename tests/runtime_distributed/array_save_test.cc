// The collective save's protocol (runtime/src/distributed/array_save.h) on meshes in this
// process: rows spread over the workers in any layout -- some held by several, some by a worker
// other than 0, some held by nobody (computed by worker 0) -- stream in chunks as small as one
// row with one or two chunks in flight, and worker 0 writes exactly the file a local save of the
// whole array writes; every worker returns worker 0's result, an error included. A partitioned
// sparse array's shares (SaveRecords) merge by place into the file of the whole array, whether
// the serial order is the keys' or another, with shares empty, interleaved or in one piece.
#include "distributed/array_save.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <memory>
#include <numeric>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>
#include <zmq.hpp>

#include "tessera/array_io.h"
#include "tessera/server/coordinator.h"
#include "tessera/tessera.h"

namespace tessera::internal {
namespace {

class ArraySaveTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/tessera-array-save-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  void StartCoordinator(int workers) {
    CoordinatorOptions co;
    co.listen = "tcp://127.0.0.1:0";
    co.num_servers = 1;  // none start: the mesh does not need the servers
    co.num_workers = workers;
    coordinator_ = std::make_unique<Coordinator>(co, zmq_);
    ASSERT_TRUE(coordinator_->Start().ok());
  }

  std::vector<std::unique_ptr<PeerMesh>> ConnectAll(int workers) {
    std::vector<std::future<Result<std::unique_ptr<PeerMesh>>>> pending;
    for (int r = 0; r < workers; ++r) {
      pending.push_back(std::async(std::launch::async, [this, r, workers] {
        PeerMeshOptions o;
        o.rank = r;
        o.num_workers = workers;
        o.coordinator = coordinator_->endpoint();
        o.timeout = std::chrono::seconds(20);
        return PeerMesh::Connect(o, zmq_);
      }));
    }
    std::vector<std::unique_ptr<PeerMesh>> meshes;
    for (auto& p : pending) {
      auto m = p.get();
      EXPECT_TRUE(m.ok()) << m.status().ToString();
      meshes.push_back(m.ok() ? std::move(m).value() : nullptr);
    }
    return meshes;
  }

  static std::string Read(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }

  RowSaveOptions SaveOptions(bool text, size_t chunk, int window) const {
    RowSaveOptions o;
    o.path = dir_ + "/saved";
    o.text = text;
    o.chunk_bytes = chunk;
    o.window = window;
    return o;
  }

  // f(r) on a thread per worker r, as the workers of a job run at once; their statuses by rank.
  static std::vector<Status> OnEveryWorker(int workers, const std::function<Status(int)>& f) {
    std::vector<std::future<Status>> pending;
    for (int r = 0; r < workers; ++r) pending.push_back(std::async(std::launch::async, f, r));
    std::vector<Status> out;
    for (auto& p : pending) out.push_back(p.get());
    return out;
  }

  static std::unique_ptr<Context> MakeContext() {
    ContextOptions co;
    co.read_environment = false;
    return std::make_unique<Context>(std::move(co));
  }

  std::string dir_;
  zmq::context_t zmq_;
  std::unique_ptr<Coordinator> coordinator_;
};

TEST_F(ArraySaveTest, RowsFromTheirHoldersMakeTheFileOfAWholeCopyForEveryChunkAndWindow) {
  constexpr int kWorkers = 3;
  constexpr int64_t kRows = 23, kCols = 3;
  // Rows 0-4: held by 0 and 2; 5-9: by 1 only; 10-12: nobody (computed by worker 0); 13-20: by 2;
  // 21-22: everyone.
  const std::vector<SavedRows> rows = {
      {0, 5, 0b101}, {5, 10, 0b010}, {10, 13, 0}, {13, 21, 0b100}, {21, 23, 0b111}};
  // One Context per worker, as in a job: each worker's array has the same creation number.
  std::vector<std::unique_ptr<Context>> contexts;
  for (int w = 0; w <= kWorkers; ++w) contexts.push_back(MakeContext());
  auto whole = DistArray<double, 2>::random(*contexts[kWorkers], {kRows, kCols}, 5, -1.0, 1.0);
  ASSERT_TRUE(save_array(whole, dir_ + "/whole.tarr").ok());
  ASSERT_TRUE(save_array_text(whole, dir_ + "/whole.txt").ok());
  // Each worker's copy: the rows it holds, and garbage elsewhere (the computed rows too: worker
  // 0 must compute them from the recipe, which for an eager array is the stored values, so its
  // copy keeps them).
  std::vector<DistArray<double, 2>> arrays;
  for (int w = 0; w < kWorkers; ++w) {
    arrays.push_back(DistArray<double, 2>::random(*contexts[w], {kRows, kCols}, 5, -1.0, 1.0));
    for (const SavedRows& r : rows) {
      const bool keep = ((r.holders >> w) & 1) != 0 || (r.holders == 0 && w == 0);
      if (keep) continue;
      for (int64_t i = r.lo; i < r.hi; ++i) {
        for (int64_t j = 0; j < kCols; ++j) arrays.back()(i, j) = 1e300;
      }
    }
  }
  StartCoordinator(kWorkers);
  auto meshes = ConnectAll(kWorkers);
  uint64_t tag = 7;
  for (size_t chunk : {kCols * sizeof(double), 2 * kCols * sizeof(double), size_t{1} << 20}) {
    for (int window : {1, 2}) {
      for (bool text : {false, true}) {
        const RowSaveOptions o = SaveOptions(text, chunk, window);
        ++tag;
        for (const Status& s : OnEveryWorker(kWorkers, [&](int r) {
               return SaveRows(*meshes[r], tag, arrays[r].base(), rows, o);
             })) {
          EXPECT_TRUE(s.ok()) << s.ToString();
        }
        EXPECT_EQ(Read(o.path), Read(dir_ + (text ? "/whole.txt" : "/whole.tarr")))
            << "chunk " << chunk << " window " << window << (text ? " text" : " binary");
        EXPECT_FALSE(std::filesystem::exists(o.path + ".tmp"));
      }
    }
  }
}

TEST_F(ArraySaveTest, SparseSharesMergeByPlaceIntoTheFileOfTheWholeArray) {
  constexpr int kWorkers = 4;
  constexpr int64_t kRows = 9, kCols = 7;
  // Worker w holds the elements with key[0] in [bounds[w], bounds[w + 1]); worker 1 none.
  const std::vector<int64_t> bounds = {0, 2, 2, 6, kRows};
  std::vector<std::unique_ptr<Context>> contexts;
  for (int w = 0; w <= kWorkers; ++w) contexts.push_back(MakeContext());
  StartCoordinator(kWorkers);
  auto meshes = ConnectAll(kWorkers);
  uint64_t tag = 40;
  std::mt19937 rng(11);
  for (bool key_order : {true, false}) {
    // The whole array: 40 of the 63 keys, stored in the keys' order or shuffled (another serial
    // order), saved locally for reference.
    std::vector<int64_t> linear(kRows * kCols);
    std::iota(linear.begin(), linear.end(), 0);
    std::shuffle(linear.begin(), linear.end(), rng);
    linear.resize(40);
    if (key_order) std::sort(linear.begin(), linear.end());
    auto whole = DistArray<double, 2>::sparse(*contexts[kWorkers], {kRows, kCols});
    std::vector<double> values;
    for (int64_t l : linear) {
      values.push_back(std::uniform_real_distribution<double>(-1, 1)(rng));
      whole.append_unchecked({{l / kCols, l % kCols}}, values.back());
    }
    ASSERT_TRUE(save_array(whole, dir_ + "/whole.tarr").ok());
    ASSERT_TRUE(save_array_text(whole, dir_ + "/whole.txt").ok());
    // Each worker's share, with the places a partitioned array gives its elements: the keys'
    // linear index when in key order (then implicit), the serial position otherwise.
    auto make_shares = [&](int64_t global_size) {
      std::vector<DistArray<double, 2>> shares;
      for (int w = 0; w < kWorkers; ++w) {
        shares.push_back(DistArray<double, 2>::sparse(*contexts[w], {kRows, kCols}));
        RecordBatch batch;
        for (size_t i = 0; i < linear.size(); ++i) {
          const int64_t row = linear[i] / kCols;
          if (row < bounds[w] || row >= bounds[w + 1]) continue;
          batch.keys.push_back(row);
          batch.keys.push_back(linear[i] % kCols);
          const char* v = reinterpret_cast<const char*>(&values[i]);
          batch.values.insert(batch.values.end(), v, v + sizeof(double));
          batch.order.push_back(key_order ? RecordOrder{0, static_cast<uint64_t>(linear[i])}
                                          : RecordOrder{1, static_cast<uint64_t>(i)});
        }
        std::vector<RecordBatch> in;
        in.push_back(std::move(batch));
        const RecordPartition partition{0, bounds[w], bounds[w + 1], global_size};
        // The executor's side of the storage: the test stands in for it.
        const_cast<ArrayBase&>(shares.back().base()).ImportRecords(std::move(in), &partition);
      }
      return shares;
    };
    const std::vector<DistArray<double, 2>> shares =
        make_shares(static_cast<int64_t>(linear.size()));
    for (size_t chunk : {size_t{1}, size_t{60}, size_t{1} << 20}) {
      for (int window : {1, 2}) {
        for (bool text : {false, true}) {
          const RowSaveOptions o = SaveOptions(text, chunk, window);
          ++tag;
          for (const Status& s : OnEveryWorker(kWorkers, [&](int r) {
                 return SaveRecords(*meshes[r], tag, shares[r].base(), o);
               })) {
            EXPECT_TRUE(s.ok()) << s.ToString();
          }
          EXPECT_EQ(Read(o.path), Read(dir_ + (text ? "/whole.txt" : "/whole.tarr")))
              << (key_order ? "key order" : "shuffled") << ", chunk " << chunk << " window "
              << window << (text ? " text" : " binary");
          EXPECT_FALSE(std::filesystem::exists(o.path + ".tmp"));
        }
      }
    }
    // Shares that do not add up to the array (as if a worker had lost an element): every worker
    // fails, and no file is left.
    const std::vector<DistArray<double, 2>> short_shares =
        make_shares(static_cast<int64_t>(linear.size()) + 1);
    RowSaveOptions o;
    o.path = dir_ + "/short.tarr";
    ++tag;
    for (const Status& s : OnEveryWorker(kWorkers, [&](int r) {
           return SaveRecords(*meshes[r], tag, short_shares[r].base(), o);
         })) {
      EXPECT_EQ(s.code(), StatusCode::kInternal) << s.ToString();
      EXPECT_NE(s.message().find("the workers hold 40 elements of a partitioned array of 41"),
                std::string::npos)
          << s.message();
    }
    EXPECT_FALSE(std::filesystem::exists(o.path));
    EXPECT_FALSE(std::filesystem::exists(o.path + ".tmp"));
  }
}

TEST_F(ArraySaveTest, WorkerZerosErrorIsEveryWorkersAndTheDisagreementIsNamed) {
  constexpr int kWorkers = 2;
  std::vector<std::unique_ptr<Context>> contexts;
  std::vector<DistArray<float, 2>> arrays;
  for (int w = 0; w < kWorkers; ++w) {
    contexts.push_back(MakeContext());
    arrays.push_back(DistArray<float, 2>::filled(*contexts.back(), {4, 2}, 1.0f));
  }
  StartCoordinator(kWorkers);
  auto meshes = ConnectAll(kWorkers);
  const std::vector<SavedRows> rows = {{0, 2, 0b01}, {2, 4, 0b10}};
  RowSaveOptions o;
  o.path = dir_ + "/missing/dir/A.tarr";
  std::vector<Status> results = OnEveryWorker(
      kWorkers, [&](int r) { return SaveRows(*meshes[r], 1, arrays[r].base(), rows, o); });
  for (int r = 0; r < kWorkers; ++r) {
    const Status& s = results[static_cast<size_t>(r)];
    EXPECT_EQ(s.code(), StatusCode::kNotFound) << "worker " << r << ": " << s.ToString();
    EXPECT_NE(s.message().find("cannot create '" + o.path + "'"), std::string::npos) << s.message();
  }
  // Two workers saving to different paths: a clear disagreement on every worker, no file.
  results = OnEveryWorker(kWorkers, [&](int r) {
    RowSaveOptions mine = o;
    mine.path = dir_ + "/A" + std::to_string(r) + ".tarr";
    return SaveRows(*meshes[r], 2, arrays[r].base(), rows, mine);
  });
  for (const Status& s : results) {
    EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s.ToString();
    EXPECT_NE(s.message().find("the workers disagree on the save"), std::string::npos)
        << s.message();
  }
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/A0.tarr"));
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/A0.tarr.tmp"));
}

}  // namespace
}  // namespace tessera::internal
