#include "tessera/compiler/affine.h"

#include <utility>

#include "tessera/common/check.h"

namespace tessera::compiler {
namespace {

bool AddOverflows(int64_t a, int64_t b, int64_t* out) { return __builtin_add_overflow(a, b, out); }
bool MulOverflows(int64_t a, int64_t b, int64_t* out) { return __builtin_mul_overflow(a, b, out); }

// Appends " + 3*x" / " - x" style terms; `first` tracks whether a sign prefix is needed.
void AppendTerm(std::string* out, int64_t coeff, const std::string& name, bool* first) {
  if (coeff == 0) return;
  int64_t mag = coeff < 0 ? -coeff : coeff;
  if (*first) {
    if (coeff < 0) *out += "-";
  } else {
    *out += coeff < 0 ? " - " : " + ";
  }
  if (name.empty()) {
    *out += std::to_string(mag);
  } else {
    if (mag != 1) *out += std::to_string(mag) + "*";
    *out += name;
  }
  *first = false;
}

}  // namespace

Affine Affine::Constant(int key_rank, int64_t value) {
  Affine a;
  a.known_ = true;
  a.key_.assign(key_rank, 0);
  a.constant_ = value;
  return a;
}

Affine Affine::KeyComponent(int key_rank, int dim) {
  TESSERA_CHECK(dim >= 0 && dim < key_rank);
  Affine a = Constant(key_rank, 0);
  a.key_[dim] = 1;
  return a;
}

Affine Affine::Symbol(int key_rank, std::string id) {
  Affine a = Constant(key_rank, 0);
  a.symbols_[std::move(id)] = 1;
  return a;
}

bool Affine::DependsOnKey() const {
  for (int64_t c : key_) {
    if (c != 0) return true;
  }
  return false;
}

std::optional<int> Affine::SingleKeyDim() const {
  if (!known_ || !symbols_.empty()) return std::nullopt;
  std::optional<int> dim;
  for (int i = 0; i < key_rank(); ++i) {
    if (key_[i] == 0) continue;
    if (key_[i] != 1 || dim) return std::nullopt;
    dim = i;
  }
  return dim;
}

Affine operator+(const Affine& a, const Affine& b) {
  if (!a.known_ || !b.known_ || a.key_.size() != b.key_.size()) return Affine::Unknown();
  Affine r = a;
  for (size_t i = 0; i < r.key_.size(); ++i) {
    if (AddOverflows(r.key_[i], b.key_[i], &r.key_[i])) return Affine::Unknown();
  }
  for (const auto& [sym, c] : b.symbols_) {
    int64_t& slot = r.symbols_[sym];
    if (AddOverflows(slot, c, &slot)) return Affine::Unknown();
    if (slot == 0) r.symbols_.erase(sym);
  }
  if (AddOverflows(r.constant_, b.constant_, &r.constant_)) return Affine::Unknown();
  return r;
}

Affine operator-(const Affine& a, const Affine& b) { return a + (-b); }

Affine Affine::Scaled(int64_t factor) const {
  if (!known_) return Unknown();
  if (factor == 0) return Constant(key_rank(), 0);
  Affine r = *this;
  for (int64_t& c : r.key_) {
    if (MulOverflows(c, factor, &c)) return Unknown();
  }
  for (auto& [sym, c] : r.symbols_) {
    if (MulOverflows(c, factor, &c)) return Unknown();
  }
  if (MulOverflows(r.constant_, factor, &r.constant_)) return Unknown();
  return r;
}

std::string Affine::ToString() const {
  if (!known_) return "?";
  std::string out;
  bool first = true;
  for (int i = 0; i < key_rank(); ++i) {
    AppendTerm(&out, key_[i], "key[" + std::to_string(i) + "]", &first);
  }
  for (const auto& [sym, c] : symbols_) {
    AppendTerm(&out, c, sym.substr(0, sym.find('@')), &first);
  }
  AppendTerm(&out, constant_, "", &first);
  return first ? "0" : out;
}

}  // namespace tessera::compiler
