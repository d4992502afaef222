// Helpers shared by the runtime's Cap'n Proto messages (loaders: load_share.cc,
// partitioned_load.cc; partitioned arrays: record_exchange.cc).
#ifndef TESSERA_RUNTIME_SRC_INTERNAL_CAPNP_UTIL_H_
#define TESSERA_RUNTIME_SRC_INTERNAL_CAPNP_UTIL_H_

#include <capnp/message.h>

#include <string>

#include "tessera/common/status.h"
#include "tessera/proto/tessera.capnp.h"

namespace tessera::internal {

// Shared by the loaders' and the partitioned arrays' Cap'n Proto messages: a loader error's code
// on the wire and back (codes the loaders do not produce travel as InvalidArgument), and a built
// message flat, as capnp::messageToFlatArray lays it out, written straight into a string.
proto::ErrorCode ErrorCodeToProto(StatusCode code);
Status StatusFromProto(proto::ErrorCode code, std::string message);
std::string FlattenMessage(capnp::MessageBuilder& message);

}  // namespace tessera::internal

#endif  // TESSERA_RUNTIME_SRC_INTERNAL_CAPNP_UTIL_H_
