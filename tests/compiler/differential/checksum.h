// Differential programs print one line per array: a name and an order-independent digest of its
// elements, so that runs with different executors can be compared with `diff`. Elements are
// integer-valued (stored in float or int64), which keeps every sum exact whatever the order.
#ifndef TESSERA_TESTS_COMPILER_DIFFERENTIAL_CHECKSUM_H_
#define TESSERA_TESTS_COMPILER_DIFFERENTIAL_CHECKSUM_H_

#include <cstdint>
#include <cstdio>

#include <tessera/tessera.h>

namespace difftest {

// sum of value * (position + 1) over the stored elements: sensitive to which element holds what.
template <typename T, int N>
void Print(const char* name, tessera::DistArray<T, N>& a) {
  if (a.context().job().rank != 0) return;
  long double digest = 0;
  if (a.is_sparse()) {
    for (int64_t p = 0; p < a.size(); ++p) {
      digest += static_cast<long double>(a.value_at(p)) * static_cast<long double>(p + 1);
    }
  } else {
    const T* d = a.data();
    for (int64_t p = 0; p < a.size(); ++p) {
      digest += static_cast<long double>(d[p]) * static_cast<long double>(p + 1);
    }
  }
  std::printf("%s %.0Lf\n", name, digest);
}

inline void PrintValue(tessera::Context& ctx, const char* name, long double v) {
  if (ctx.job().rank == 0) std::printf("%s %.0Lf\n", name, v);
}

}  // namespace difftest

#endif  // TESSERA_TESTS_COMPILER_DIFFERENTIAL_CHECKSUM_H_
