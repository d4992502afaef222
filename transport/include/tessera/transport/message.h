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
#include <string>
#include <vector>
#include <zmq.hpp>

#include "tessera/common/status.h"
#include "tessera/proto/tessera.capnp.h"

namespace tessera {

// A Cap'n Proto builder whose first segment sits in a buffer laid out as a whole frame: one word
// of segment table, then the segment. A message that fits its first segment becomes a ZeroMQ
// frame without a copy (the frame takes the buffer); a larger one is copied once as usual.
class FrameMessageBuilder : public capnp::MessageBuilder {
 public:
  explicit FrameMessageBuilder(unsigned first_segment_words);
  ~FrameMessageBuilder() noexcept(false) override;
  FrameMessageBuilder(const FrameMessageBuilder&) = delete;
  FrameMessageBuilder& operator=(const FrameMessageBuilder&) = delete;

  kj::ArrayPtr<capnp::word> allocateSegment(unsigned minimum_size) override;
  // Serializes into one frame. The builder may not be used afterwards.
  zmq::message_t TakeFrame();

 private:
  capnp::word* frame_;  // segment table word + first segment; owned until TakeFrame
  unsigned first_words_;
  bool first_given_ = false;
  std::vector<void*> more_segments_;
  unsigned next_words_;
};

// A builder whose root is an Envelope stamped with the protocol version, sender and request id.
class OutgoingMessage {
 public:
  // `size_hint_words`: expected message size, so large messages are built in one segment and
  // become a frame without a copy (0: a small first segment, grown as needed).
  OutgoingMessage(uint32_t sender, uint64_t request_id, unsigned size_hint_words = 0);
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
  std::unique_ptr<capnp::FlatArrayMessageReader> reader_;
  proto::Envelope::Reader envelope_;
};

// Error envelopes <-> Status.
Status StatusFromError(proto::Error::Reader error);
void FillError(const Status& status, proto::Error::Builder out);
// A version mismatch, a malformed frame or an authentication failure has its own wire code.
void FillError(proto::ErrorCode code, const std::string& message, proto::Error::Builder out);

}  // namespace tessera

#endif  // TESSERA_TRANSPORT_MESSAGE_H_
