// Helpers shared by the runtime's Cap'n Proto messages (loaders: load_share.cc,
// partitioned_load.cc; partitioned arrays: record_exchange.cc).
#ifndef TESSERA_RUNTIME_SRC_EXCHANGE_CAPNP_UTIL_H_
#define TESSERA_RUNTIME_SRC_EXCHANGE_CAPNP_UTIL_H_

#include <capnp/message.h>
#include <capnp/serialize.h>
#include <fmt/format.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "tessera/common/status.h"
#include "tessera/proto/tessera.capnp.h"

namespace tessera::internal {

// Shared by the loaders' and the partitioned arrays' Cap'n Proto messages: a loader error's code
// on the wire and back (codes the loaders do not produce travel as InvalidArgument), and a built
// message flat, as capnp::messageToFlatArray lays it out, written straight into a string.
proto::ErrorCode ErrorCodeToProto(StatusCode code);
Status StatusFromProto(proto::ErrorCode code, std::string message);
std::string FlattenMessage(capnp::MessageBuilder& message);

// How far a reader may walk a payload of `words` words that a peer sent (an all-gather or
// all-to-all part). Every reader of such a payload takes each of its lists once, so a legitimate
// one is walked at most once over; the limit is twice its size, and never more than the largest
// legitimate payload: one peer-mesh data message, kMaxDataMessageBytes (transport/endpoint.h,
// 2^30 words). A payload that points into itself to be walked further, or claims a list of
// more empty elements than that, fails its read (kj "traversal limit"), which the readers
// return as DataLoss.
capnp::ReaderOptions PeerPayloadOptions(size_t words);

// Reads a message of type M from a peer's payload `bytes` -- in place when the bytes are
// word-aligned (heap strings are), else from a copy -- and returns use(its root). DataLoss naming
// `what` for bytes that are not whole words or do not read as M.
template <typename M, typename Fn>
Status WithPeerMessage(std::string_view bytes, std::string_view what, Fn&& use) {
  if (bytes.empty() || bytes.size() % sizeof(capnp::word) != 0) {
    return Status::DataLoss(
        fmt::format("{} of {} bytes is not a Cap'n Proto message", what, bytes.size()));
  }
  kj::Array<capnp::word> copy;
  kj::ArrayPtr<const capnp::word> words;
  if (reinterpret_cast<uintptr_t>(bytes.data()) % alignof(capnp::word) == 0) {
    words = {reinterpret_cast<const capnp::word*>(bytes.data()), bytes.size() / sizeof(capnp::word)};
  } else {
    copy = kj::heapArray<capnp::word>(bytes.size() / sizeof(capnp::word));
    std::memcpy(copy.begin(), bytes.data(), bytes.size());
    words = copy.asPtr();
  }
  try {
    capnp::FlatArrayMessageReader reader(words, PeerPayloadOptions(words.size()));
    return use(reader.getRoot<M>());
  } catch (const kj::Exception& e) {
    return Status::DataLoss(fmt::format("malformed {}: {}", what, e.getDescription().cStr()));
  }
}

}  // namespace tessera::internal

#endif  // TESSERA_RUNTIME_SRC_EXCHANGE_CAPNP_UTIL_H_
