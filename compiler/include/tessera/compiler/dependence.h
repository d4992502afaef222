// Dependence vectors between two accesses to the same array inside one parallel_for body.
//
// For accesses a (in iteration k) and b (in iteration k'), the dependence vector is d = k' - k over
// the key dimensions, for every pair of iterations in which a and b touch the same element. Each
// component is either a known distance or `*` (any / unknown). Components become `*` whenever the
// subscripts do not pin them down: an unknown subscript, subscripts with different coefficients
// (`A(key[0])` vs `A(n - key[0])`), or a key dimension no subscript mentions.
//
// Thread safety: pure functions.
#ifndef TESSERA_COMPILER_DEPENDENCE_H_
#define TESSERA_COMPILER_DEPENDENCE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tessera/compiler/affine.h"

namespace tessera::compiler {

struct DepComponent {
  bool any = true;        // `*`: the distance may be anything
  int64_t distance = 0;   // meaningful iff !any

  static DepComponent Any() { return {}; }
  static DepComponent Distance(int64_t d) { return {false, d}; }
  bool IsZero() const { return !any && distance == 0; }
  bool IsNonZeroConstant() const { return !any && distance != 0; }
  friend bool operator==(const DepComponent&, const DepComponent&) = default;
};

using DepVector = std::vector<DepComponent>;

// The dependence vector of two accesses with the given subscripts (one Affine per array dim, same
// count on both sides), or nullopt when they can never touch the same element (e.g. `A(key[0])`
// vs `A(2 * key[0] + 1)` with no integer solution, or `A(0)` vs `A(1)`).
// The zero vector means "only within the same iteration".
//
// `ray` (optional): set to a primitive vector v when the dependence set is exactly {t * v} over the
// integers (two key dims, one homogeneous coupled equation such as key[0] + key[1] on both sides,
// no constraint dropped), cleared otherwise. The per-dim vector of such a dependence is (*, *);
// the ray tells the unimodular search which way the dependence really points.
std::optional<DepVector> ComputeDependence(const std::vector<Affine>& a,
                                           const std::vector<Affine>& b, int key_rank,
                                           std::vector<int64_t>* ray = nullptr);

// True when every component is a known 0 (the accesses only meet inside one iteration).
bool IsZeroVector(const DepVector& v);
// True when every component is known (a uniform, constant-distance dependence).
bool IsConstantVector(const DepVector& v);
// "(0, *)", "(1, -1)".
std::string ToString(const DepVector& v);

}  // namespace tessera::compiler

#endif  // TESSERA_COMPILER_DEPENDENCE_H_
