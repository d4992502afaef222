// Envelopes on the wire: Cap'n Proto messages carried in single ZeroMQ frames.
//
// Encoding copies the builder's segments once into the frame. Decoding validates the framing
// and the protocol version up front; Cap'n Proto validates the rest lazily, so handlers that walk
// a received message must catch kj::Exception (see SafeDispatch in dispatch.h).
#ifndef TESSERA_TRANSPORT_MESSAGE_H_
#define TESSERA_TRANSPORT_MESSAGE_H_

#include <capnp/message.h>
#include <capnp/serialize.h>
#include <kj/array.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>
#include <zmq.hpp>

#include "tessera/common/status.h"
#include "tessera/proto/tessera.capnp.h"

namespace tessera {

// Buffers for large outgoing frames, reused rather than returned to the allocator. A thread that
// builds large messages at a high rate while ZeroMQ's I/O thread frees them once sent (a server
// answering batched reads) otherwise has glibc trim the builder's heap after the frees and fault
// fresh pages in for the next frames: a page fault per 4 KiB of every frame.
// Thread-safe: frames are taken by the building thread and given back by ZeroMQ's I/O thread.
// A frame holds a reference to its pool, so frames may outlive the pool's owner.
class FramePool : public std::enable_shared_from_this<FramePool> {
 public:
  // Frames smaller than this are not pooled (the allocator's own caches serve them well;
  // measured for a client's read requests, pooling them gained nothing).
  static constexpr size_t kMinBytes = 4096;
  // Keeps at most `max_idle_bytes` of buffers waiting to be reused; more are freed.
  static std::shared_ptr<FramePool> Create(size_t max_idle_bytes = size_t{64} << 20);
  ~FramePool();
  FramePool(const FramePool&) = delete;
  FramePool& operator=(const FramePool&) = delete;

  // A zeroed buffer of at least `bytes`, aligned for capnp::word, to be given back with Give
  // (or by a frame made with FreeFrame). Throws std::bad_alloc when memory runs out.
  // REQUIRES: bytes >= kMinBytes.
  void* Take(size_t bytes);
  // Marks a buffer from Take as handed over to another thread (a frame going to ZeroMQ): what
  // the caller wrote in it happens before whatever follows its Give.
  static void Seal(void* data);
  // Gives back a buffer from Take (of any pool).
  static void Give(void* data);
  // A zmq::message_t free function for a frame whose data came from Take.
  static void FreeFrame(void* data, void* hint);

  // Buffers waiting to be reused (for tests).
  size_t idle_buffers() const;

 private:
  explicit FramePool(size_t max_idle_bytes) : max_idle_bytes_(max_idle_bytes) {}
  struct Header;  // in front of each buffer's data
  static Header* HeaderOf(void* data);
  static void* DataOf(Header* header);
  void Keep(Header* header);
  const size_t max_idle_bytes_;
  mutable std::mutex mu_;
  std::vector<Header*> idle_;  // guarded by mu_
  size_t idle_bytes_ = 0;      // guarded by mu_
};

// A Cap'n Proto builder whose first segment sits in a buffer laid out as a whole frame: one word
// of segment table, then the segment. A message that fits its first segment becomes a ZeroMQ
// frame without a copy (the frame takes the buffer); a larger one is copied once as usual.
class FrameMessageBuilder : public capnp::MessageBuilder {
 public:
  // `pool`, if not null, provides the first segment's buffer when it is large (FramePool); it
  // must outlive the builder (the frame it makes holds a reference of its own).
  explicit FrameMessageBuilder(unsigned first_segment_words, FramePool* pool = nullptr);
  ~FrameMessageBuilder() noexcept(false) override;
  FrameMessageBuilder(const FrameMessageBuilder&) = delete;
  FrameMessageBuilder& operator=(const FrameMessageBuilder&) = delete;

  kj::ArrayPtr<capnp::word> allocateSegment(unsigned minimum_size) override;
  // Serializes into one frame. The builder may not be used afterwards.
  zmq::message_t TakeFrame();

 private:
  capnp::word* frame_;   // segment table word + first segment; owned until TakeFrame
  bool pooled_ = false;  // frame_ came from a FramePool
  unsigned first_words_;
  bool first_given_ = false;
  std::vector<void*> more_segments_;
  unsigned next_words_;
};

// A builder whose root is an Envelope stamped with the protocol version, sender and request id.
class OutgoingMessage {
 public:
  // `size_hint_words`: expected message size, so large messages are built in one segment and
  // become a frame without a copy (0: a small first segment, grown as needed). `pool`: see
  // FrameMessageBuilder.
  OutgoingMessage(uint32_t sender, uint64_t request_id, unsigned size_hint_words = 0,
                  FramePool* pool = nullptr);
  proto::Envelope::Builder envelope() { return envelope_; }
  // Serializes into one frame. The message may not be used afterwards.
  zmq::message_t ToFrame();

 private:
  FrameMessageBuilder builder_;
  proto::Envelope::Builder envelope_;
};

// A decoded envelope; owns the bytes it reads from.
class IncomingMessage {
 public:
  // InvalidArgument/DataLoss for a frame that is not a Tessera envelope of this version.
  static Result<std::unique_ptr<IncomingMessage>> Parse(zmq::message_t frame);

  proto::Envelope::Reader envelope() const { return envelope_; }

 private:
  IncomingMessage() = default;
  zmq::message_t frame_;
  kj::Array<capnp::word> aligned_copy_;  // used only when the frame is not word-aligned
  // In place: one allocation per received message, not two.
  std::optional<capnp::FlatArrayMessageReader> reader_;
  proto::Envelope::Reader envelope_;
};

// Error envelopes <-> Status.
Status StatusFromError(proto::Error::Reader error);
void FillError(const Status& status, proto::Error::Builder out);
// A version mismatch, a malformed frame or an authentication failure has its own wire code.
void FillError(proto::ErrorCode code, const std::string& message, proto::Error::Builder out);

}  // namespace tessera

#endif  // TESSERA_TRANSPORT_MESSAGE_H_
