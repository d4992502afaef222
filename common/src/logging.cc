#include "tessera/common/logging.h"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <cstdio>
#include <cstdlib>

namespace tessera {

Status SetLogLevel(std::string_view level) {
  auto parsed = spdlog::level::from_str(std::string(level));
  // from_str maps unknown names to "off"; only accept "off" when asked for.
  if (parsed == spdlog::level::off && level != "off") {
    return Status::InvalidArgument("unknown log level '" + std::string(level) +
                                   "' (expected trace, debug, info, warn, error, critical, off)");
  }
  spdlog::set_level(parsed);
  return Status::Ok();
}

Status ApplyJobOutputDefaults() {
  // Logs go to stderr: a program's stdout is its own output, which a user may pipe on.
  auto logs = std::make_shared<spdlog::logger>(
      "", std::make_shared<spdlog::sinks::stderr_color_sink_mt>());
  logs->set_level(spdlog::get_level());
  spdlog::set_default_logger(std::move(logs));
  const char* role = std::getenv("TESSERA_ROLE");
  if (role != nullptr && *role != '\0') {
    std::setvbuf(stdout, nullptr, _IOLBF, BUFSIZ);
    std::setvbuf(stderr, nullptr, _IOLBF, BUFSIZ);
  }
  const char* level = std::getenv("TESSERA_LOG_LEVEL");
  if (level == nullptr || *level == '\0') return Status::Ok();
  if (Status s = SetLogLevel(level); !s.ok()) {
    return Status::InvalidArgument("TESSERA_LOG_LEVEL: " + s.message());
  }
  return Status::Ok();
}

std::shared_ptr<spdlog::logger> MakeLogger(const std::string& name) {
  auto base = spdlog::default_logger();
  auto logger = std::make_shared<spdlog::logger>(name, base->sinks().begin(), base->sinks().end());
  logger->set_level(spdlog::get_level());
  return logger;
}

}  // namespace tessera
