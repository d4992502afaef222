// A data message larger than one frame may be (kDataPartBytes, endpoint.h) travels as one ZeroMQ
// message of several frames: the sender splits it without copying, ZeroMQ delivers the frames
// together, and the receiver puts them back into one frame. A receiver's ZMQ_MAXMSGSIZE then
// bounds each frame, not the message, so it can be low whatever the tables and arrays weigh.
//
// Thread safety: as the socket's (one thread uses a socket).
#ifndef TESSERA_TRANSPORT_PARTS_H_
#define TESSERA_TRANSPORT_PARTS_H_

#include <cstdint>
#include <zmq.hpp>

#include "tessera/common/status.h"
#include "tessera/transport/endpoint.h"

namespace tessera {

// Sends `frame` on `socket` as one message of ceil(size / part_bytes) frames (one if it is no
// larger), each at most `part_bytes`, pointing into `frame`'s bytes, which live until ZeroMQ has
// let go of every frame. `flags` apply to the message (send_flags::dontwait: false, and nothing
// sent, if the socket's queue for the peer is full). Throws zmq::error_t as socket.send does.
// REQUIRES: part_bytes > 0.
bool SendInParts(zmq::socket_t& socket, zmq::message_t frame,
                 zmq::send_flags flags = zmq::send_flags::none,
                 int64_t part_bytes = kDataPartBytes);

// `first`, just received from `socket`, and the frames that follow it in its message (ZeroMQ
// delivers a message's frames together, so they are there) as one frame. OutOfRange, naming the
// bound, when they add up to more than `max_bytes`: the rest of the message is read and dropped.
Result<zmq::message_t> ReceiveRest(zmq::socket_t& socket, zmq::message_t first, int64_t max_bytes);

}  // namespace tessera

#endif  // TESSERA_TRANSPORT_PARTS_H_
