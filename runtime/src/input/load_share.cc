#include "input/load_share.h"

#include <capnp/message.h>
#include <capnp/serialize.h>
#include <kj/io.h>
#include <fmt/format.h>

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>

#include "exchange/capnp_util.h"
#include "tessera/proto/tessera.capnp.h"
#include "tessera/transport/endpoint.h"

namespace tessera::internal {

proto::ErrorCode ErrorCodeToProto(StatusCode code) {
  switch (code) {
    case StatusCode::kNotFound: return proto::ErrorCode::NOT_FOUND;
    case StatusCode::kOutOfRange: return proto::ErrorCode::OUT_OF_RANGE;
    case StatusCode::kFailedPrecondition: return proto::ErrorCode::FAILED_PRECONDITION;
    case StatusCode::kDataLoss: return proto::ErrorCode::DATA_LOSS;
    case StatusCode::kInvalidArgument:
    default: return proto::ErrorCode::INVALID_ARGUMENT;  // the loaders' other codes
  }
}

Status StatusFromProto(proto::ErrorCode code, std::string message) {
  switch (code) {
    case proto::ErrorCode::NOT_FOUND: return Status::NotFound(std::move(message));
    case proto::ErrorCode::OUT_OF_RANGE: return Status::OutOfRange(std::move(message));
    case proto::ErrorCode::FAILED_PRECONDITION: return Status::FailedPrecondition(std::move(message));
    case proto::ErrorCode::DATA_LOSS: return Status::DataLoss(std::move(message));
    default: return Status::InvalidArgument(std::move(message));
  }
}

// The message flat, as capnp::messageToFlatArray lays it out, written straight into the string.
std::string FlattenMessage(capnp::MessageBuilder& message) {
  const auto segments = message.getSegmentsForOutput();
  std::string out(capnp::computeSerializedSizeInWords(segments) * sizeof(capnp::word), '\0');
  kj::ArrayOutputStream stream(
      kj::arrayPtr(reinterpret_cast<kj::byte*>(out.data()), out.size()));
  capnp::writeMessage(stream, segments);
  return out;
}

capnp::ReaderOptions PeerPayloadOptions(size_t words) {
  capnp::ReaderOptions options;
  options.traversalLimitInWords = std::min<uint64_t>(
      2 * static_cast<uint64_t>(words) + 64, kMaxDataMessageBytes / sizeof(capnp::word));
  return options;
}

namespace {

void SetError(const Status& error, proto::LoadedShare::Builder share) {
  if (error.ok()) return;
  share.setError(error.message().empty() ? std::string(StatusCodeName(error.code()))
                                         : error.message());
  share.setErrorCode(ErrorCodeToProto(error.code()));
}

void EncodeRatings(const std::vector<RatingRecord>& records, proto::RatingRecords::Builder out) {
  const auto n = static_cast<unsigned>(records.size());
  auto users = out.initUsers(n);
  auto items = out.initItems(n);
  auto values = out.initValues(n);
  for (unsigned i = 0; i < n; ++i) {
    users.set(i, records[i].user);
    items.set(i, records[i].item);
    values.set(i, records[i].value);
  }
}

Status DecodeRatings(proto::RatingRecords::Reader in, std::vector<RatingRecord>* out) {
  const auto users = in.getUsers();
  const auto items = in.getItems();
  const auto values = in.getValues();
  if (items.size() != users.size() || values.size() != users.size()) {
    return Status::DataLoss(fmt::format("loaded share: {} users, {} items, {} values", users.size(),
                                        items.size(), values.size()));
  }
  if (out->capacity() < out->size() + users.size()) {
    out->reserve(std::max(out->size() + users.size(), 2 * out->capacity()));
  }
  for (unsigned i = 0; i < users.size(); ++i) out->push_back({users[i], items[i], values[i]});
  return Status::Ok();
}

}  // namespace

std::string EncodeShare(const RatingShare& share) {
  capnp::MallocMessageBuilder message(
      static_cast<unsigned>(16 + 3 * (share.train.size() + share.test.size())));
  auto root = message.initRoot<proto::LoadedShare>();
  auto triples = root.initTriples();
  if (!share.error.ok()) {
    SetError(share.error, root);
    root.setErrorInTest(share.error_in_test);
  } else {
    EncodeRatings(share.train, triples.initTrain());
    EncodeRatings(share.test, triples.initTest());
  }
  return FlattenMessage(message);
}

std::string EncodeShare(const DocwordShare& share) {
  const auto n = static_cast<unsigned>(share.error.ok() ? share.entries.size() : 0);
  capnp::MallocMessageBuilder message(static_cast<unsigned>(16 + 3 * n));
  auto root = message.initRoot<proto::LoadedShare>();
  auto docword = root.initDocword();
  SetError(share.error, root);
  auto docs = docword.initDocs(n);
  auto words = docword.initWords(n);
  auto counts = docword.initCounts(n);
  for (unsigned i = 0; i < n; ++i) {
    docs.set(i, share.entries[i].doc);
    words.set(i, share.entries[i].word);
    counts.set(i, share.entries[i].count);
  }
  return FlattenMessage(message);
}

Status MergeShare(std::string_view bytes, RatingShare* into) {
  return WithPeerMessage<proto::LoadedShare>(bytes, "loaded share", [into](proto::LoadedShare::Reader share) -> Status {
    if (!share.isTriples()) return Status::DataLoss("loaded share: expected ratings");
    if (share.getError().size() > 0) {
      const bool in_test = share.getErrorInTest();
      if (into->error.ok() || (into->error_in_test && !in_test)) {
        into->error = StatusFromProto(share.getErrorCode(), share.getError());
        into->error_in_test = in_test;
      }
      return Status::Ok();
    }
    TESSERA_RETURN_IF_ERROR(DecodeRatings(share.getTriples().getTrain(), &into->train));
    return DecodeRatings(share.getTriples().getTest(), &into->test);
  });
}

Status MergeShare(std::string_view bytes, DocwordShare* into) {
  return WithPeerMessage<proto::LoadedShare>(bytes, "loaded share", [into](proto::LoadedShare::Reader share) -> Status {
    if (!share.isDocword()) return Status::DataLoss("loaded share: expected docword entries");
    if (share.getError().size() > 0) {
      if (into->error.ok()) into->error = StatusFromProto(share.getErrorCode(), share.getError());
      return Status::Ok();
    }
    const auto docs = share.getDocword().getDocs();
    const auto words = share.getDocword().getWords();
    const auto counts = share.getDocword().getCounts();
    if (words.size() != docs.size() || counts.size() != docs.size()) {
      return Status::DataLoss(fmt::format("loaded share: {} docs, {} words, {} counts", docs.size(),
                                          words.size(), counts.size()));
    }
    if (into->entries.capacity() < into->entries.size() + docs.size()) {
      into->entries.reserve(std::max(into->entries.size() + docs.size(), 2 * into->entries.capacity()));
    }
    for (unsigned i = 0; i < docs.size(); ++i) into->entries.push_back({docs[i], words[i], counts[i]});
    return Status::Ok();
  });
}

void ReleasePages(const void* begin, size_t bytes) {
  static const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const uintptr_t lo = (reinterpret_cast<uintptr_t>(begin) + page - 1) & ~(page - 1);
  const uintptr_t hi = (reinterpret_cast<uintptr_t>(begin) + bytes) & ~(page - 1);
  if (hi > lo) madvise(reinterpret_cast<void*>(lo), hi - lo, MADV_DONTNEED);
}

ReadRange WorkerRange(int64_t size, int rank, int num_workers) {
  // floor(size * r / num_workers) without overflow: size = q * num_workers + m.
  auto cut = [&](int r) {
    return size / num_workers * r + size % num_workers * r / num_workers;
  };
  return ReadRange{cut(rank), rank + 1 >= num_workers ? -1 : cut(rank + 1)};
}

}  // namespace tessera::internal
