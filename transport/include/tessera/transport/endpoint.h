// Helpers for ZeroMQ endpoints.
#ifndef TESSERA_TRANSPORT_ENDPOINT_H_
#define TESSERA_TRANSPORT_ENDPOINT_H_

#include <cstdint>
#include <string>
#include <zmq.hpp>

#include "tessera/common/status.h"

namespace tessera {

// The address peers reach this process at, for a process bound to a wildcard address (the
// launcher sets it: `tessera run --advertise`, else this host's address toward the coordinator).
inline constexpr char kEnvAdvertiseHost[] = "TESSERA_ADVERTISE_HOST";

// Binds `socket` to `endpoint` and returns the endpoint peers should connect to. A tcp port of 0
// (or "*") picks an ephemeral port; the result names the port actually bound. A wildcard host
// (0.0.0.0, *, ::) is never returned, since no other host can connect to it: the result names
// $TESSERA_ADVERTISE_HOST instead, else the address this host's name resolves to, else 127.0.0.1.
Result<std::string> BindSocket(zmq::socket_t& socket, const std::string& endpoint);

// `bound` with a wildcard host (tcp://0.0.0.0:P, tcp://*:P, tcp://[::]:P) replaced by
// `advertise_host` (an IPv6 address is bracketed); any other endpoint is returned unchanged.
std::string AdvertisedEndpoint(const std::string& bound, const std::string& advertise_host);

// Socket options every Tessera socket uses: no linger on close, no send or receive high-water
// mark (sockets that need one set it after this: the servers' send queues, bound sockets'
// receive queues), TCP heartbeats so a vanished peer is noticed, and a handshake time-out
// (kHandshakeTimeoutMs, socket_limits.h: 10 s instead of ZeroMQ's 30 s) after which a
// connection that has not finished its ZMTP/CURVE handshake is closed.
void ConfigureSocket(zmq::socket_t& socket);

// Bounds on what a bound socket accepts from each connection (docs/security.md).
// A frame larger than the bound makes ZeroMQ drop the connection before reading it whole (it
// checks each frame's declared size, during the handshake too); a connection with this many
// messages queued is not read from until the node takes some (TCP back-pressure, nothing is
// lost).
//
// The coordinator handles control messages only: registrations, barriers, heartbeats and peer
// announcements, each an endpoint string and a few integers (under 1 KiB with a 256-byte
// endpoint); 1 MiB leaves a wide margin.
inline constexpr int64_t kMaxControlMessageBytes = int64_t{1} << 20;
// Servers and peer-mesh inboxes take data messages (update batches, array hand-overs) whose
// size follows the program's tables and arrays, so no frame bound fits them all: their senders
// split a message larger than kDataPartBytes into frames of that size (SendInParts,
// transport/parts.h), and the receivers take frames up to kMaxDataFrameBytes (a part plus
// CURVE's 33 bytes per frame, rounded up). 16 MiB makes the per-frame costs (a system call, a
// CURVE nonce and tag) vanish next to the bytes, and is what one connection can make a receiver
// allocate before its handshake is done.
inline constexpr int64_t kDataPartBytes = int64_t{16} << 20;
inline constexpr int64_t kMaxDataFrameBytes = kDataPartBytes + 4096;
// The most a receiver reassembles into one data message: the protocol's own bound, what a
// Cap'n Proto reader of this build walks (IncomingMessage::Parse: 2^30 words).
inline constexpr int64_t kMaxDataMessageBytes = (int64_t{1} << 30) * 8;
// Messages queued per connection on a receiving socket (a message's frames count once). A worker
// has at most a few control messages outstanding, and at most 32 unacknowledged update batches
// per server (client's flow control); peer-mesh hand-overs are bounded by the schedule's
// pipeline depth.
inline constexpr int kControlReceiveQueue = 1000;
inline constexpr int kDataReceiveQueue = 10000;

// Sets ZMQ_MAXMSGSIZE and the receive high-water mark. Call before bind.
void LimitIncoming(zmq::socket_t& socket, int64_t max_message_bytes, int receive_queue);

}  // namespace tessera

#endif  // TESSERA_TRANSPORT_ENDPOINT_H_
