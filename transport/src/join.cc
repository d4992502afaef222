#include "tessera/transport/join.h"

#include <fmt/format.h>

#include "tessera/transport/message.h"

namespace tessera {

Result<JobMembership> JoinJob(zmq::socket_t& coordinator, const JoinRequest& request,
                              std::chrono::milliseconds timeout) {
  OutgoingMessage reg(request.rank, 1);
  auto r = reg.envelope().getBody().initRegister();
  r.setRole(request.role);
  r.setRank(request.rank);
  r.setEndpoint(request.endpoint);
  r.setSecret(request.secret);
  coordinator.send(reg.ToFrame(), zmq::send_flags::none);

  zmq::pollitem_t item{coordinator.handle(), 0, ZMQ_POLLIN, 0};
  if (zmq::poll(&item, 1, timeout) == 0) {
    return Status::Unavailable(
        fmt::format("no membership from the coordinator within {} ms", timeout.count()));
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
