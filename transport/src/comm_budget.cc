#include "tessera/transport/comm_budget.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>

namespace tessera {

std::string_view SendPolicyName(SendPolicy p) {
  switch (p) {
    case SendPolicy::kOff:
      return "off";
    case SendPolicy::kFifo:
      return "fifo";
    case SendPolicy::kRandom:
      return "random";
    case SendPolicy::kRelativeMagnitude:
      return "relative-magnitude";
  }
  return "unknown";
}

Result<SendPolicy> ParseSendPolicy(std::string_view name) {
  for (SendPolicy p :
       {SendPolicy::kOff, SendPolicy::kFifo, SendPolicy::kRandom, SendPolicy::kRelativeMagnitude}) {
    if (name == SendPolicyName(p)) return p;
  }
  return Status::InvalidArgument(fmt::format(
      "unknown send policy '{}' (expected off, fifo, random or relative-magnitude)", name));
}

Result<CommOptions> CommOptionsFromEnv(int share) {
  CommOptions comm;
  if (const char* policy = std::getenv("TESSERA_COMM_POLICY");
      policy != nullptr && *policy != '\0') {
    auto p = ParseSendPolicy(policy);
    if (!p.ok()) return Status::InvalidArgument("TESSERA_COMM_POLICY: " + p.status().message());
    comm.policy = *p;
  }
  if (const char* rate = std::getenv("TESSERA_COMM_BYTES_PER_SECOND");
      rate != nullptr && *rate != '\0') {
    char* end = nullptr;
    double bytes = std::strtod(rate, &end);
    if (end == rate || *end != '\0' || bytes < 0) {
      return Status::InvalidArgument(
          fmt::format("TESSERA_COMM_BYTES_PER_SECOND='{}' is not a non-negative number", rate));
    }
    comm.bytes_per_second = bytes / std::max(1, share);
  }
  return comm;
}

TokenBucket::TokenBucket(double bytes_per_second, double burst_bytes)
    : rate_(bytes_per_second), burst_(burst_bytes), tokens_(0), last_(Clock::now()) {}

void TokenBucket::Refill(Clock::time_point now) {
  double seconds = std::chrono::duration<double>(now - last_).count();
  last_ = now;
  tokens_ = std::min(burst_, tokens_ + seconds * rate_);
}

std::chrono::milliseconds TokenBucket::TimeUntilPositive() const {
  if (tokens_ > 0 || rate_ <= 0) return std::chrono::milliseconds(0);
  return std::chrono::milliseconds(static_cast<int64_t>(std::ceil(-tokens_ / rate_ * 1000.0)) + 1);
}

}  // namespace tessera
