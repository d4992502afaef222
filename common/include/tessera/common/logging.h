// Logging set-up. Tessera logs through spdlog; each node gets a named logger so that several
// nodes inside one process (tests over inproc://) stay distinguishable.
#ifndef TESSERA_COMMON_LOGGING_H_
#define TESSERA_COMMON_LOGGING_H_

#include <memory>
#include <string>
#include <string_view>

#include "tessera/common/status.h"

namespace spdlog {
class logger;
}

namespace tessera {

// Parses "trace|debug|info|warn|error|critical|off" and sets spdlog's default level.
// Meant to be called from main() with the value of a --log-level flag.
Status SetLogLevel(std::string_view level);

// A logger whose lines carry `name` (e.g. "server-1"); shares the default sink and level.
std::shared_ptr<spdlog::logger> MakeLogger(const std::string& name);

}  // namespace tessera

#endif  // TESSERA_COMMON_LOGGING_H_
