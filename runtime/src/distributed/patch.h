// PatchData: elements of one array that travel between workers in a PeerMessage (runs of
// element positions and their bytes), as the distributed executor's parts build them.
#ifndef TESSERA_RUNTIME_SRC_DISTRIBUTED_PATCH_H_
#define TESSERA_RUNTIME_SRC_DISTRIBUTED_PATCH_H_

#include <cstddef>
#include <cstdint>
#include <vector>
#include <zmq.hpp>

namespace tessera::internal {

struct PatchData {
  int64_t array = 0;
  uint64_t layout = 0;  // the array's layout_version, checked by the receiver
  bool additive = false;
  size_t element_bytes = 0;
  std::vector<uint64_t> runs;  // begin, count pairs (element positions)
  // The elements' bytes, run after run. Or, when `source` is set, `values` is empty and run
  // (begin, count) is read from source + begin * element_bytes when the patch is encoded: whole
  // rows go from the array into the frame with one copy. The array must not change or release
  // those elements before then.
  std::vector<char> values;
  const char* source = nullptr;

  size_t value_bytes() const;
};

// One PeerMessage from worker `rank` (tag, step) carrying `first` then `second` (may be null),
// encoded as a frame for PeerMesh::SendCopy: built in one segment that becomes the frame.
zmq::message_t EncodePatches(uint32_t rank, uint64_t tag, int64_t step,
                             const std::vector<PatchData>& first,
                             const std::vector<PatchData>* second = nullptr);

}  // namespace tessera::internal

#endif  // TESSERA_RUNTIME_SRC_DISTRIBUTED_PATCH_H_
