#include "tessera/common/status.h"

#include <cstdio>
#include <cstdlib>

#include "tessera/common/check.h"

namespace tessera {

std::string_view StatusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return "OK";
    case StatusCode::kInvalidArgument:
      return "InvalidArgument";
    case StatusCode::kNotFound:
      return "NotFound";
    case StatusCode::kOutOfRange:
      return "OutOfRange";
    case StatusCode::kFailedPrecondition:
      return "FailedPrecondition";
    case StatusCode::kUnavailable:
      return "Unavailable";
    case StatusCode::kDataLoss:
      return "DataLoss";
    case StatusCode::kAborted:
      return "Aborted";
    case StatusCode::kInternal:
      return "Internal";
  }
  return "Unknown";
}

std::string Status::ToString() const {
  if (ok()) return "OK";
  std::string s(StatusCodeName(code_));
  s += ": ";
  s += message_;
  return s;
}

namespace internal {
void CheckFailed(const char* file, int line, const char* condition, const char* msg) {
  // stderr directly: the logger itself may be what is broken.
  std::fprintf(stderr, "tessera: check failed at %s:%d: %s %s\n", file, line, condition, msg);
  std::fflush(stderr);
  std::abort();
}
}  // namespace internal

}  // namespace tessera
