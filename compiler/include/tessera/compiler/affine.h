// Affine subscripts: integer affine functions of the parallel_for key components.
//
// A subscript such as `n - key[0] + 1` is modelled as
//     sum_i key[i] * k_i  +  sum_s s * c_s  +  constant
// where the symbols s are loop-invariant program variables (captured by the loop body and never
// modified inside it). Anything else (an inner-loop variable, a value read from an array, a
// function result) makes the subscript `Unknown`, which the dependence test treats as "may be any
// index".
//
// Thread safety: plain values.
#ifndef TESSERA_COMPILER_AFFINE_H_
#define TESSERA_COMPILER_AFFINE_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace tessera::compiler {

class Affine {
 public:
  // Unknown by default.
  Affine() = default;

  static Affine Unknown() { return Affine(); }
  static Affine Constant(int key_rank, int64_t value);
  // key[dim]. REQUIRES: 0 <= dim < key_rank.
  static Affine KeyComponent(int key_rank, int dim);
  // A loop-invariant variable. `id` must be unique per variable (the front end uses name@offset);
  // the part before '@' is what ToString() prints.
  static Affine Symbol(int key_rank, std::string id);

  bool known() const { return known_; }
  int key_rank() const { return static_cast<int>(key_.size()); }
  // Coefficient of key[dim]. REQUIRES: known().
  int64_t key_coeff(int dim) const { return key_[dim]; }
  const std::vector<int64_t>& key_coeffs() const { return key_; }
  const std::map<std::string, int64_t>& symbols() const { return symbols_; }
  int64_t constant() const { return constant_; }

  bool DependsOnKey() const;
  bool IsConstant() const { return known_ && !DependsOnKey() && symbols_.empty(); }
  // If the subscript is exactly key[d] + c (coefficient 1, no symbols), returns d.
  std::optional<int> SingleKeyDim() const;

  // Arithmetic; any unknown operand (or an overflow) yields Unknown.
  friend Affine operator+(const Affine& a, const Affine& b);
  friend Affine operator-(const Affine& a, const Affine& b);
  Affine operator-() const { return Scaled(-1); }
  Affine Scaled(int64_t factor) const;

  friend bool operator==(const Affine& a, const Affine& b) = default;

  // "key[0] - 1", "n - key[0]", "3", "?".
  std::string ToString() const;

 private:
  bool known_ = false;
  std::vector<int64_t> key_;
  std::map<std::string, int64_t> symbols_;
  int64_t constant_ = 0;
};

}  // namespace tessera::compiler

#endif  // TESSERA_COMPILER_AFFINE_H_
