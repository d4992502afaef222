#include "tessera/transport/join.h"

#include <fmt/format.h>

#include "tessera/transport/message.h"
#include "tessera/transport/security.h"
#include "tessera/transport/waker.h"

namespace tessera {

Result<JobMembership> JoinJob(zmq::socket_t& coordinator, const JoinRequest& request,
                              std::chrono::milliseconds timeout) {
  OutgoingMessage reg(request.rank, 1);
  auto r = reg.envelope().getBody().initRegister();
  r.setRole(request.role);
  r.setRank(request.rank);
  r.setEndpoint(request.endpoint);
  r.setSecret(SecretProof(request.secret));
  coordinator.send(reg.ToFrame(), zmq::send_flags::none);

  zmq::pollitem_t item{coordinator.handle(), 0, ZMQ_POLLIN, 0};
  auto deadline = std::chrono::steady_clock::now() + timeout;
  int ready = 0;
  while (ready == 0 && std::chrono::steady_clock::now() < deadline) {  // a signal ends a poll early
    ready = PollItems(&item, 1, std::chrono::duration_cast<std::chrono::milliseconds>(
                                    deadline - std::chrono::steady_clock::now()));
  }
  if (ready == 0) {
    return Status::Unavailable(
        fmt::format("no membership from the coordinator within {} ms{}", timeout.count(),
                    request.secret.empty()
                        ? ""
                        : " (is it running, and does it have the same job secret? a process with "
                          "another secret cannot connect)"));
  }
  zmq::message_t frame;
  (void)coordinator.recv(frame, zmq::recv_flags::none);
  auto msg = IncomingMessage::Parse(std::move(frame));
  if (!msg.ok()) return msg.status();
  try {
    auto body = (*msg)->envelope().getBody();
    if (body.isError()) return StatusFromError(body.getError());
    if (!body.isMembership())
      return Status::Internal("the coordinator answered the registration with something else");
    JobMembership membership;
    for (auto ep : body.getMembership().getServers()) membership.servers.emplace_back(ep);
    membership.num_workers = body.getMembership().getNumWorkers();
    return membership;
  } catch (const kj::Exception& e) {
    return Status::DataLoss(fmt::format("malformed membership: {}", e.getDescription().cStr()));
  }
}

}  // namespace tessera
