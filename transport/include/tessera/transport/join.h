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
};

struct JobMembership {
  std::vector<std::string> servers;  // endpoint of server i at index i
  uint32_t num_workers = 0;
};

// Sends the registration on `coordinator` (a DEALER connected to the coordinator) and waits up to
// `timeout` for the membership, which comes once every server of the job has registered.
// Unavailable on time-out; the coordinator's error (e.g. a wrong secret over inproc://)
// otherwise. A coordinator that refuses the connection's CURVE handshake kJoinHandshakeRefusals
// times in a row (another job secret, or none) fails the join at once with FailedPrecondition
// naming the cause, instead of after the timeout.
Result<JobMembership> JoinJob(zmq::socket_t& coordinator, const JoinRequest& request,
                              std::chrono::milliseconds timeout);

}  // namespace tessera

#endif  // TESSERA_TRANSPORT_JOIN_H_
