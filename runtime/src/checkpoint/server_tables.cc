#include "checkpoint/server_tables.h"

#include <fmt/format.h>

#include <utility>
#include <zmq.hpp>

#include "tessera/transport/endpoint.h"
#include "tessera/transport/message.h"
#include "tessera/transport/retry_on_signal.h"
#include "tessera/transport/security.h"
#include "tessera/transport/waker.h"

namespace tessera::internal::checkpoint {

std::string RelaxedTableName(int64_t array_id) { return fmt::format("relaxed-array-{}", array_id); }
std::string DataParallelTableName(int64_t array_id, int staleness) {
  return fmt::format("data-parallel-array-{}-s{}", array_id, staleness);
}

class ServerTables::Impl {
 public:
  Impl(std::string secret, std::chrono::milliseconds timeout)
      : secret_(std::move(secret)), proof_(SecretProof(secret_)), timeout_(timeout) {}

  Status Connect(const std::string& coordinator) {
    zmq::socket_t socket = Open();
    try {
      socket.connect(coordinator);
    } catch (const zmq::error_t& e) {
      return Status::InvalidArgument(
          fmt::format("cannot connect to the coordinator {}: {}", coordinator, e.what()));
    }
    OutgoingMessage q(0, ++request_id_);
    q.envelope().getBody().initMembershipQuery().setSecret(proof_);
    SendRetrying(socket, q.ToFrame(), zmq::send_flags::none);
    Result<std::unique_ptr<IncomingMessage>> reply = Receive(socket, "the coordinator");
    if (!reply.ok()) return reply.status();
    auto body = (*reply)->envelope().getBody();
    if (body.isError()) return StatusFromError(body.getError());
    if (!body.isMembership()) {
      return Status::Internal("the coordinator answered a membership query with something else");
    }
    for (auto endpoint : body.getMembership().getServers()) {
      servers_.push_back(Open());
      try {
        servers_.back().connect(endpoint.cStr());
      } catch (const zmq::error_t& e) {
        return Status::InvalidArgument(
            fmt::format("cannot connect to server {}: {}", endpoint.cStr(), e.what()));
      }
    }
    return Status::Ok();
  }

  Result<std::vector<FileRecord>> Save(const std::string& checkpoint,
                                       const std::vector<std::string>& tables) {
    const uint64_t id = ++request_id_;  // one request id for all servers: each answers once
    for (zmq::socket_t& s : servers_) {
      OutgoingMessage m(0, id);
      auto save = m.envelope().getBody().initSaveTables();
      save.setSecret(proof_);
      save.setCheckpoint(checkpoint);
      auto names = save.initTables(static_cast<unsigned>(tables.size()));
      for (unsigned i = 0; i < tables.size(); ++i) names.set(i, tables[i]);
      SendRetrying(s, m.ToFrame(), zmq::send_flags::none);
    }
    std::vector<FileRecord> files;
    for (size_t i = 0; i < servers_.size(); ++i) {
      const std::string who = fmt::format("server {}", i);
      Result<std::unique_ptr<IncomingMessage>> reply = Receive(servers_[i], who);
      if (!reply.ok()) return reply.status();
      try {
        auto body = (*reply)->envelope().getBody();
        if (body.isError()) {
          Status s = StatusFromError(body.getError());
          return Status(s.code(), who + ": " + s.message());
        }
        if (!body.isTablesFile()) return Status::Internal(who + " answered with something else");
        auto f = body.getTablesFile();
        FileRecord r;
        r.name = f.getName().cStr();
        r.bytes = f.getBytes();
        r.crc32 = f.getCrc32();
        r.ranges = {static_cast<int64_t>(f.getServer())};
        files.push_back(std::move(r));
      } catch (const kj::Exception& e) {
        return Status::DataLoss(who + ": malformed answer: " + e.getDescription().cStr());
      }
    }
    return files;
  }

