// StepExchange: the distributed executor's step-by-step traffic between workers. What this
// worker's steps of a scheduled loop change in arrays other workers read goes to every peer as
// patches (write_tracking.h says which elements), rotating blocks go to their next holder alone,
// and the peers' steps are applied here in step order.
//
// Thread safety: none; the thread that runs the executor's loops uses it.
#ifndef TESSERA_RUNTIME_SRC_DISTRIBUTED_STEP_EXCHANGE_H_
#define TESSERA_RUNTIME_SRC_DISTRIBUTED_STEP_EXCHANGE_H_

#include <cstdint>
#include <map>
#include <set>
#include <vector>

#include "distributed/patch.h"
#include "distributed/write_tracking.h"
#include "schedule/array_binding.h"
#include "schedule/loop_blocks.h"
#include "schedule/loop_schedule.h"
#include "tessera/context.h"
#include "tessera/transport/message.h"

namespace tessera::internal {

class PartitionedArrays;
class PeerMesh;

class StepExchange {
 public:
  struct Options {
    int rank = 0;
    int threads = 1;  // executor threads per worker (partitions per worker)
  };
  // `ctx`, `mesh` and `partitioned` must outlive this object.
  StepExchange(const Options& options, Context& ctx, PeerMesh& mesh,
               PartitionedArrays& partitioned);

  // Before a scheduled loop whose step messages carry `tag`: tracks the arrays its steps may
  // change. `dense_writes` (the site's, kept across its runs): arrays tracked by position whose
  // patches were mostly whole, sent whole without comparing; Publish adds to it. It must live
  // until EndLoop.
  void BeginLoop(const LoopSchedule& s, const ArrayBase& space, const SiteBinding& binding,
                 std::set<int64_t>* dense_writes, uint64_t tag);
  // After PartitionedArrays::Place: the loop's partitioned arrays are tracked by their role (a
  // local one is sent nowhere; a rotating one travels only in blocks).
  void TrackPartitioned();
  // The arrays the running loop may write.
  std::vector<ArrayBase*> TrackedArrays() const;
  // Stops sending `id` over the mesh (it lives on the servers for this loop).
  void Untrack(int64_t id);
  // Before a step: each tracked array's regions and snapshot for `parts`.
  void BeginStep(const Blocks& b, const std::vector<Part>& parts);
  // Sends what this worker changed in `step` to every peer, with the rotating blocks of
  // per_peer(). Replicated steps send nothing (every worker made the same changes), except in
  // scheduled loops, whose every step the peers wait for (an empty message).
  void Publish(int64_t step, bool additive, bool replicated);
  // After a 2d loop's last step: the rows of this worker's space blocks of every deferred array,
  // whole, as one more step (`step`) that every peer waits for. Returns whether there was one.
  bool PublishDeferred(const Blocks& b, int64_t step);
  // Applies every peer's patches of the loop's steps up to `step`, in step order.
  void AwaitThrough(int64_t step);
  void EndLoop();

  // Rotating blocks for the next Publish, by peer (PartitionedArrays::Rotate fills them).
  std::vector<std::vector<PatchData>>* per_peer() { return &per_peer_; }

  uint64_t steps() const { return steps_; }
  uint64_t patch_bytes_sent() const { return patch_bytes_sent_; }  // payload sent to every peer
  uint64_t block_bytes_sent() const { return block_bytes_sent_; }  // payload sent to one peer
  // Where this worker's steps spent their time, for the final report: snapshots before steps,
  // comparing and encoding patches and handing them to ZeroMQ, waiting for peers' messages,
  // applying them (seconds).
  struct Times {
    double snapshot = 0, publish = 0, wait = 0, apply = 0;
  };
  const Times& times() const { return times_; }

 private:
  // One PeerMessage of `step` to every peer, carrying `patches` and per_peer_[peer] (cleared).
  void SendToPeers(int64_t step, const std::vector<PatchData>& patches);
  void Apply(int from, const IncomingMessage& msg);

  const Options options_;
  Context& ctx_;
  PeerMesh& mesh_;
  PartitionedArrays& partitioned_;
  uint64_t tag_ = 0;           // the running loop's
  int64_t applied_step_ = -1;  // peers' steps of the running loop applied here
  bool awaited_ = false;       // inside a scheduled loop, whose every step peers wait for
  bool step_open_ = false;     // BeginStep took the snapshots the next Publish compares with
  std::set<int64_t>* dense_writes_ = nullptr;  // the running site's
  std::map<int64_t, Tracked> tracked_;
  std::vector<std::vector<PatchData>> per_peer_;
  uint64_t steps_ = 0;
  uint64_t patch_bytes_sent_ = 0;
  uint64_t block_bytes_sent_ = 0;
  Times times_;
};

}  // namespace tessera::internal

#endif  // TESSERA_RUNTIME_SRC_DISTRIBUTED_STEP_EXCHANGE_H_
