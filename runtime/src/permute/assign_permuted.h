// DistArray::assign_permuted where the data lives: every element of a sparse array B takes the
// value of the element of a sparse array A whose key, permuted, is its key (B key[d] = A key
// [perm[d]]), the keys of both staying as they are. Both orders of one data set (LDA's tokens by
// document and by word) exchange their values this way, once per sweep, so the plan of where each
// value goes is made once and kept while neither array's layout changes:
//
//   - Local (this process alone, or both arrays whole on every worker): for every element of A,
//     in A's storage order, the position of its counterpart in B (4 bytes per element).
//   - Both partitioned: every worker holds, for each worker s, the positions in its share of B of
//     the elements of s's share of A that belong here, in s's storage order (4 bytes per element
//     of B held), and how many of them each round brings. The plan's first exchange ships the
//     permuted keys once, in rounds; every later one ships the values alone (element size per
//     element), each value once, from the holder of its A element to the holder of its B element,
//     and back for B -> A. Nothing is sorted or searched again.
//
// One plan serves both directions: A -> B scatters A's values into B, B -> A gathers them back.
// Collective when either array is partitioned: every worker calls AssignPermuted at the same point
// with the same arrays (SPMD).
#ifndef TESSERA_RUNTIME_SRC_PERMUTE_ASSIGN_PERMUTED_H_
#define TESSERA_RUNTIME_SRC_PERMUTE_ASSIGN_PERMUTED_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "exchange/exchange_rounds.h"
#include "exchange/record_exchange.h"
#include "tessera/common/status.h"
#include "tessera/executor.h"

namespace tessera::internal {

// Where the values of A go in B; opaque outside assign_permuted.cc. Made by AssignPermuted and
// handed back to it on later calls with the same pair of arrays (in either direction).
struct PermutedValuesPlan;
struct PermutedValuesPlanDeleter {
  void operator()(PermutedValuesPlan* plan) const;
};
using PermutedValuesPlanPtr = std::unique_ptr<PermutedValuesPlan, PermutedValuesPlanDeleter>;

struct AssignPermutedOptions {
  int rank = 0;
  int num_workers = 1;
  // Context::AllGather and AllToAll; empty for a process alone (then no array may be partitioned).
  AllGatherFn all_gather;
  AllToAllFn all_to_all;
  // How values travel once a plan is made (keys travel by all_to_all); empty: round by round on
  // all_to_all (ExchangeRoundsByAllToAll).
  ExchangeRoundsFn exchange_rounds;
  // Elements of A a worker ships per round at most (keys when a plan is made, values after);
  // rounds are smaller still where 64 KiB of values would be fewer elements (8Ki int64 values).
  // Default: 2^19.
  size_t round_elements = size_t{1} << 19;
};

// What one call did on this worker.
struct AssignPermutedReport {
  bool distributed = false;  // both arrays partitioned (else a local copy)
  bool planned = false;      // a new plan was made (keys travelled)
  int rounds = 0;            // exchange rounds (0: no message)
  uint64_t bytes_sent = 0;   // to other workers, keys included when planned
  int64_t held = 0;          // elements of `to` assigned here
};

// B's key set is A's under perm (B key[d] = A key[perm[d]]). With `a_to_b` every element of B
// takes the value of its counterpart in A; otherwise every element of A takes its counterpart's
// value in B. `*plan` is reused when it was made for these two arrays, this perm and the arrays'
// current layouts on every worker; otherwise it is made anew (collectively) and stored there.
// REQUIRES: both sparse, the same rank and element size; both partitioned or both whole (the
// caller gathers one whole first); perm a permutation of [0, rank) with B's shape A's under it.
// Errors: InvalidArgument when the key sets differ (an element of either without a counterpart,
// naming its key); the exchange's (a peer gone) and DataLoss for a peer's malformed message.
// `to`'s values are then undefined.
Result<AssignPermutedReport> AssignPermuted(const AssignPermutedOptions& options, ArrayBase& a,
                                            ArrayBase& b, const std::vector<int>& perm, bool a_to_b,
                                            PermutedValuesPlanPtr* plan);

// The plan's memory (bytes), for logs.
size_t PlanBytes(const PermutedValuesPlan& plan);

}  // namespace tessera::internal

#endif  // TESSERA_RUNTIME_SRC_PERMUTE_ASSIGN_PERMUTED_H_
