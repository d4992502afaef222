#include "tessera/transport/connect_watch.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "tessera/transport/retry_on_signal.h"
#include "tessera/transport/waker.h"

namespace tessera {
namespace {

// Every failed attempt is followed by a CONNECT_RETRIED.
constexpr int kEvents = ZMQ_EVENT_CONNECTED | ZMQ_EVENT_CONNECT_RETRIED;

std::string HostName() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof(buf) - 1) != 0) return "this host";
  return buf;
}

}  // namespace

ConnectWatch::ConnectWatch(zmq::context_t& context, std::chrono::milliseconds limit)
    : context_(context), limit_(limit), host_(HostName()) {}

ConnectWatch::~ConnectWatch() { Stop(); }

void ConnectWatch::Watch(zmq::socket_t& socket, std::string what, std::string endpoint) {
  if (endpoint.rfind("tcp://", 0) != 0) return;
  // Unique within the context: the socket's address.
  const std::string monitor = fmt::format("inproc://tessera-connect-{}", socket.handle());
  if (zmq_socket_monitor(socket.handle(), monitor.c_str(), kEvents) != 0) return;  // not watched
  zmq::socket_t events(context_, zmq::socket_type::pair);
  events.set(zmq::sockopt::linger, 0);
  events.connect(monitor);
  watched_.push_back(Watched{socket.handle(), std::move(events), std::move(what),
                             std::move(endpoint), Clock::now()});
}

std::optional<Status> ConnectWatch::Check() {
  const Clock::time_point now = Clock::now();
  for (Watched& w : watched_) {
    zmq::message_t event;
    while (ReceiveRetrying(w.events, event, zmq::recv_flags::dontwait)) {
      zmq::message_t address;
      if (event.more()) (void)ReceiveRetrying(w.events, address, zmq::recv_flags::dontwait);
      if (event.size() < sizeof(uint16_t)) continue;
      uint16_t id = 0;
      std::memcpy(&id, event.data(), sizeof(id));
      if (id == ZMQ_EVENT_CONNECTED) {
        w.connected = true;
      } else {
        ++w.failed;
      }
    }
  }
  for (const Watched& w : watched_) {
    if (w.connected || now - w.since < limit_) continue;
    Status late = Status::Unavailable(fmt::format(
        "cannot reach {} at {} from {}: no connection within {:.0f} s ({} attempts failed). That "
        "address does not route from this host: a wrong --advertise or --bind, a private address "
        "of another network, or a firewall",
        w.what, w.endpoint, host_, std::chrono::duration<double>(limit_).count(), w.failed));
    Stop();
    return late;
  }
  if (std::all_of(watched_.begin(), watched_.end(), [](const Watched& w) { return w.connected; })) {
    Stop();
    return Status::Ok();
  }
  return std::nullopt;
}

Status ConnectWatch::Await() {
  for (;;) {
    if (std::optional<Status> done = Check()) return *done;
    std::vector<zmq::pollitem_t> items;
    for (Watched& w : watched_) items.push_back({w.events.handle(), 0, ZMQ_POLLIN, 0});
    PollItems(items.data(), items.size(), std::chrono::milliseconds(50));
  }
}

void ConnectWatch::Stop() {
  for (Watched& w : watched_) zmq_socket_monitor(w.socket, nullptr, 0);
  watched_.clear();
}

}  // namespace tessera
