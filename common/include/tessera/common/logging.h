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

// The output manners of a process of a job (docs/running.md, "Output"), applied by the
// runtime before main() and by tessera-server at start, so that a program's own settings (a
// --log-level flag) still override them:
//   - logs go to stderr (the default logger's sink), leaving stdout to the program's output;
//   - under a launcher (TESSERA_ROLE set), stdout and stderr become line-buffered, so that each
//     line reaches the launcher (a pipe) when printed, not in 4 KiB bursts;
//   - TESSERA_LOG_LEVEL, when set, becomes the log level (`tessera run --log-level`).
// Colour: spdlog's colour sinks colour only a terminal (their automatic mode), never a pipe.
// Returns InvalidArgument naming TESSERA_LOG_LEVEL when its value is not a level (the level is
// then unchanged); the buffering is set up either way.
Status ApplyJobOutputDefaults();

// A logger whose lines carry `name` (e.g. "server-1"); shares the default sink and level.
std::shared_ptr<spdlog::logger> MakeLogger(const std::string& name);

}  // namespace tessera

#endif  // TESSERA_COMMON_LOGGING_H_
