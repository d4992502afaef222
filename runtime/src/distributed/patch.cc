#include "distributed/patch.h"

#include "tessera/transport/message.h"

namespace tessera::internal {

zmq::message_t EncodePatches(uint32_t rank, uint64_t tag, int64_t step,
                             const std::vector<PatchData>& first,
                             const std::vector<PatchData>* second) {
  OutgoingMessage msg(rank, 0);
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
    out.setValues(
        kj::arrayPtr(reinterpret_cast<const kj::byte*>(p.values.data()), p.values.size()));
  }
  return msg.ToFrame();
}

}  // namespace tessera::internal
