// Managed communication: a bandwidth budget and the order in which spare bandwidth is spent.
//
// Between clock boundaries the network sits idle; Bösen (SoCC'15) spends it sending pending
// updates (client) and fresh rows (server) early, most important first, which makes reads
// fresher than the staleness bound requires. What the SSP bound requires is still sent at the
// boundary, budget or not.
#ifndef TESSERA_TRANSPORT_COMM_BUDGET_H_
#define TESSERA_TRANSPORT_COMM_BUDGET_H_

#include <chrono>
#include <cstddef>
#include <optional>
#include <string_view>

#include "tessera/common/status.h"

namespace tessera {

enum class SendPolicy {
  kOff,                // send only at clock boundaries
  kFifo,               // oldest pending row first
  kRandom,             // uniformly random pending row
  kRelativeMagnitude,  // largest accumulated sum |delta / value| first (|delta| where value is 0)
};

std::string_view SendPolicyName(SendPolicy p);
// "off", "fifo", "random" or "relative-magnitude".
Result<SendPolicy> ParseSendPolicy(std::string_view name);

struct CommOptions {
  // What to send early. Default: kOff.
  SendPolicy policy = SendPolicy::kOff;
  // Bytes per second this node may send (a job budget B over W workers is B/W each). Sends at
  // clock boundaries count against it but are never held back. Default: 0, which with a policy
  // other than kOff means "no spare bandwidth": nothing is sent early.
  double bytes_per_second = 0;
  // Rows sent per early message. Default: 64.
  size_t rows_per_message = 64;
  // Candidates examined per early message under kRelativeMagnitude; with this many or fewer
  // pending rows, all of them are examined and the order is exact. Default: 256.
  size_t sample_size = 256;

  bool early_sends() const { return policy != SendPolicy::kOff && bytes_per_second > 0; }
};

// CommOptions from the job's environment: TESSERA_COMM_POLICY and TESSERA_COMM_BYTES_PER_SECOND
// (the job's budget), divided by `share`, the number of nodes of this kind that split it. Off when
// the variables are not set; InvalidArgument when they are malformed.
Result<CommOptions> CommOptionsFromEnv(int share);

// A token bucket in bytes. Not thread-safe: owned by one event loop.
class TokenBucket {
 public:
  using Clock = std::chrono::steady_clock;
  // `burst`: the most that may accumulate while idle, so a quiet period cannot be spent at once.
  TokenBucket(double bytes_per_second, double burst_bytes);

  // Adds what accrued since the last call.
  void Refill(Clock::time_point now);
  // Spends `bytes`; the balance may go negative (sends that may not wait).
  void Spend(double bytes) { tokens_ -= bytes; }
  bool has_tokens() const { return tokens_ > 0; }
  // How long until the balance is positive again (zero if it is).
  std::chrono::milliseconds TimeUntilPositive() const;

 private:
  double rate_;
  double burst_;
  double tokens_;
  Clock::time_point last_;
};

}  // namespace tessera

#endif  // TESSERA_TRANSPORT_COMM_BUDGET_H_
