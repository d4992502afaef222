// EncodePatches: patches that carry their bytes and patches that read them from the array
// (PatchData::source) encode to the same message.
#include "distributed/patch.h"

#include <gtest/gtest.h>

#include <cstring>
#include <numeric>
#include <vector>

#include "tessera/transport/message.h"

namespace tessera::internal {
namespace {

std::vector<char> Bytes(const std::vector<float>& v, uint64_t begin, uint64_t count) {
  std::vector<char> out(count * sizeof(float));
  std::memcpy(out.data(), v.data() + begin, out.size());
  return out;
}

TEST(PatchTest, SourcePatchesEncodeAsTheirCopies) {
  std::vector<float> array(10000);
  std::iota(array.begin(), array.end(), 0.5f);
  PatchData copied{.array = 3, .layout = 7, .element_bytes = sizeof(float)};
  copied.runs = {10, 5, 2000, 3000};
  copied.values = Bytes(array, 10, 5);
  const std::vector<char> tail = Bytes(array, 2000, 3000);
  copied.values.insert(copied.values.end(), tail.begin(), tail.end());
  PatchData read = copied;
  read.values.clear();
  read.source = reinterpret_cast<const char*>(array.data());
  EXPECT_EQ(read.value_bytes(), copied.value_bytes());
  EXPECT_EQ(read.value_bytes(), 3005 * sizeof(float));

  zmq::message_t a = EncodePatches(1, 9, 4, {copied});
  zmq::message_t b = EncodePatches(1, 9, 4, {read});
  ASSERT_EQ(a.size(), b.size());
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size()), 0);

  auto msg = IncomingMessage::Parse(std::move(b));
  ASSERT_TRUE(msg.ok()) << msg.status().ToString();
  auto patches = (*msg)->envelope().getBody().getPeer().getPatches();
  ASSERT_EQ(patches.size(), 1u);
  auto values = patches[0].getValues();
  ASSERT_EQ(values.size(), copied.values.size());
  EXPECT_EQ(std::memcmp(values.begin(), copied.values.data(), values.size()), 0);
}

TEST(PatchTest, PerPeerPatchesFollowTheSharedOnes) {
  std::vector<float> array(64, 1.0f);
  PatchData shared{.array = 1, .element_bytes = sizeof(float)};
  shared.runs = {0, 8};
  shared.source = reinterpret_cast<const char*>(array.data());
  PatchData own{.array = 2, .element_bytes = sizeof(float)};
  own.runs = {8, 4};
  own.values = Bytes(array, 8, 4);
  std::vector<PatchData> extra = {own};
  auto msg = IncomingMessage::Parse(EncodePatches(0, 1, 2, {shared}, &extra));
  ASSERT_TRUE(msg.ok()) << msg.status().ToString();
  auto patches = (*msg)->envelope().getBody().getPeer().getPatches();
  ASSERT_EQ(patches.size(), 2u);
  EXPECT_EQ(patches[0].getArray(), 1);
  EXPECT_EQ(patches[0].getValues().size(), 8 * sizeof(float));
  EXPECT_EQ(patches[1].getArray(), 2);
  EXPECT_EQ(patches[1].getValues().size(), 4 * sizeof(float));
}

}  // namespace
}  // namespace tessera::internal
