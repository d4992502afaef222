// TESSERA_CHECK: programmer invariants. A failed check logs where and why, then aborts.
// Never use it for conditions the outside world can cause (bad input, lost peers): return a
// Status for those.
#ifndef TESSERA_COMMON_CHECK_H_
#define TESSERA_COMMON_CHECK_H_

namespace tessera::internal {
[[noreturn]] void CheckFailed(const char* file, int line, const char* condition, const char* msg);
}  // namespace tessera::internal

#define TESSERA_CHECK_MSG(cond, msg)                                               \
  do {                                                                             \
    if (!(cond)) ::tessera::internal::CheckFailed(__FILE__, __LINE__, #cond, msg); \
  } while (0)
#define TESSERA_CHECK(cond) TESSERA_CHECK_MSG(cond, "")

#endif  // TESSERA_COMMON_CHECK_H_
