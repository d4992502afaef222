// RelaxedArray<T, N>: a parameter-server table, explicitly excluded from dependence analysis.
//
//   auto totals = tessera::RelaxedArray<int64_t, 1>::dense(ctx, {topics}, /*staleness=*/1);
//   int64_t n = totals(k);      // read: may be up to `staleness` clocks stale when distributed
//   totals.add(k, +1);          // the only write: an additive update
//
// Declaring an array relaxed is the user's statement that the program tolerates stale reads of it
// and that every write is additive (commutative), so the analyzer ignores its accesses when it
// computes dependences; when distributed it lives on the parameter servers under SSP with the
// given staleness. In serial mode reads see every earlier add (staleness is then irrelevant).
//
// Ownership: move-only, owns its (serial-mode) elements; refers to its Context, which must outlive
// it. Thread safety: in serial mode like std::vector; under the parallel executor add() and reads
// are atomic (relaxed); a distributed executor gives each thread its own view (process cache +
// update log).
#ifndef TESSERA_RELAXED_ARRAY_H_
#define TESSERA_RELAXED_ARRAY_H_

#include <array>
#include <atomic>
#include <concepts>
#include <cstdint>
#include <memory>
#include <source_location>

#include "tessera/common/check.h"
#include "tessera/context.h"
#include "tessera/internal/array_storage.h"
#include "tessera/key.h"

namespace tessera {

namespace internal {
// An additive update of a relaxed element. Executor threads may update one element concurrently
// -- relaxed accesses are outside dependence analysis -- so they add atomically; serial code and
// an executor's only thread (one per worker process) keep the plain add.
// A zero delta (a body adding without a branch) costs no locked instruction.
template <typename T>
inline void RelaxedAdd(T& element, T delta) {
  if (ConcurrentExecutorThread()) {
    if (delta != T{}) std::atomic_ref<T>(element).fetch_add(delta, std::memory_order_relaxed);
  } else {
    element += delta;
  }
}
// A read of a relaxed element: atomic (relaxed) always, as other threads may add to it at the same
// time and a plain load would then be a data race. Where nobody else adds it is the plain load it
// compiles to on x86-64, so no test of the thread is needed.
template <typename T>
inline T RelaxedRead(T& element) {
  return std::atomic_ref<T>(element).load(std::memory_order_relaxed);
}
}  // namespace internal

// Row i of a 2-D RelaxedArray: r[j] reads, r.add(j, delta) writes.
template <typename T>
class RelaxedRowView {
 public:
  RelaxedRowView(T* data, int64_t size) : data_(data), size_(size) {}
  // REQUIRES: 0 <= j < size().
  T operator[](int64_t j) const {
#ifndef NDEBUG
    TESSERA_CHECK_MSG(j >= 0 && j < size_, "RelaxedRowView index out of range");
#endif
    return internal::RelaxedRead(data_[j]);
  }
  void add(int64_t j, T delta) const {
#ifndef NDEBUG
    TESSERA_CHECK_MSG(j >= 0 && j < size_, "RelaxedRowView index out of range");
#endif
    internal::RelaxedAdd(data_[j], delta);
  }
  int64_t size() const { return size_; }

 private:
  T* data_;
  int64_t size_;
};

template <typename T, int N>
class RelaxedArray {
 public:
  using value_type = T;
  using Shape = std::array<int64_t, N>;

  RelaxedArray() = default;
  RelaxedArray(RelaxedArray&&) noexcept = default;
  RelaxedArray& operator=(RelaxedArray&&) noexcept = default;
  RelaxedArray(const RelaxedArray&) = delete;
  RelaxedArray& operator=(const RelaxedArray&) = delete;

  // A table of zeros. `staleness`: clocks a reader may lag behind when distributed (SSP);
  // 0 is bulk-synchronous. REQUIRES: staleness >= 0.
  // Records where it was called (see internal::ArrayOrigin); leave `loc` at its default.
  static RelaxedArray dense(Context& ctx, Shape shape, int staleness = 0,
                            std::source_location loc = std::source_location::current()) {
    TESSERA_CHECK_MSG(staleness >= 0, "RelaxedArray staleness must be >= 0");
    RelaxedArray a;
    a.s_ = std::make_unique<internal::ArrayStorage<T, N>>(&ctx, ctx.NextArrayId(), shape, false,
                                                      internal::OriginOf(loc));
    a.data_ = a.s_->dense_.data();
    a.staleness_ = staleness;
    a.s_->relaxed_ = true;
    a.s_->staleness_ = staleness;
    return a;
  }

  bool valid() const { return s_ != nullptr; }
  const Shape& shape() const { return s_->shape_; }
  int64_t extent(int dim) const { return s_->shape_[dim]; }
  int64_t size() const { return s_->size(); }
  int staleness() const { return staleness_; }
  Context& context() const { return *s_->ctx_; }

  // Reads. REQUIRES: indices within the shape (checked).
  template <std::integral... I>
    requires(sizeof...(I) == N)
  T operator()(I... i) const {
    return get(Key<N>{{static_cast<int64_t>(i)...}});
  }
  T get(const Key<N>& k) const {
    TESSERA_CHECK_MSG(s_->InBounds(k), "RelaxedArray index out of range");
    return internal::RelaxedRead(data_[s_->Linear(k)]);
  }

  // Additive updates, the only writes. REQUIRES: indices within the shape (checked).
  void add(int64_t i0, T delta)
    requires(N == 1)
  {
    add(Key<1>{{i0}}, delta);
  }
  void add(int64_t i0, int64_t i1, T delta)
    requires(N == 2)
  {
    add(Key<2>{{i0, i1}}, delta);
  }
  void add(int64_t i0, int64_t i1, int64_t i2, T delta)
    requires(N == 3)
  {
    add(Key<3>{{i0, i1, i2}}, delta);
  }
  void add(const Key<N>& k, T delta) {
    TESSERA_CHECK_MSG(s_->InBounds(k), "RelaxedArray index out of range");
    internal::RelaxedAdd(data_[s_->Linear(k)], delta);
  }

  // Row i of a 2-D table. REQUIRES: N == 2, 0 <= i < extent(0).
  RelaxedRowView<T> row(int64_t i)
    requires(N == 2)
  {
    TESSERA_CHECK_MSG(i >= 0 && i < s_->shape_[0], "RelaxedArray::row index out of range");
    return RelaxedRowView<T>(data_ + i * s_->shape_[1], s_->shape_[1]);
  }

  const internal::ArrayBase& base() const { return *s_; }

 private:
  std::unique_ptr<internal::ArrayStorage<T, N>> s_;
  T* data_ = nullptr;
  int staleness_ = 0;
};

}  // namespace tessera

#endif  // TESSERA_RELAXED_ARRAY_H_
