// Bounds every Tessera socket applies beyond endpoint.h's per-socket ones: how long a connection
// may take to authenticate, and what a socket that talks to the coordinator accepts
// (docs/security.md).
#ifndef TESSERA_TRANSPORT_SOCKET_LIMITS_H_
#define TESSERA_TRANSPORT_SOCKET_LIMITS_H_

#include <zmq.hpp>

namespace tessera {

// How long a connection may take to finish its ZMTP (and CURVE) handshake before ZeroMQ closes
// it; ConfigureSocket sets it on every socket. A stranger's connection that never completes one
// holds the receiver's session (an fd, buffers) this long at most; ZeroMQ's default is 30 s. A
// legitimate handshake is four small messages and takes milliseconds; 10 s leaves room for a
// process that goes unscheduled for seconds on an oversubscribed machine, and a handshake that
// times out is retried by ZeroMQ (a time-out is not a refusal, join.h).
inline constexpr int kHandshakeTimeoutMs = 10000;

// ConfigureSocket for a socket that connects to the coordinator: it also refuses frames over
// kMaxControlMessageBytes (endpoint.h). The coordinator's largest messages, the peer list and
// the membership, carry one endpoint per worker or server (about 30 bytes each on tcp, at most
// a few hundred), so that bound holds them for thousands of processes. Call before connect.
void ConfigureControlSocket(zmq::socket_t& socket);

}  // namespace tessera

#endif  // TESSERA_TRANSPORT_SOCKET_LIMITS_H_
