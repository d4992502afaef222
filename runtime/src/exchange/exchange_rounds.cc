#include "exchange/exchange_rounds.h"

#include <fmt/format.h>

#include <string>
#include <utility>

namespace tessera::internal {

Status CheckRoundBytes(int r, int from, size_t got, size_t expected) {
  if (got == expected) return Status::Ok();
  return Status::DataLoss(fmt::format(
      "worker {} sent {} bytes for round {} of an exchange where {} belong (the plan both workers "
      "made says so)",
      from, got, r, expected));
}

Status ExchangeRoundsByAllToAll(const AllToAllFn& all_to_all, int rank, int num_workers,
                                const RoundsSpec& spec) {
  const size_t W = static_cast<size_t>(num_workers), me = static_cast<size_t>(rank);
  for (int r = 0; r < spec.rounds; ++r) {
    std::vector<std::string> messages(W);
    std::vector<char*> to(W, nullptr);
    for (size_t w = 0; w < W; ++w) {
      if (w == me) continue;
      messages[w].resize(spec.bytes_to(r, static_cast<int>(w)));
      to[w] = messages[w].data();
    }
    TESSERA_RETURN_IF_ERROR(spec.write(r, to));
    Result<std::vector<std::string>> got = all_to_all(std::move(messages));
    if (!got.ok()) return got.status();
    std::vector<std::span<const char>> from(W);
    for (size_t w = 0; w < W; ++w) {
      if (w == me) continue;
      const std::string& m = (*got)[w];
      TESSERA_RETURN_IF_ERROR(CheckRoundBytes(r, static_cast<int>(w), m.size(),
                                              spec.bytes_from(r, static_cast<int>(w))));
      from[w] = std::span<const char>(m.data(), m.size());
    }
    TESSERA_RETURN_IF_ERROR(spec.read(r, from));
  }
  return Status::Ok();
}

}  // namespace tessera::internal
