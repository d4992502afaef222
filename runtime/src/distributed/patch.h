// PatchData: elements of one array that travel between workers in a PeerMessage (runs of
// element positions and their bytes), as the distributed executor's parts build them.
#ifndef TESSERA_RUNTIME_SRC_DISTRIBUTED_PATCH_H_
#define TESSERA_RUNTIME_SRC_DISTRIBUTED_PATCH_H_

#include <zmq.hpp>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace tessera::internal {

struct PatchData {
  int64_t array = 0;
  uint64_t layout = 0;  // the array's layout_version, checked by the receiver
  bool additive = false;
  size_t element_bytes = 0;
  std::vector<uint64_t> runs;  // begin, count pairs (element positions)
  std::vector<char> values;
};

// One PeerMessage from worker `rank` (tag, step) carrying `first` then `second` (may be null),
// encoded as a frame for PeerMesh::SendCopy.
zmq::message_t EncodePatches(uint32_t rank, uint64_t tag, int64_t step,
                             const std::vector<PatchData>& first,
                             const std::vector<PatchData>* second = nullptr);

}  // namespace tessera::internal

#endif  // TESSERA_RUNTIME_SRC_DISTRIBUTED_PATCH_H_
