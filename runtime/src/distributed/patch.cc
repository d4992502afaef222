#include "distributed/patch.h"

#include <capnp/message.h>

#include <cstring>

#include "tessera/transport/message.h"

namespace tessera::internal {

size_t PatchData::value_bytes() const {
  if (source == nullptr) return values.size();
  size_t elements = 0;
  for (size_t r = 1; r < runs.size(); r += 2) elements += runs[r];
  return elements * element_bytes;
}

namespace {

// An upper bound on the encoded message in words: the envelope, each patch's struct and list
// headers, its runs and its values (padded to words), so that the message is built in one
// segment and becomes a frame without a copy.
size_t SizeInWords(const std::vector<PatchData>& first, const std::vector<PatchData>* second) {
  constexpr size_t kEnvelopeWords = 32;  // envelope, peer body, patch list header
  constexpr size_t kPatchWords = 16;     // a patch's struct and its two list pointers
  size_t words = kEnvelopeWords;
  auto add = [&](const std::vector<PatchData>& patches) {
    for (const PatchData& p : patches) {
      words += kPatchWords + p.runs.size() + (p.value_bytes() + 7) / 8;
    }
  };
  add(first);
  if (second != nullptr) add(*second);
  return words;
}

}  // namespace

zmq::message_t EncodePatches(uint32_t rank, uint64_t tag, int64_t step,
                             const std::vector<PatchData>& first,
                             const std::vector<PatchData>* second) {
  const size_t words = SizeInWords(first, second);
  // Larger than one segment can be (2^29 words): built in several, as Cap'n Proto grows it.
  const unsigned hint = words < (size_t{1} << 28) ? static_cast<unsigned>(words) : 0;
  OutgoingMessage msg(rank, 0, hint);
  auto peer = msg.envelope().getBody().initPeer();
  peer.setTag(tag);
  peer.setStep(step);
  const size_t n = first.size() + (second != nullptr ? second->size() : 0);
  auto list = peer.initPatches(static_cast<unsigned>(n));
  for (size_t i = 0; i < n; ++i) {
    const PatchData& p = i < first.size() ? first[i] : (*second)[i - first.size()];
    auto out = list[static_cast<unsigned>(i)];
    out.setArray(p.array);
    out.setLayoutVersion(p.layout);
    out.setAdditive(p.additive);
    out.setElementBytes(static_cast<uint32_t>(p.element_bytes));
    auto runs = out.initRuns(static_cast<unsigned>(p.runs.size()));
    for (size_t r = 0; r < p.runs.size(); ++r) runs.set(static_cast<unsigned>(r), p.runs[r]);
    if (p.source == nullptr) {
      out.setValues(
          kj::arrayPtr(reinterpret_cast<const kj::byte*>(p.values.data()), p.values.size()));
      continue;
    }
    auto values = out.initValues(static_cast<unsigned>(p.value_bytes()));
    kj::byte* at = values.begin();
    for (size_t r = 0; r + 1 < p.runs.size(); r += 2) {
      const size_t bytes = p.runs[r + 1] * p.element_bytes;
      std::memcpy(at, p.source + p.runs[r] * p.element_bytes, bytes);
      at += bytes;
    }
  }
  return msg.ToFrame();
}

}  // namespace tessera::internal
