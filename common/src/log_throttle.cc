#include "tessera/common/log_throttle.h"

#include <fmt/format.h>

namespace tessera {

bool LogThrottle::Allow(Clock::time_point now) {
  ++total_;
  if (in_window_ == 0 || now - window_start_ >= period_) {
    window_start_ = now;
    in_window_ = 0;
  }
  if (in_window_ < burst_) {
    ++in_window_;
    return true;
  }
  ++suppressed_;
  return false;
}

std::string LogThrottle::TakeSuppressedNote() {
  if (suppressed_ == 0) return "";
  std::string note = fmt::format(" ({} similar lines suppressed)", suppressed_);
  suppressed_ = 0;
  return note;
}

}  // namespace tessera
