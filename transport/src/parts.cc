#include "tessera/transport/parts.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <utility>
#include <vector>

#include "tessera/transport/frame_handover.h"
#include "tessera/transport/retry_on_signal.h"

namespace tessera {
namespace {

// What a frame of a split message holds on to: the whole message's frame, shared by its parts.
using SharedFrame = std::shared_ptr<zmq::message_t>;

void ReleasePart(void* /*data*/, void* hint) { delete static_cast<SharedFrame*>(hint); }

}  // namespace

bool SendInParts(zmq::socket_t& socket, zmq::message_t frame, zmq::send_flags flags,
                 int64_t part_bytes) {
  const size_t part = static_cast<size_t>(part_bytes);
  if (frame.size() <= part) {
    MarkFrameSent(frame);
    return SendRetrying(socket, frame, flags);
  }
  const auto whole = std::make_shared<zmq::message_t>(std::move(frame));
  auto* bytes = static_cast<char*>(whole->data());
  const size_t size = whole->size();
  for (size_t at = 0; at < size; at += part) {
    const size_t n = std::min(part, size - at);
    zmq::message_t piece(bytes + at, n, &ReleasePart, new SharedFrame(whole));
    MarkFrameSent(piece);
    const bool last = at + n == size;
    const auto piece_flags = last ? flags : flags | zmq::send_flags::sndmore;
    // Only a message's first frame can find the queue full: the rest follow it.
    if (!SendRetrying(socket, piece, piece_flags)) return false;
  }
  return true;
}

Result<zmq::message_t> ReceiveRest(zmq::socket_t& socket, zmq::message_t first, int64_t max_bytes) {
  if (!first.more()) return first;
  std::vector<zmq::message_t> parts;
  uint64_t total = first.size();
  size_t frames = 1;
  bool more = true;
  parts.push_back(std::move(first));
  while (more) {
    zmq::message_t next;
    if (!ReceiveRetrying(socket, next, zmq::recv_flags::dontwait))
      break;  // the socket closed under us
    more = next.more();
    ++frames;
    total += next.size();
    if (total <= static_cast<uint64_t>(max_bytes)) parts.push_back(std::move(next));
  }
  if (total > static_cast<uint64_t>(max_bytes)) {
    return Status::OutOfRange(fmt::format(
        "a message of {} frames and {} bytes, over the {} bytes a message of this socket may have",
        frames, total, max_bytes));
  }
  zmq::message_t whole(total);
  auto* out = static_cast<char*>(whole.data());
  for (const zmq::message_t& p : parts) {
    MarkFrameReceived(p);
    std::memcpy(out, p.data(), p.size());
    out += p.size();
  }
  return whole;
}

}  // namespace tessera
