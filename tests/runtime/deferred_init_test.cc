// Creation without touching memory: zeroed dense storage that costs nothing until written, and
// random values computable per element (what lets a worker compute only the rows it holds).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <fstream>

#include "tessera/tessera.h"

namespace tessera {
namespace {

int64_t ResidentBytes() {
  std::ifstream statm("/proc/self/statm");
  int64_t size = 0, resident = 0;
  statm >> size >> resident;
  return resident * sysconf(_SC_PAGESIZE);
}

TEST(DeferredInitTest, ElementsOfRandomAreTheGeneratorsSequenceComputedOneByOne) {
  uint64_t state = 42;
  for (uint64_t i = 0; i < 1000; ++i) {
    EXPECT_EQ(internal::SplitMix64At(42, i), internal::SplitMix64(state)) << "element " << i;
  }
  ContextOptions options;
  options.read_environment = false;
  Context ctx(std::move(options));
  auto a = DistArray<int64_t, 1>::random(ctx, {100}, 7, 0, 1000);
  uint64_t s = 7;
  for (int64_t i = 0; i < 100; ++i) {
    EXPECT_EQ(a(i), static_cast<int64_t>(internal::SplitMix64(s) % 1001)) << "element " << i;
  }
  EXPECT_FALSE(a.base().deferred_init()) << "serial mode computes everything at creation";
}

TEST(DeferredInitTest, ALargeDenseArrayCostsNoMemoryUntilWritten) {
  ContextOptions options;
  options.read_environment = false;
  Context ctx(std::move(options));
  const int64_t before = ResidentBytes();
  auto big = DistArray<float, 2>::dense(ctx, {1 << 16, 1024});  // 256 MiB of zeros
  const int64_t after = ResidentBytes();
  EXPECT_LT(after - before, int64_t{16} << 20) << "resident growth in bytes";
  EXPECT_EQ(big(12345, 678), 0.0f);
  EXPECT_EQ(big((1 << 16) - 1, 1023), 0.0f);
  for (int64_t j = 0; j < 1024; ++j) big(7, j) = 1.0f;
  EXPECT_EQ(big(7, 1023), 1.0f);
}

}  // namespace
}  // namespace tessera
