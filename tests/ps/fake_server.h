// FakeServer: a hand-driven server shard, for tests of what a Client does with replies no real
// server sends. It joins the job through the coordinator as server `rank`, answers worker
// registrations, table creation and leaving as a server does, and hands every get request to the
// test's handler, which answers with whatever it likes (or nothing).
// Thread safety: the handler runs on the fake's own thread; Send may be called from it.
#ifndef TESSERA_TESTS_PS_FAKE_SERVER_H_
#define TESSERA_TESTS_PS_FAKE_SERVER_H_

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <zmq.hpp>

#include "tessera/transport/endpoint.h"
#include "tessera/transport/join.h"
#include "tessera/transport/message.h"
#include "tessera/transport/router.h"
#include "tessera/transport/security.h"

namespace tessera::testing {

class FakeServer {
 public:
  // (peer identity, request id, the get request).
  using GetHandler = std::function<void(const std::string&, uint64_t, proto::GetRequest::Reader)>;

  // Binds, then joins the job in the background (the coordinator answers once every server has
  // registered). `context` and `coordinator` must outlive the fake.
  FakeServer(zmq::context_t& context, const std::string& coordinator, uint32_t rank,
             const std::string& secret, const std::string& listen)
      : socket_(context, zmq::socket_type::router),
        coordinator_(context, zmq::socket_type::dealer),
        rank_(rank) {
    ConfigureSocket(socket_);
    ConfigureSocket(coordinator_);
    SecureBindSide(socket_, secret);
    SecureConnectSide(coordinator_, secret);
    auto ep = BindSocket(socket_, listen);
    EXPECT_TRUE(ep.ok()) << ep.status().ToString();
    if (ep.ok()) endpoint_ = *ep;
    thread_ = std::thread([this, coordinator, rank, secret] {
      auto joined =
          JoinJob(coordinator_, coordinator, {proto::Role::SERVER, rank, endpoint_, secret},
                  std::chrono::seconds(30));
      EXPECT_TRUE(joined.ok()) << joined.status().ToString();
      if (joined.ok()) num_workers_ = joined->num_workers;
      Loop();
    });
  }
  ~FakeServer() { Stop(); }
  // Stops the fake's thread (no handler runs after it returns). Idempotent.
  void Stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  FakeServer(const FakeServer&) = delete;
  FakeServer& operator=(const FakeServer&) = delete;

  // Set before the client reads (the handler is read by the fake's thread).
  void OnGet(GetHandler handler) {
    std::lock_guard lock(mu_);
    on_get_ = std::move(handler);
  }
  void Send(const std::string& identity, OutgoingMessage& msg) {
    EXPECT_TRUE(SendRouted(socket_, identity, msg).ok());
  }
  void SendBytes(const std::string& identity, const std::string& bytes) {
    EXPECT_TRUE(SendRouted(socket_, identity, zmq::message_t(bytes.data(), bytes.size())).ok());
  }
  // An error reply to request `request_id`.
  void SendError(const std::string& identity, uint64_t request_id, const Status& status) {
    OutgoingMessage reply(rank_, request_id);
    FillError(status, reply.envelope().getBody().initError());
    Send(identity, reply);
  }

 private:
  void Loop() {
    while (!stop_) {
      zmq::pollitem_t item{socket_.handle(), 0, ZMQ_POLLIN, 0};
      // A bounded wait, so the destructor's stop is seen: not a synchronization point.
      zmq::poll(&item, 1, std::chrono::milliseconds(20));
      while (auto in = TryReceiveRouted(socket_)) {
        auto msg = IncomingMessage::Parse(std::move(in->payload));
        if (!msg.ok()) continue;
        auto env = (*msg)->envelope();
        auto body = env.getBody();
        OutgoingMessage reply(rank_, env.getRequestId());
        switch (body.which()) {
          case proto::Envelope::Body::REGISTER:
            reply.envelope().getBody().initMembership().setNumWorkers(num_workers_);
            Send(in->identity, reply);
            break;
          case proto::Envelope::Body::CREATE_TABLE:
            reply.envelope().getBody().initTableAck().setId(body.getCreateTable().getId());
            Send(in->identity, reply);
            break;
          case proto::Envelope::Body::LEAVE:
            reply.envelope().getBody().initLeave().setRank(body.getLeave().getRank());
            Send(in->identity, reply);
            break;
          case proto::Envelope::Body::GET: {
            GetHandler handler;
            {
              std::lock_guard lock(mu_);
              handler = on_get_;
            }
            if (handler) handler(in->identity, env.getRequestId(), body.getGet());
            break;
          }
          default:
            break;  // updates and clocks: a fake shard keeps nothing
        }
      }
    }
  }

  zmq::socket_t socket_;
  zmq::socket_t coordinator_;
  const uint32_t rank_;
  std::string endpoint_;
  uint32_t num_workers_ = 0;
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  GetHandler on_get_;
  std::thread thread_;
};

}  // namespace tessera::testing

#endif  // TESSERA_TESTS_PS_FAKE_SERVER_H_
