// The Context's collectives (Context::AllGather, Context::AllToAll) as the runtime's internal
// exchanges take them, so that tests can run them among simulated workers.
#ifndef TESSERA_RUNTIME_SRC_EXCHANGE_COLLECTIVES_H_
#define TESSERA_RUNTIME_SRC_EXCHANGE_COLLECTIVES_H_

#include <functional>
#include <string>
#include <vector>

#include "tessera/common/status.h"

namespace tessera::internal {

using AllGatherFn = std::function<Result<std::vector<std::string>>(std::string)>;
using AllToAllFn = std::function<Result<std::vector<std::string>>(std::vector<std::string>)>;

}  // namespace tessera::internal

#endif  // TESSERA_RUNTIME_SRC_EXCHANGE_COLLECTIVES_H_
