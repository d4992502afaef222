// What a job secret a user supplies (`tessera run --from-env`) must look like. Every key of a
// job is derived from its secret (security.h), so whoever guesses the secret joins the job.
#ifndef TESSERA_TRANSPORT_SECRET_STRENGTH_H_
#define TESSERA_TRANSPORT_SECRET_STRENGTH_H_

#include <cstddef>
#include <string_view>

#include "tessera/common/status.h"

namespace tessera {

// A secret needs at least this many characters, of at least this many different ones. This
// refuses short and repetitive secrets ("s3cret", "aaaaaaaaaaaaaaaa", "abababababababab"), not
// every guessable one. The launcher's own secrets (16 random bytes as 32 hex digits) pass.
inline constexpr size_t kMinSecretChars = 16;
inline constexpr size_t kMinSecretDistinctChars = 8;

// InvalidArgument saying what is wrong (never the secret itself) and how to make a good one; Ok
// otherwise. An empty secret (no authentication) is the caller's case; here it is too short.
Status CheckSecretStrength(std::string_view secret);

}  // namespace tessera

#endif  // TESSERA_TRANSPORT_SECRET_STRENGTH_H_
