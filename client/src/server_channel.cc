#include "server_channel.h"

#include "tessera/transport/message.h"

namespace tessera::client_internal {

void ApplyAck(ServerChannel& ch, uint64_t applied) {
  std::lock_guard lock(ch.mu);
  while (!ch.inflight.empty() && ch.inflight.front().seq <= applied) {
    ch.inflight_deltas.fetch_sub(ch.inflight.front().deltas.size(), std::memory_order_relaxed);
    ch.inflight.pop_front();
  }
  if (applied > ch.acked_seq) {
    ch.acked_seq = applied;
    ch.acked.notify_all();
  }
}

std::vector<zmq::message_t> TakeForgetFramesLocked(ServerChannel& ch, uint32_t rank) {
  std::vector<zmq::message_t> frames;
  for (auto& [table, rows] : ch.forget) {
    if (rows.empty()) continue;
    OutgoingMessage msg(rank, 0, static_cast<unsigned>(rows.size() + 16));
    auto body = msg.envelope().getBody().initUnsubscribe();
    body.setTable(table);
    auto list = body.initRows(static_cast<unsigned>(rows.size()));
    for (unsigned i = 0; i < rows.size(); ++i) list.set(i, rows[i]);
    frames.push_back(msg.ToFrame());
    rows.clear();
  }
  ch.forget_rows = 0;
  return frames;
}

}  // namespace tessera::client_internal
