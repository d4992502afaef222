// Shared by the message-handler fuzz targets: a fuzz input is a sequence of frames, each a 2-byte
// little-endian length then that many bytes, sent in order on one connection; after them the
// target sends a sentinel that always gets an answer and waits for it, so every frame has been
// handled when an input is done. A node that stops answering is a finding (abort).
#ifndef TESSERA_FUZZ_FRAMES_H_
#define TESSERA_FUZZ_FRAMES_H_

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>
#include <zmq.hpp>

#include "tessera/transport/message.h"
#include "tessera/transport/retry_on_signal.h"

namespace tessera::fuzz {

inline std::vector<std::string> SplitFrames(const uint8_t* data, size_t size) {
  std::vector<std::string> frames;
  size_t at = 0;
  while (at + 2 <= size && frames.size() < 16) {
    const size_t n = std::min<size_t>(data[at] | (size_t{data[at + 1]} << 8), size - at - 2);
    frames.emplace_back(reinterpret_cast<const char*>(data + at + 2), n);
    at += 2 + n;
  }
  return frames;
}

inline std::string JoinFrames(const std::vector<std::string>& frames) {
  std::string out;
  for (const std::string& f : frames) {
    out += static_cast<char>(f.size() & 0xff);
    out += static_cast<char>((f.size() >> 8) & 0xff);
    out += f;
  }
  return out;
}

inline std::string Encode(OutgoingMessage& msg) {
  const zmq::message_t frame = msg.ToFrame();
  return std::string(static_cast<const char*>(frame.data()), frame.size());
}

// Sends `frames` then `sentinel` (whose request id is `sentinel_id`) on `peer`, and reads answers
// until the sentinel's; aborts if it does not come within 10 s.
inline void SendAndSync(zmq::socket_t& peer, const std::vector<std::string>& frames,
                        OutgoingMessage& sentinel, uint64_t sentinel_id) {
  for (const std::string& f : frames) {
    zmq::message_t frame(f.data(), f.size());
    tessera::SendRetrying(peer, frame);
  }
  zmq::message_t last = sentinel.ToFrame();
  tessera::SendRetrying(peer, last);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  zmq::pollitem_t item{peer.handle(), 0, ZMQ_POLLIN, 0};
  while (std::chrono::steady_clock::now() < deadline) {
    // zmq_poll, not zmq::poll: libFuzzer's timers interrupt it (EINTR), which is no finding.
    if (zmq_poll(&item, 1, 100) <= 0) continue;
    zmq::message_t frame;
    while (tessera::ReceiveRetrying(peer, frame, zmq::recv_flags::dontwait)) {
      auto msg = IncomingMessage::Parse(std::move(frame));
      if (msg.ok() && (*msg)->envelope().getRequestId() == sentinel_id) return;
    }
  }
  std::fprintf(stderr, "fuzz: the node did not answer the sentinel within 10 s\n");
  std::abort();
}

// With TESSERA_FUZZ_WRITE_SEEDS=DIR set, writes each seed (a frame sequence) to DIR/seed-N and
// exits: how fuzz/corpus/ was made.
inline void MaybeWriteSeeds(const std::vector<std::vector<std::string>>& seeds) {
  const char* dir = std::getenv("TESSERA_FUZZ_WRITE_SEEDS");
  if (dir == nullptr) return;
  for (size_t i = 0; i < seeds.size(); ++i) {
    std::ofstream(std::string(dir) + "/seed-" + std::to_string(i), std::ios::binary)
        << JoinFrames(seeds[i]);
  }
  std::exit(0);
}

}  // namespace tessera::fuzz

#endif  // TESSERA_FUZZ_FRAMES_H_
