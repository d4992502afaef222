// A per-element hash of a rank-3 sparse element (its key and value) that partitioned_permute
// sums over the elements and partitioned_permute_test recomputes from the file: a lost or
// doubled element changes the sum.
#ifndef TESSERA_TESTS_RUNTIME_DISTRIBUTED_ELEMENT_HASH_H_
#define TESSERA_TESTS_RUNTIME_DISTRIBUTED_ELEMENT_HASH_H_

#include <cstdint>

namespace tessera::testing {

inline double ElementHash(int64_t a, int64_t b, int64_t c, int64_t v) {
  uint64_t h = static_cast<uint64_t>(a) * 1000003u + static_cast<uint64_t>(b) * 7919u +
               static_cast<uint64_t>(c) * 31u + static_cast<uint64_t>(v);
  h ^= h >> 29;
  h *= 0xBF58476D1CE4E5B9ULL;
  h ^= h >> 32;
  return static_cast<double>(h % 1000003u);
}

}  // namespace tessera::testing

#endif  // TESSERA_TESTS_RUNTIME_DISTRIBUTED_ELEMENT_HASH_H_
