// Joining a job: the registration handshake with the coordinator that servers and clients share.
#ifndef TESSERA_TRANSPORT_JOIN_H_
#define TESSERA_TRANSPORT_JOIN_H_

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>
#include <zmq.hpp>

#include "tessera/common/status.h"
#include "tessera/proto/tessera.capnp.h"

namespace tessera {

// Handshakes refused in a row (ZeroMQ reconnects every 100 ms) before JoinJob gives up.
inline constexpr int kJoinHandshakeRefusals = 3;

struct JoinRequest {
  proto::Role role = proto::Role::WORKER;
  uint32_t rank = 0;
  std::string endpoint;  // servers: where clients reach them
  std::string secret;
  // The process runs a LivenessAgent: the coordinator watches it from this registration on, not
  // only from the agent's first heartbeat, which arrives on another connection and may come later.
  bool heartbeats = false;
};

struct JobMembership {
  std::vector<std::string> servers;  // endpoint of server i at index i
  uint32_t num_workers = 0;
};

// Connects `coordinator` (a DEALER, configured and secured, not yet connected) to `endpoint`,
// sends the registration and waits up to `timeout` for the membership, which comes once every
// server of the job has registered. InvalidArgument for an endpoint ZeroMQ cannot connect to;
// Unavailable on time-out; the coordinator's error (e.g. a wrong secret over inproc://)
// otherwise. The connection's handshakes are watched from before it connects, and a refusal
// fails the join at once with FailedPrecondition naming the cause, instead of after the timeout:
// the first one if exactly one side has a job secret (ZeroMQ does not retry after a mechanism
// mismatch), kJoinHandshakeRefusals in a row if both have one but the secrets differ.
Result<JobMembership> JoinJob(zmq::socket_t& coordinator, const std::string& endpoint,
                              const JoinRequest& request, std::chrono::milliseconds timeout);

}  // namespace tessera

#endif  // TESSERA_TRANSPORT_JOIN_H_