  Status Restore(const std::string& checkpoint, const std::vector<FileRecord>& files) {
    const uint64_t id = ++request_id_;
    for (zmq::socket_t& s : servers_) {
      OutgoingMessage m(0, id);
      auto restore = m.envelope().getBody().initRestoreTables();
      restore.setSecret(proof_);
      restore.setCheckpoint(checkpoint);
      auto list = restore.initFiles(static_cast<unsigned>(files.size()));
      for (unsigned i = 0; i < files.size(); ++i) {
        list[i].setServer(files[i].ranges.empty() ? 0 : static_cast<uint32_t>(files[i].ranges[0]));
        list[i].setName(files[i].name);
        list[i].setBytes(files[i].bytes);
        list[i].setCrc32(files[i].crc32);
      }
      SendRetrying(s, m.ToFrame(), zmq::send_flags::none);
    }
    for (size_t i = 0; i < servers_.size(); ++i) {
      const std::string who = fmt::format("server {}", i);
      Result<std::unique_ptr<IncomingMessage>> reply = Receive(servers_[i], who);
      if (!reply.ok()) return reply.status();
      try {
        auto body = (*reply)->envelope().getBody();
        if (body.isError()) {
          Status s = StatusFromError(body.getError());
          return Status(s.code(), who + ": " + s.message());
        }
        if (!body.isTableAck()) return Status::Internal(who + " answered with something else");
      } catch (const kj::Exception& e) {
        return Status::DataLoss(who + ": malformed answer: " + e.getDescription().cStr());
      }
    }
    return Status::Ok();
  }

 private:
  zmq::socket_t Open() {
    zmq::socket_t s(context_, zmq::socket_type::dealer);
    ConfigureSocket(s);
    SecureConnectSide(s, secret_);
    return s;
  }

  // The answer to the last request sent on `socket` (request_id_; older answers, of requests
  // that timed out, are dropped).
  Result<std::unique_ptr<IncomingMessage>> Receive(zmq::socket_t& socket, const std::string& who) {
    const auto deadline = std::chrono::steady_clock::now() + timeout_;
    while (true) {
      zmq::pollitem_t item{socket.handle(), 0, ZMQ_POLLIN, 0};
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) {
        return Status::Unavailable(
            fmt::format("no answer from {} within {} ms", who, timeout_.count()));
      }
      if (PollItems(&item, 1, left) == 0) continue;
      zmq::message_t frame;
      if (!ReceiveRetrying(socket, frame, zmq::recv_flags::dontwait)) continue;
      Result<std::unique_ptr<IncomingMessage>> msg = IncomingMessage::Parse(std::move(frame));
      if (!msg.ok()) return msg.status();
      if ((*msg)->envelope().getRequestId() == request_id_ ||
          (*msg)->envelope().getRequestId() == 0) {
        return msg;
      }
    }
  }

  zmq::context_t context_{1};
  const std::string secret_;
  const std::string proof_;
  const std::chrono::milliseconds timeout_;
  uint64_t request_id_ = 0;
  std::vector<zmq::socket_t> servers_;
};

Result<std::unique_ptr<ServerTables>> ServerTables::Connect(const std::string& coordinator,
                                                            const std::string& secret,
                                                            std::chrono::milliseconds timeout) {
  auto impl = std::make_unique<Impl>(secret, timeout);
  if (Status s = impl->Connect(coordinator); !s.ok()) return s;
  return std::unique_ptr<ServerTables>(new ServerTables(std::move(impl)));
}

ServerTables::ServerTables(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ServerTables::~ServerTables() = default;

Result<std::vector<FileRecord>> ServerTables::Save(const std::string& checkpoint,
                                                   const std::vector<std::string>& tables) {
  return impl_->Save(checkpoint, tables);
}
Status ServerTables::Restore(const std::string& checkpoint, const std::vector<FileRecord>& files) {
  return impl_->Restore(checkpoint, files);
}

}  // namespace tessera::internal::checkpoint
