// Traffic: the bytes a worker of a distributed job sent to other processes, by what they were for
// (docs/runtime.md, "What a worker reports"). Context::traffic() gives the running totals; the
// difference of two readings is what the loops between them cost. Serial and threaded runs send
// nothing.
#ifndef TESSERA_TRAFFIC_H_
#define TESSERA_TRAFFIC_H_

#include <cstdint>

namespace tessera {

struct Traffic {
  uint64_t rotation = 0;        // rotating blocks handed to their next holder (2d loops)
  uint64_t repartition = 0;     // rows and records moved because a loop needs another layout
  uint64_t patches = 0;         // changes of replicated arrays sent to peers after steps
  uint64_t server_updates = 0;  // updates of relaxed and data-parallel arrays to the servers
  uint64_t permuted = 0;        // DistArray::assign_permuted: values (and a plan's keys) sent to
                                // the holders of the other order

  uint64_t total() const { return rotation + repartition + patches + server_updates + permuted; }
  Traffic operator-(const Traffic& o) const {
    return {rotation - o.rotation, repartition - o.repartition, patches - o.patches,
            server_updates - o.server_updates, permuted - o.permuted};
  }
  Traffic& operator+=(const Traffic& o) {
    rotation += o.rotation;
    repartition += o.repartition;
    patches += o.patches;
    server_updates += o.server_updates;
    permuted += o.permuted;
    return *this;
  }
};

}  // namespace tessera

#endif  // TESSERA_TRAFFIC_H_
