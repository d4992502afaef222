#include "tessera/transport/message.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <new>

#include "tessera/transport/frame_handover.h"

#if defined(__SANITIZE_THREAD__)
#define TESSERA_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define TESSERA_TSAN 1
#endif
#endif
#ifdef TESSERA_TSAN
#include <sanitizer/tsan_interface.h>
#endif

namespace tessera {
namespace {

// Rows of large tables make large messages; the default traversal limit (64 MiB) is too small
// for a batch of wide rows but a limit still guards against a hostile length field.
constexpr uint64_t kTraversalLimitWords = uint64_t{1} << 30;

}  // namespace

// Small control messages (acknowledgements, requests for a few rows) fit in this.
constexpr unsigned kDefaultFirstSegmentWords = 128;

// In front of each pooled buffer: its pool (kept alive by the buffer while it is out) and size.
struct FramePool::Header {
  std::shared_ptr<FramePool> pool;
  size_t capacity;
  // Released by the thread that built the frame (Seal), acquired when the buffer comes back
  // (Give): what the builder wrote happens before the next Take's zeroing, also when another
  // thread takes it. ZeroMQ's hand-over in between is such an edge too, but ThreadSanitizer
  // cannot see it (libzmq is not instrumented), and the pool is shared by a client's threads.
  std::atomic<uint32_t> sealed{0};
};
// The data of a pooled buffer starts this far in, aligned for any scalar (and capnp::word).
constexpr size_t kFrameHeaderBytes =
    (sizeof(std::shared_ptr<FramePool>) + sizeof(size_t) + sizeof(std::atomic<uint32_t>) +
     alignof(std::max_align_t) - 1) /
    alignof(std::max_align_t) * alignof(std::max_align_t);

FramePool::Header* FramePool::HeaderOf(void* data) {
  static_assert(sizeof(Header) <= kFrameHeaderBytes &&
                alignof(Header) <= alignof(std::max_align_t));
  return reinterpret_cast<Header*>(static_cast<std::byte*>(data) - kFrameHeaderBytes);
}
void* FramePool::DataOf(Header* header) {
  return reinterpret_cast<std::byte*>(header) + kFrameHeaderBytes;
}

std::shared_ptr<FramePool> FramePool::Create(size_t max_idle_bytes) {
  return std::shared_ptr<FramePool>(new FramePool(max_idle_bytes));
}

FramePool::~FramePool() {
  // Buffers out hold a reference: only idle ones are left.
  for (Header* h : idle_) {
    h->~Header();
    std::free(h);
  }
}

void* FramePool::Take(size_t bytes) {
  Header* header = nullptr;
  {
    std::lock_guard lock(mu_);
    // Frames of a node come in a few sizes: the newest idle buffer that fits is nearly always
    // the last one.
    for (size_t i = idle_.size(); i-- > 0;) {
      if (idle_[i]->capacity >= bytes) {
        header = idle_[i];
        idle_[i] = idle_.back();
        idle_.pop_back();
        idle_bytes_ -= header->capacity;
        break;
      }
    }
  }
  if (header != nullptr) {
    std::memset(DataOf(header), 0, bytes);
  } else {
    // Whole pages, so that frames of nearly the same size share buffers.
    const size_t capacity = (bytes + 4095) / 4096 * 4096;
    void* raw = std::calloc(1, kFrameHeaderBytes + capacity);
    if (raw == nullptr) throw std::bad_alloc();
    header = new (raw) Header{nullptr, capacity, {0}};
  }
  header->pool = shared_from_this();
  return DataOf(header);
}

void FramePool::Seal(void* data) { HeaderOf(data)->sealed.store(1, std::memory_order_release); }

void FramePool::Give(void* data) {
  Header* header = HeaderOf(data);
  (void)header->sealed.load(std::memory_order_acquire);
  // Moved out first: the pool may be freed when this reference goes, after the buffer is kept.
  std::shared_ptr<FramePool> pool = std::move(header->pool);
  pool->Keep(header);
}

void FramePool::FreeFrame(void* data, void* /*hint*/) { Give(data); }

void FramePool::Keep(Header* header) {
  {
    std::lock_guard lock(mu_);
    if (idle_bytes_ + header->capacity <= max_idle_bytes_) {
      idle_bytes_ += header->capacity;
      idle_.push_back(header);
      return;
    }
  }
  header->~Header();
  std::free(header);
}

size_t FramePool::idle_buffers() const {
  std::lock_guard lock(mu_);
  return idle_.size();
}

FrameMessageBuilder::FrameMessageBuilder(unsigned first_segment_words, FramePool* pool)
    : first_words_(std::max(first_segment_words, 8u)), next_words_(first_words_) {
  const size_t bytes = (size_t{first_words_} + 1) * sizeof(capnp::word);
  if (pool != nullptr && bytes >= FramePool::kMinBytes) {
    frame_ = static_cast<capnp::word*>(pool->Take(bytes));  // zeroed, as Cap'n Proto requires
    pooled_ = true;
    return;
  }
  // Cap'n Proto requires zeroed segments.
  frame_ = static_cast<capnp::word*>(std::calloc(first_words_ + 1, sizeof(capnp::word)));
  if (frame_ == nullptr) throw std::bad_alloc();
}

FrameMessageBuilder::~FrameMessageBuilder() noexcept(false) {
  if (frame_ != nullptr && pooled_) {
    FramePool::Give(frame_);
  } else {
    std::free(frame_);
  }
  for (void* p : more_segments_) std::free(p);
}

kj::ArrayPtr<capnp::word> FrameMessageBuilder::allocateSegment(unsigned minimum_size) {
  if (!first_given_ && minimum_size <= first_words_) {
    first_given_ = true;
    return {frame_ + 1, first_words_};
  }
  // Grow like Cap'n Proto's heuristic: each new segment at least as large as all before it.
  unsigned words = std::max(minimum_size, next_words_);
  void* p = std::calloc(words, sizeof(capnp::word));
  if (p == nullptr) throw std::bad_alloc();
  more_segments_.push_back(p);
  next_words_ = words * 2;
  return {static_cast<capnp::word*>(p), words};
}

void MarkFrameSent(const zmq::message_t& frame) {
#ifdef TESSERA_TSAN
  __tsan_release(const_cast<void*>(frame.data()));
#else
  (void)frame;
#endif
}

void MarkFrameReceived(const zmq::message_t& frame) {
#ifdef TESSERA_TSAN
  __tsan_acquire(const_cast<void*>(frame.data()));
#else
  (void)frame;
#endif
}

zmq::message_t FrameMessageBuilder::TakeFrame() {
  auto segments = getSegmentsForOutput();
  if (segments.size() == 1 && segments[0].begin() == frame_ + 1) {
    // Single segment in our buffer: write the segment table (count - 1, then the size in words,
    // little-endian uint32s) in front of it and hand the buffer to the frame.
    uint32_t table[2] = {0, static_cast<uint32_t>(segments[0].size())};
    std::memcpy(frame_, table, sizeof(table));
    size_t bytes = (segments[0].size() + 1) * sizeof(capnp::word);
    capnp::word* data = frame_;
    frame_ = nullptr;
    if (pooled_) {
      FramePool::Seal(data);
      return zmq::message_t(data, bytes, &FramePool::FreeFrame, nullptr);
    }
    return zmq::message_t(
        data, bytes, [](void* d, void*) { std::free(d); }, nullptr);
  }
  size_t words = capnp::computeSerializedSizeInWords(segments);
  zmq::message_t frame(words * sizeof(capnp::word));
  kj::ArrayPtr<capnp::word> out(static_cast<capnp::word*>(frame.data()), words);
  kj::ArrayOutputStream stream(out.asBytes());
  capnp::writeMessage(stream, segments);
  return frame;
}

OutgoingMessage::OutgoingMessage(uint32_t sender, uint64_t request_id, unsigned size_hint_words,
                                 FramePool* pool)
    : builder_(size_hint_words > 0 ? size_hint_words : kDefaultFirstSegmentWords, pool),
      envelope_(builder_.initRoot<proto::Envelope>()) {
  envelope_.setVersion(proto::PROTOCOL_VERSION);
  envelope_.setSender(sender);
  envelope_.setRequestId(request_id);
}

zmq::message_t OutgoingMessage::ToFrame() {
  zmq::message_t frame = builder_.TakeFrame();
  MarkFrameSent(frame);
  return frame;
}

Result<std::unique_ptr<IncomingMessage>> IncomingMessage::Parse(zmq::message_t frame) {
  auto msg = std::unique_ptr<IncomingMessage>(new IncomingMessage());
  msg->frame_ = std::move(frame);
  MarkFrameReceived(msg->frame_);
  size_t size = msg->frame_.size();
  if (size == 0 || size % sizeof(capnp::word) != 0) {
    return Status::DataLoss(fmt::format("frame of {} bytes is not a Cap'n Proto message", size));
  }
  kj::ArrayPtr<const capnp::word> words;
  if (reinterpret_cast<uintptr_t>(msg->frame_.data()) % alignof(capnp::word) == 0) {
    words = {static_cast<const capnp::word*>(msg->frame_.data()), size / sizeof(capnp::word)};
  } else {
    msg->aligned_copy_ = kj::heapArray<capnp::word>(size / sizeof(capnp::word));
    std::memcpy(msg->aligned_copy_.begin(), msg->frame_.data(), size);
    words = msg->aligned_copy_.asPtr();
  }
  try {
    capnp::ReaderOptions options;
    options.traversalLimitInWords = kTraversalLimitWords;
    msg->reader_.emplace(words, options);
    msg->envelope_ = msg->reader_->getRoot<proto::Envelope>();
    uint32_t version = msg->envelope_.getVersion();
    if (version != proto::PROTOCOL_VERSION) {
      return Status::InvalidArgument(
          fmt::format("protocol version {} does not match this node's version {}", version,
                      proto::PROTOCOL_VERSION));
    }
  } catch (const kj::Exception& e) {
    return Status::DataLoss(fmt::format("malformed message: {}", e.getDescription().cStr()));
  }
  return msg;
}

Status StatusFromError(proto::Error::Reader error) {
  std::string msg = error.getMessage();
  switch (error.getCode()) {
    case proto::ErrorCode::INVALID_ARGUMENT:
      return Status::InvalidArgument(msg);
    case proto::ErrorCode::NOT_FOUND:
      return Status::NotFound(msg);
    case proto::ErrorCode::OUT_OF_RANGE:
      return Status::OutOfRange(msg);
    case proto::ErrorCode::FAILED_PRECONDITION:
      return Status::FailedPrecondition(msg);
    case proto::ErrorCode::VERSION_MISMATCH:
      return Status::InvalidArgument(msg);
    case proto::ErrorCode::MALFORMED:
      return Status::DataLoss(msg);
    case proto::ErrorCode::UNAUTHENTICATED:
      return Status::FailedPrecondition(msg);
    case proto::ErrorCode::DATA_LOSS:
      return Status::DataLoss(msg);
    case proto::ErrorCode::PEER_LEFT:
      return Status::Aborted(msg);
  }
  return Status::Internal(msg);
}

void FillError(proto::ErrorCode code, const std::string& message, proto::Error::Builder out) {
  out.setCode(code);
  out.setMessage(message);
}

void FillError(const Status& status, proto::Error::Builder out) {
  proto::ErrorCode code = proto::ErrorCode::INVALID_ARGUMENT;
  switch (status.code()) {
    case StatusCode::kNotFound:
      code = proto::ErrorCode::NOT_FOUND;
      break;
    case StatusCode::kOutOfRange:
      code = proto::ErrorCode::OUT_OF_RANGE;
      break;
    case StatusCode::kFailedPrecondition:
      code = proto::ErrorCode::FAILED_PRECONDITION;
      break;
    case StatusCode::kDataLoss:
      code = proto::ErrorCode::DATA_LOSS;
      break;
    case StatusCode::kAborted:
      code = proto::ErrorCode::PEER_LEFT;
      break;
    default:
      break;
  }
  FillError(code, status.message(), out);
}

}  // namespace tessera
