#include "tessera/compiler/dependence.h"


#include "tessera/common/check.h"

namespace tessera::compiler {
namespace {

__extension__ using Int128 = __int128;  // __extension__: GCC/Clang builtin, not ISO

// c . d = rhs over the key dims. Int128 leaves headroom for fraction-free elimination of the
// few small equations a subscript pair produces.
struct Equation {
  std::vector<Int128> coeff;  // over d_0 .. d_{n-1}
  Int128 rhs = 0;
};

Int128 Gcd(Int128 a, Int128 b) {
  if (a < 0) a = -a;
  if (b < 0) b = -b;
  while (b != 0) {
    Int128 t = a % b;
    a = b;
    b = t;
  }
  return a;
}

void Normalize(Equation* e) {
  Int128 g = 0;
  for (Int128 c : e->coeff) g = Gcd(g, c);
  g = Gcd(g, e->rhs);
  if (g > 1) {
    for (Int128& c : e->coeff) c /= g;
    e->rhs /= g;
  }
}

}  // namespace

std::optional<DepVector> ComputeDependence(const std::vector<Affine>& a,
                                           const std::vector<Affine>& b, int key_rank,
                                           std::vector<int64_t>* ray) {
  TESSERA_CHECK(a.size() == b.size());
  if (ray != nullptr) ray->clear();
  bool exact = true;  // no equation dropped: the system describes the dependence set exactly
  DepVector result(key_rank, DepComponent::Any());
  std::vector<Equation> equations;

  // One equation per array dim: a(k) == b(k') with k' = k + d. When both sides have the same key
  // coefficients c this is the uniform equation c . d = a.const - b.const (symbols must cancel).
  // Otherwise (non-uniform pair, or invariant offsets that do not cancel) the equation is dropped:
  // dropping a constraint can only leave more components `*`, which is the conservative side.
  for (size_t m = 0; m < a.size(); ++m) {
    const Affine& x = a[m];
    const Affine& y = b[m];
    if (!x.known() || !y.known()) {
      exact = false;
      continue;  // no constraint: may be any element
    }
    if (x.key_coeffs() == y.key_coeffs()) {
      if (x.symbols() != y.symbols()) {  // A(key[0] + n) vs A(key[0] + m)
        exact = false;
        continue;
      }
      Equation e;
      e.coeff.assign(x.key_coeffs().begin(), x.key_coeffs().end());
      e.rhs = static_cast<Int128>(x.constant()) - y.constant();
      equations.push_back(std::move(e));
      continue;
    }
    // Non-uniform pair. If neither depends on the key, it is a plain comparison of invariants.
    // (Both key-free with equal coefficients was handled above as a uniform equation 0 = c.)
    exact = false;
  }

  // Gaussian elimination over the integers (fraction-free), then read off dims that are pinned to
  // a single value by a row with one non-zero coefficient.
  const int n = key_rank;
  int row = 0;
  for (int col = 0; col < n && row < static_cast<int>(equations.size()); ++col) {
    int pivot = -1;
    for (int r = row; r < static_cast<int>(equations.size()); ++r) {
      if (equations[r].coeff[col] != 0) {
        pivot = r;
        break;
      }
    }
    if (pivot < 0) continue;
    std::swap(equations[row], equations[pivot]);
    for (int r = 0; r < static_cast<int>(equations.size()); ++r) {
      if (r == row || equations[r].coeff[col] == 0) continue;
      Int128 f = equations[r].coeff[col];
      Int128 p = equations[row].coeff[col];
      for (int c = 0; c < n; ++c) {
        equations[r].coeff[c] = equations[r].coeff[c] * p - equations[row].coeff[c] * f;
      }
      equations[r].rhs = equations[r].rhs * p - equations[row].rhs * f;
      Normalize(&equations[r]);
    }
    ++row;
  }
  for (const Equation& e : equations) {
    int nonzero = 0;
    int which = -1;
    for (int c = 0; c < n; ++c) {
      if (e.coeff[c] != 0) {
        ++nonzero;
        which = c;
      }
    }
    if (nonzero == 0) {
      if (e.rhs != 0) return std::nullopt;  // inconsistent: the accesses never meet
      continue;
    }
    if (nonzero == 1) {
      if (e.rhs % e.coeff[which] != 0) return std::nullopt;  // no integer distance
      result[which] = DepComponent::Distance(static_cast<int64_t>(e.rhs / e.coeff[which]));
    }
  }
  // The one case worth a ray: two key dims, both free, tied by a single homogeneous equation
  // c0*d0 + c1*d1 = 0, so the dependences are exactly t * (c1, -c0) / g.
  if (ray != nullptr && exact && n == 2 && result[0].any && result[1].any) {
    const Equation* tie = nullptr;
    int nonzero_rows = 0;
    for (const Equation& e : equations) {
      if (e.coeff[0] == 0 && e.coeff[1] == 0) continue;
      ++nonzero_rows;
      tie = &e;
    }
    if (nonzero_rows == 1 && tie->rhs == 0 && tie->coeff[0] != 0 && tie->coeff[1] != 0) {
      const Int128 g = Gcd(tie->coeff[0], tie->coeff[1]);
      *ray = {static_cast<int64_t>(tie->coeff[1] / g), static_cast<int64_t>(-tie->coeff[0] / g)};
    }
  }
  return result;
}

bool IsZeroVector(const DepVector& v) {
  for (const DepComponent& c : v) {
    if (!c.IsZero()) return false;
  }
  return true;
}

bool IsConstantVector(const DepVector& v) {
  for (const DepComponent& c : v) {
    if (c.any) return false;
  }
  return true;
}

std::string ToString(const DepVector& v) {
  std::string out = "(";
  for (size_t i = 0; i < v.size(); ++i) {
    if (i > 0) out += ", ";
    out += v[i].any ? "*" : std::to_string(v[i].distance);
  }
  return out + ")";
}

}  // namespace tessera::compiler
