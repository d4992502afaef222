#include "row_cache.h"

#include <cstring>

namespace tessera::client_internal {

void CopyFromReply(const std::byte* cells, size_t bytes, void* out) {
  std::memcpy(out, cells, bytes);
}

}  // namespace tessera::client_internal
