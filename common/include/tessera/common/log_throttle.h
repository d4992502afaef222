// LogThrottle: rate-limits a kind of log line that the outside world can trigger (a rejected
// message, a dropped frame), so that a flood of bad input cannot flood the log or spend the
// receiver's time on writing it.
//
// Thread safety: none; one event loop owns a throttle.
#ifndef TESSERA_COMMON_LOG_THROTTLE_H_
#define TESSERA_COMMON_LOG_THROTTLE_H_

#include <chrono>
#include <cstdint>
#include <string>

namespace tessera {

class LogThrottle {
 public:
  using Clock = std::chrono::steady_clock;
  // At most `burst` lines per `period`. Defaults: 10 lines per 10 s.
  explicit LogThrottle(int burst = 10, std::chrono::milliseconds period = std::chrono::seconds(10))
      : burst_(burst), period_(period) {}

  // Whether a line may be logged now. Every call counts as an event (total()).
  bool Allow(Clock::time_point now = Clock::now());
  // For the next line allowed: " (N similar lines suppressed)" when lines were held back since
  // the last one, else "". Resets the count.
  std::string TakeSuppressedNote();

  uint64_t total() const { return total_; }

 private:
  int burst_;
  std::chrono::milliseconds period_;
  Clock::time_point window_start_{};
  int in_window_ = 0;
  uint64_t suppressed_ = 0;
  uint64_t total_ = 0;
};

}  // namespace tessera

#endif  // TESSERA_COMMON_LOG_THROTTLE_H_
