// RoundSlots: shared memory through which PeerMesh::ExchangeRounds hands rounds to a peer on the
// same host, so that a round's bytes are written once by the sender and read in place by the
// receiver, with no copy through a socket and no message: the sender posts each round in the
// region's header (its size, or that it went in a message after all), and the receiver waits for
// the post on a futex, checking the mesh's links while it waits.
//
// Each worker creates one file next to its LocalInbox's socket (local_inbox.h: the same private
// directory, removed with it once the mesh is up), holding a region per worker: a header page,
// then kSlots slots of kSlotBytes; a peer on the host maps its own region read-only. The n-th
// round a worker sends a peer through ExchangeRounds (counted over every exchange) goes in slot
// n mod kSlots.
//
// Why a slot is free when it is written: a worker writes its round n while it has read the
// peer's rounds up to n - in_flight; the peer posted its round n - in_flight only after reading
// this worker's rounds up to n - 2 in_flight (both run the same loop, in_flight rounds ahead). So
// with in_flight <= kSlots / 2 the round that last used slot n mod kSlots, n - kSlots, has been
// read. The post's release and the wait's acquire order the slot's bytes on both sides.
#ifndef TESSERA_RUNTIME_SRC_DISTRIBUTED_ROUND_SLOTS_H_
#define TESSERA_RUNTIME_SRC_DISTRIBUTED_ROUND_SLOTS_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "tessera/common/status.h"

namespace tessera::internal {

class RoundSlots {
 public:
  static constexpr int kSlots = 4;
  // A round larger than this goes in its message instead (assign_permuted's rounds are at most
  // 512 KiB per peer).
  static constexpr size_t kSlotBytes = size_t{1} << 20;
  // The header before a region's slots: the count of rounds posted, and each slot's round's size.
  static constexpr size_t kHeaderBytes = 4096;
  static constexpr size_t kRegionBytes = kHeaderBytes + kSlots * kSlotBytes;
  // A post saying that the round went in a message (it did not fit a slot, or no memory for it).
  static constexpr uint64_t kInMessage = ~uint64_t{0};

  RoundSlots() = default;
  // Creates `path` (a new file, 0600) with a region per worker, mapped for writing. The headers'
  // memory is taken at once (an error when there is none), the slots' slot by slot (Reserve), as
  // rounds need it.
  static Result<RoundSlots> Create(const std::string& path, int num_workers);
  // Maps worker `rank`'s region of a file a peer created, for reading; the file must be a regular
  // file of this effective user of the size Create makes for `num_workers`.
  static Result<RoundSlots> Open(const std::string& path, int rank, int num_workers);
  RoundSlots(RoundSlots&& other) noexcept;
  RoundSlots& operator=(RoundSlots&& other) noexcept;
  ~RoundSlots();

  bool mapped() const { return base_ != nullptr; }
  // Created: makes the file's memory behind the first `bytes` of the slot of the n-th round
  // toward worker `region` exist, so that writing them cannot fault (a full /dev/shm would
  // otherwise kill the writer with SIGBUS). False when it cannot (the round then goes in its
  // message). Cheap once a slot holds its largest round.
  bool Reserve(int region, uint64_t n, size_t bytes);
  // Created: the slot of the n-th round toward worker `region`. Opened: region must be 0.
  char* slot(int region, uint64_t n) const {
    return base_ + static_cast<size_t>(region) * kRegionBytes + kHeaderBytes +
           (n % kSlots) * kSlotBytes;
  }

  // Created: posts the n-th round toward worker `region` (its `bytes` in its slot, or kInMessage)
  // once it is written, and wakes the peer if it waits. Rounds are posted in order.
  void Post(int region, uint64_t n, uint64_t bytes);
  // Opened: whether the n-th round toward this worker has been posted (rounds up to it have), and
  // then what its post says (`*bytes`: unchecked, the peer wrote it).
  bool Posted(uint64_t n, uint64_t* bytes) const;
  // Opened: waits until the n-th round may have been posted, at most `timeout` (it may return
  // earlier, e.g. on a signal: check Posted).
  void Wait(uint64_t n, std::chrono::microseconds timeout) const;

 private:
  RoundSlots(char* base, size_t bytes, int fd, int num_workers);
  void Release();
  // A region's header: the futex word counting the rounds posted (mod 2^32), and slot k's post.
  uint32_t* posted(int region) const {
    return reinterpret_cast<uint32_t*>(base_ + static_cast<size_t>(region) * kRegionBytes);
  }
  uint64_t* post(int region, uint64_t n) const {
    return reinterpret_cast<uint64_t*>(base_ + static_cast<size_t>(region) * kRegionBytes + 64) +
           n % kSlots;
  }

  char* base_ = nullptr;
  size_t bytes_ = 0;
  int fd_ = -1;                   // created: the file, for Reserve
  std::vector<size_t> reserved_;  // created: bytes reserved per slot (region * kSlots + slot)
};

}  // namespace tessera::internal

#endif  // TESSERA_RUNTIME_SRC_DISTRIBUTED_ROUND_SLOTS_H_
