// An all-to-all in rounds whose messages are written and read in place: the collectives that move
// a large share between workers (assign_permuted's values) send it in rounds of bounded size, so
// that messages come from the allocator's free lists rather than fresh pages, and a worker writes
// each round straight into the message that carries it and reads what arrives where it lies.
//
// The peer mesh's version (PeerMesh::ExchangeRounds) keeps several rounds in flight, so the
// round trips overlap; ExchangeRoundsByAllToAll runs the same rounds one at a time on any
// all-to-all (simulated workers in tests). Every worker calls it at the same point with the same
// number of rounds.
#ifndef TESSERA_RUNTIME_SRC_EXCHANGE_EXCHANGE_ROUNDS_H_
#define TESSERA_RUNTIME_SRC_EXCHANGE_EXCHANGE_ROUNDS_H_

#include <cstddef>
#include <functional>
#include <span>
#include <vector>

#include "exchange/collectives.h"
#include "tessera/common/status.h"

namespace tessera::internal {

struct RoundsSpec {
  int rounds = 0;
  // The bytes this worker sends worker w in round r, and those w sends this worker (w != this
  // worker's rank). A message of another size fails the exchange with DataLoss naming w.
  std::function<size_t(int r, int w)> bytes_to, bytes_from;
  // Writes round r's messages: to[w] holds bytes_to(r, w) bytes (to[rank] is null). Rounds are
  // written in order; round r + 1 may be written before round r is read.
  std::function<Status(int r, const std::vector<char*>& to)> write;
  // Reads round r's messages, in round order: from[w] (empty at this worker's rank) lies in a
  // received message and is valid during the call.
  std::function<Status(int r, const std::vector<std::span<const char>>& from)> read;
};

// Runs `spec` among the job's workers: a lost peer or a message of the wrong size is an error.
using ExchangeRoundsFn = std::function<Status(const RoundsSpec& spec)>;

// Runs `spec` one round at a time on `all_to_all` (each round's messages copied into strings).
Status ExchangeRoundsByAllToAll(const AllToAllFn& all_to_all, int rank, int num_workers,
                                const RoundsSpec& spec);

// DataLoss naming the sender when a round's message from `from` is not `expected` bytes.
Status CheckRoundBytes(int r, int from, size_t got, size_t expected);

}  // namespace tessera::internal

#endif  // TESSERA_RUNTIME_SRC_EXCHANGE_EXCHANGE_ROUNDS_H_
