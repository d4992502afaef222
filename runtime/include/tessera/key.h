// Key<N>: the indices of one element of an N-dimensional DistArray.
//
// A parallel_for body receives the key of the element it is visiting; the analyzer (tessc) models
// every DistArray subscript as an affine function of key[0], ..., key[N-1].
//
// Thread safety: a value type.
#ifndef TESSERA_KEY_H_
#define TESSERA_KEY_H_

#include <array>
#include <cstdint>

namespace tessera {

template <int N>
struct Key {
  static_assert(N >= 1, "a Key has at least one component");

  std::array<int64_t, N> idx{};

  // REQUIRES: 0 <= i < N.
  int64_t operator[](int i) const { return idx[static_cast<size_t>(i)]; }
  static constexpr int rank() { return N; }

  friend bool operator==(const Key&, const Key&) = default;
};

}  // namespace tessera

#endif  // TESSERA_KEY_H_
