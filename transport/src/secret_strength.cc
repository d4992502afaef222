#include "tessera/transport/secret_strength.h"

#include <fmt/format.h>

#include <bitset>

namespace tessera {

Status CheckSecretStrength(std::string_view secret) {
  constexpr char kHowTo[] =
      "generate one per job, e.g. `head -c16 /dev/urandom | od -An -tx1 | tr -d ' \\n'`";
  if (secret.size() < kMinSecretChars) {
    return Status::InvalidArgument(
        fmt::format("the job secret has {} characters, fewer than the {} a secret needs; {}",
                    secret.size(), kMinSecretChars, kHowTo));
  }
  std::bitset<256> seen;
  for (char c : secret) seen.set(static_cast<unsigned char>(c));
  if (seen.count() < kMinSecretDistinctChars) {
    return Status::InvalidArgument(
        fmt::format("the job secret uses only {} different characters, fewer than the {} a "
                    "secret needs (a repetitive secret is easy to guess); {}",
                    seen.count(), kMinSecretDistinctChars, kHowTo));
  }
  return Status::Ok();
}

}  // namespace tessera
