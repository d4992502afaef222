// RoundSlots: shared memory through which PeerMesh::ExchangeRounds hands rounds to a peer on the
// same host, so that a round's bytes are written once by the sender and read in place by the
// receiver, with no copy through a socket (a small message still announces each round, keeping
// the mesh's order and its failure detection).
//
// Each worker creates one file next to its LocalInbox's socket (local_inbox.h: the same private
// directory, removed with it once the mesh is up), holding a region per worker of kSlots slots of
// kSlotBytes; a peer on the host maps its own region read-only. The n-th round a worker sends a
// peer through ExchangeRounds (counted over every exchange) goes in slot n mod kSlots.
//
// Why a slot is free when it is written: a worker writes its round n while it has read the
// peer's rounds up to n - in_flight; the peer sent its round n - in_flight only after reading this
// worker's rounds up to n - 2 in_flight (both run the same loop, in_flight rounds ahead). So with
// in_flight <= kSlots / 2 the round that last used slot n mod kSlots, n - kSlots, has been read.
#ifndef TESSERA_RUNTIME_SRC_DISTRIBUTED_ROUND_SLOTS_H_
#define TESSERA_RUNTIME_SRC_DISTRIBUTED_ROUND_SLOTS_H_

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
  static constexpr size_t kRegionBytes = kSlots * kSlotBytes;

  RoundSlots() = default;
  // Creates `path` (a new file, 0600) with a region per worker, mapped for writing. Its memory is
  // taken slot by slot (Reserve), as rounds need it.
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
    return base_ + static_cast<size_t>(region) * kRegionBytes + (n % kSlots) * kSlotBytes;
  }

 private:
  RoundSlots(char* base, size_t bytes, int fd, int num_workers);
  void Release();
  char* base_ = nullptr;
  size_t bytes_ = 0;
  int fd_ = -1;                   // created: the file, for Reserve
  std::vector<size_t> reserved_;  // created: bytes reserved per slot (region * kSlots + slot)
};

}  // namespace tessera::internal

#endif  // TESSERA_RUNTIME_SRC_DISTRIBUTED_ROUND_SLOTS_H_
