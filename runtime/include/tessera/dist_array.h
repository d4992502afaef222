// DistArray<T, N>: a dense or sparse N-dimensional array that the runtime may distribute.
//
//   auto W = tessera::DistArray<float, 2>::random(ctx, {users, k}, /*seed=*/1, 0.0f, 0.1f);
//   auto R = tessera::DistArray<float, 2>::sparse(ctx, {users, items});
//   R.insert({{u, i}}, 4.0f);
//   W(u, 0) += 1.0f;           // element access
//   auto w = W.row(u);         // RowView: w[j], w.size()
//
// Every access to a DistArray inside a parallel_for body is tracked by the analyzer (tessc), so a
// parallel schedule keeps the serial program's dependences. Access DistArrays through these
// members (operator(), at, row, and the RowView they return) so the analyzer can see them.
//
// Dense arrays store every element (zero-initialized); sparse arrays store the inserted elements
// in insertion order (their iteration order), until shuffle() or sort_keys() reorders them.
//
// Ownership: a DistArray owns its elements; it is move-only (use clone() for a deep copy) so that
// two names never silently alias one array. It refers to the Context it came from, which must
// outlive it. A default-constructed DistArray is empty (valid() == false) until assigned.
// Thread safety: like std::vector. Distinct elements may be written concurrently (that is what
// executors do); inserting into a sparse array invalidates references to its elements and must
// not happen while a parallel_for iterates over it.
#ifndef TESSERA_DIST_ARRAY_H_
#define TESSERA_DIST_ARRAY_H_

#include <array>
#include <concepts>
#include <cstdint>
#include <memory>
#include <numeric>
#include <source_location>
#include <string>
#include <type_traits>
#include <vector>

#include "tessera/common/check.h"
#include "tessera/context.h"
#include "tessera/internal/array_storage.h"
#include "tessera/key.h"

namespace tessera {

// A view of one row of a dense 2-D DistArray: contiguous elements [0, size()).
// Valid while the array lives and is not moved from. operator[] is unchecked in release builds
// because it is the inner loop of most programs.
template <typename T>
class RowView {
 public:
  RowView(T* data, int64_t size) : data_(data), size_(size) {}

  // REQUIRES: 0 <= j < size().
  T& operator[](int64_t j) const {
#ifndef NDEBUG
    TESSERA_CHECK_MSG(j >= 0 && j < size_, "RowView index out of range");
#endif
    return data_[j];
  }
  int64_t size() const { return size_; }
  T* data() const { return data_; }
  T* begin() const { return data_; }
  T* end() const { return data_ + size_; }

 private:
  T* data_;
  int64_t size_;
};

// One stored element of a sparse row: a matrix's element by its column, a higher-rank array's by
// its whole key.
template <typename T, int N>
struct SparseRowEntry {
  const Key<N>& key;
  T& value;
};
template <typename T>
struct SparseRowEntry<T, 2> {
  int64_t col;  // key[1] of the element
  T& value;
};

// The stored elements of one row (the elements whose key[0] is the row) of a sparse DistArray, in
// storage order:
//   for (auto [col, value] : X.sparse_row(i)) dot += value * w(col);     // rank 2
//   for (auto [key, value] : T.sparse_row(i)) sum += value * w(key[2]);  // rank 3 and more
// Valid until the array is changed (insert, reorder) or moved from.
template <typename T, int N = 2>
class SparseRowView {
 public:
  using Entry = SparseRowEntry<T, N>;
  class Iterator {
   public:
    Iterator(const SparseRowView* row, int64_t j) : row_(row), j_(j) {}
    Entry operator*() const {
      if constexpr (N == 2) {
        return {row_->col(j_), row_->value(j_)};
      } else {
        return {row_->key(j_), row_->value(j_)};
      }
    }
    Iterator& operator++() {
      ++j_;
      return *this;
    }
    bool operator!=(const Iterator& o) const { return j_ != o.j_; }

   private:
    const SparseRowView* row_;
    int64_t j_;
  };

  // `positions` null: the row is keys[0, size), values[0, size).
  SparseRowView(const int64_t* positions, int64_t size, const Key<N>* keys, T* values)
      : positions_(positions), size_(size), keys_(keys), values_(values) {}
  int64_t size() const { return size_; }
  // REQUIRES: 0 <= j < size().
  const Key<N>& key(int64_t j) const { return keys_[at(j)]; }
  int64_t col(int64_t j) const
    requires(N == 2)
  {
    return keys_[at(j)].idx[1];
  }
  T& value(int64_t j) const { return values_[at(j)]; }
  Iterator begin() const { return Iterator(this, 0); }
  Iterator end() const { return Iterator(this, size_); }

 private:
  int64_t at(int64_t j) const { return positions_ == nullptr ? j : positions_[j]; }

  const int64_t* positions_;
  int64_t size_;
  const Key<N>* keys_;
  T* values_;
};

template <typename T, int N>
class DistArray {
 public:
  using value_type = T;
  using key_type = Key<N>;
  using Shape = std::array<int64_t, N>;

  DistArray() = default;
  DistArray(DistArray&&) noexcept = default;
  DistArray& operator=(DistArray&&) noexcept = default;
  DistArray(const DistArray&) = delete;
  DistArray& operator=(const DistArray&) = delete;

  // The factories record where they were called (see internal::ArrayOrigin); leave `loc` at its
  // default.
  // A dense array of zeros (T{}).
  static DistArray dense(Context& ctx, Shape shape,
                         std::source_location loc = std::source_location::current()) {
    return DistArray(ctx, shape, false, internal::OriginOf(loc));
  }
  // A dense array with every element `value`.
  static DistArray filled(Context& ctx, Shape shape, T value,
                          std::source_location loc = std::source_location::current()) {
    DistArray a(ctx, shape, false, internal::OriginOf(loc));
    a.Initialize([value](T* out, int64_t, int64_t count) { std::fill(out, out + count, value); });
    return a;
  }
  // A dense array with elements drawn uniformly from [lo, hi) (floating T) or [lo, hi] (integral
  // T). Deterministic in `seed` on every platform, so SPMD workers agree without communicating.
  static DistArray random(Context& ctx, Shape shape, uint64_t seed, T lo, T hi,
                          std::source_location loc = std::source_location::current()) {
    DistArray a(ctx, shape, false, internal::OriginOf(loc));
    a.Initialize([seed, lo, hi](T* out, int64_t first, int64_t count) {
      for (int64_t i = 0; i < count; ++i) {
        const uint64_t r = internal::SplitMix64At(seed, static_cast<uint64_t>(first + i));
        if constexpr (std::is_floating_point_v<T>) {
          const double u = static_cast<double>(r >> 11) * 0x1.0p-53;  // [0, 1)
          out[i] = static_cast<T>(static_cast<double>(lo) + u * (static_cast<double>(hi) - lo));
        } else {
          const uint64_t span = static_cast<uint64_t>(hi - lo) + 1;
          out[i] = static_cast<T>(lo + static_cast<T>(span == 0 ? r : r % span));
        }
      }
    });
    return a;
  }
  // An empty sparse array (no stored elements) of the given logical shape.
  static DistArray sparse(Context& ctx, Shape shape,
                          std::source_location loc = std::source_location::current()) {
    return DistArray(ctx, shape, true, internal::OriginOf(loc));
  }
  // For loaders: an empty dense or sparse array whose origin is the loader's call and a field of
  // its result (see internal::ArrayOrigin). Programs use the factories above.
  static DistArray WithOrigin(Context& ctx, Shape shape, bool sparse, internal::ArrayOrigin origin) {
    return DistArray(ctx, shape, sparse, origin);
  }

  // A deep copy (a new array with its own id, created here).
  DistArray clone(std::source_location loc = std::source_location::current()) const {
    Whole();
    DistArray c(*s_->ctx_, s_->shape_, s_->sparse_, internal::OriginOf(loc));
    c.s_->dense_ = s_->dense_;
    c.s_->keys_ = s_->keys_;
    c.s_->values_ = s_->values_;
    c.data_ = c.s_->dense_.data();
    return c;
  }

  bool valid() const { return s_ != nullptr; }
  bool is_sparse() const { return s_->sparse_; }
  const Shape& shape() const { return s_->shape_; }
  int64_t extent(int dim) const { return s_->shape_[dim]; }
  static constexpr int rank() { return N; }
  // Positions a parallel_for visits: stored elements (sparse) or all elements (dense). For an
  // array a distributed job keeps partitioned, those of every worker together.
  int64_t size() const { return s_->partition_ ? s_->partition_->global_size : s_->size(); }
  // Stored elements; the element count for dense arrays.
  int64_t nnz() const { return size(); }
  Context& context() const { return *s_->ctx_; }

  // Element access; sparse arrays insert a zero element when the key is not stored yet.
  // REQUIRES: every index within the shape (checked; a violation aborts).
  template <std::integral... I>
    requires(sizeof...(I) == N)
  T& operator()(I... i) {
    return at(Key<N>{{static_cast<int64_t>(i)...}});
  }
  template <std::integral... I>
    requires(sizeof...(I) == N)
  const T& operator()(I... i) const {
    return at(Key<N>{{static_cast<int64_t>(i)...}});
  }
  // The dense path is inlined into loop bodies; the sparse lookups stay out of line so that they
  // do not keep it from being inlined.
  // One test on the fast path (ArrayStorage::slow_access_): a dense array whose rows are all here.
  T& at(const Key<N>& k) {
    TESSERA_CHECK_MSG(s_->InBounds(k), "DistArray index out of range");
    if (!s_->slow_access_) [[likely]] return data_[s_->Linear(k)];
    return SlowAt(k);
  }
  // REQUIRES (sparse): k is stored.
  const T& at(const Key<N>& k) const {
    TESSERA_CHECK_MSG(s_->InBounds(k), "DistArray index out of range");
    if (!s_->slow_access_) [[likely]] return data_[s_->Linear(k)];
    return SlowAt(k);
  }
  // The element's value, or T{} when a sparse array does not store it (never inserts).
  T get(const Key<N>& k) const {
    TESSERA_CHECK_MSG(s_->InBounds(k), "DistArray index out of range");
    if (!s_->slow_access_) [[likely]] return data_[s_->Linear(k)];
    if (!s_->sparse_) return SlowAt(k);
    return SparseGet(k);
  }

  // Row i of a dense 2-D array. REQUIRES: N == 2, dense, 0 <= i < extent(0).
  RowView<T> row(int64_t i)
    requires(N == 2)
  {
    CheckRow(i);
    return RowView<T>(data_ + i * s_->shape_[1], s_->shape_[1]);
  }
  RowView<const T> row(int64_t i) const
    requires(N == 2)
  {
    CheckRow(i);
    return RowView<const T>(data_ + i * s_->shape_[1], s_->shape_[1]);
  }

  // Dense elements in row-major order. REQUIRES: dense.
  T* data() {
    TESSERA_CHECK_MSG(!s_->sparse_, "data() of a sparse DistArray");
    return data_;
  }
  const T* data() const {
    TESSERA_CHECK_MSG(!s_->sparse_, "data() of a sparse DistArray");
    return data_;
  }
  // Sets every element (dense) or every stored element (sparse) to `value`.
  void fill(T value) {
    Whole();
    if (s_->sparse_) {
      std::fill(s_->values_.begin(), s_->values_.end(), value);
    } else {
      std::fill(s_->dense_.begin(), s_->dense_.end(), value);
    }
  }

  // --- Sparse arrays only (checked). ---
  // The stored elements whose key[0] is i. REQUIRES: N >= 2, sparse, 0 <= i < extent(0). The
  // first call after a change groups the elements by row (O(nnz), and no memory per element when
  // they are stored grouped, as in key order); loop bodies on several threads may call it.
  SparseRowView<T, N> sparse_row(int64_t i)
    requires(N >= 2)
  {
    CheckSparse();
    TESSERA_CHECK_MSG(i >= 0 && i < s_->shape_[0], "DistArray::sparse_row index out of range");
    Whole();
    s_->EnsureRows();
    const int64_t b = s_->row_start_[i], n = s_->row_start_[i + 1] - b;
    if (s_->row_pos_.empty()) {  // stored grouped by row: the row is consecutive
      return SparseRowView<T, N>(nullptr, n, s_->keys_.data() + b, s_->values_.data() + b);
    }
    return SparseRowView<T, N>(s_->row_pos_.data() + b, n, s_->keys_.data(), s_->values_.data());
  }

  // Stores (k, v); returns false and leaves the stored value alone when k is already stored.
  bool insert(const Key<N>& k, T v) {
    CheckSparse();
    Whole();
    TESSERA_CHECK_MSG(s_->InBounds(k), "DistArray::insert key out of range");
    return s_->SparseInsert(k, v);
  }
  // Appends (k, v) without looking for k (fast bulk loading).
  // REQUIRES: k is in range and not stored yet (a duplicate aborts on the next keyed lookup).
  void append_unchecked(const Key<N>& k, T v) {
    CheckSparse();
    Whole();
    s_->SparseAppendUnchecked(k, v);
  }
  T* find(const Key<N>& k) {
    CheckSparse();
    Whole();
    if (!s_->InBounds(k)) return nullptr;
    if (T* v = s_->PermutedFind(k)) return v;
    return s_->SparseFind(k);
  }
  bool contains(const Key<N>& k) const {
    Whole();
    return s_->InBounds(k) && s_->SparseFind(k) != nullptr;
  }
  void reserve(int64_t n) {
    CheckSparse();
    s_->keys_.reserve(static_cast<size_t>(n));
    s_->values_.reserve(static_cast<size_t>(n));
  }
  // Key and value at iteration position p. REQUIRES: 0 <= p < size().
  const Key<N>& key_at(int64_t p) const {
    CheckSparse();
    Whole();
    return s_->keys_[p];
  }
  T& value_at(int64_t p) {
    CheckSparse();
    Whole();
    return s_->values_[p];
  }
  const T& value_at(int64_t p) const {
    CheckSparse();
    Whole();
    return s_->values_[p];
  }
  // Reorders the stored elements (and so the serial iteration order) by a seeded shuffle.
  void shuffle(uint64_t seed) {
    CheckSparse();
    Whole();
    std::vector<int64_t> order(s_->keys_.size());
    std::iota(order.begin(), order.end(), 0);
    uint64_t state = seed;
    for (size_t i = order.size(); i > 1; --i) {  // Fisher-Yates with the portable generator
      std::swap(order[i - 1], order[internal::SplitMix64(state) % i]);
    }
    s_->Permute(std::move(order));
  }
  // Reorders the stored elements into a grid of blocks -- blocks[d] equal parts of dimension d --
  // visited in a seeded random order; within a block the elements are shuffled, or sorted by key
  // when `sort_within` (LIBMF's order: SGD keeps most of the benefit of a random order while
  // consecutive elements reuse the rows of the arrays they index). REQUIRES: blocks[d] >= 1.
  void shuffle_blocks(uint64_t seed, std::array<int64_t, N> blocks, bool sort_within = false) {
    CheckSparse();
    if (!sort_within) Whole();
    int64_t num_blocks = 1;
    for (int d = 0; d < N; ++d) {
      TESSERA_CHECK_MSG(blocks[d] >= 1, "shuffle_blocks needs at least one block per dimension");
      blocks[d] = std::min(blocks[d], std::max<int64_t>(s_->shape_[d], 1));
      num_blocks *= blocks[d];
    }
    const auto& keys = s_->keys_;
    auto block_of_key = [&](const Key<N>& k) {
      int64_t b = 0;
      for (int d = 0; d < N; ++d) b = b * blocks[d] + k.idx[d] * blocks[d] / s_->shape_[d];
      return b;
    };
    uint64_t state = seed;
    std::vector<int64_t> visit(num_blocks);  // visit[b]: when block b comes
    std::iota(visit.begin(), visit.end(), 0);
    for (size_t i = visit.size(); i > 1; --i) std::swap(visit[i - 1], visit[internal::SplitMix64(state) % i]);
    if (s_->partition_ && sort_within) {
      // Partitioned: each worker orders what it holds by (block's turn, key), the serial order,
      // which each element's key gives again whenever its place is needed.
      s_->OrderByBlocks(blocks, std::move(visit));
      return;
    }
    // Positions fit in 32 bits up to 4G elements: the order costs 4 bytes per element, and the
    // block of an element is computed again rather than kept (8 bytes per element more).
    if (keys.size() <= UINT32_MAX) {
      OrderBlocks<uint32_t>(num_blocks, visit, block_of_key, sort_within, state);
    } else {
      OrderBlocks<uint64_t>(num_blocks, visit, block_of_key, sort_within, state);
    }
  }
  // Reorders the stored elements by key, row-major (key[0] slowest).
  void sort_keys() {
    CheckSparse();
    if (s_->partition_) {
      std::vector<internal::RecordOrder> order(s_->keys_.size());
      for (size_t p = 0; p < order.size(); ++p) order[p] = {0, static_cast<uint64_t>(s_->Linear(s_->keys_[p]))};
      s_->Reorder(std::move(order));
      return;
    }
    std::vector<int64_t> order(s_->keys_.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [this](int64_t a, int64_t b) {
      return s_->keys_[a].idx < s_->keys_[b].idx;
    });
    s_->Permute(std::move(order));
  }

  // A new sparse array of the stored elements of this one under a permutation of their key
  // components: element k becomes (k[perm[0]], ..., k[perm[N - 1]]) with the same value, in an
  // array of shape (extent(perm[0]), ..., extent(perm[N - 1])) that stores its elements in key
  // order (row-major, key[0] slowest: its iteration order). This array is left as it is.
  //   auto tokens_w = tokens.permuted({1, 0, 2});   // (doc, word, j) -> (word, doc, j)
  // REQUIRES: sparse; perm holds each of 0 .. N-1 once (both checked: a violation aborts, naming
  // the permutation). Leave `loc` at its default: the call is the new array's origin.
  // Cost: O(nnz) time plus a sort of each row; memory for the new array beside this one.
  // Distributed (collective: every worker calls it at the same point, as SPMD serial code does):
  // where this array is partitioned, each element goes once from its holder to the worker holding
  // its new key[0], in bounded rounds, and the new array is partitioned by its key[0] into
  // equal-count ranges when tessc proved that only loops touch it (as a loader's arrays are:
  // docs/runtime.md, "Permuted arrays"); otherwise it is then gathered whole on every worker.
  // Where this array is whole, the new one is whole, or under the same proof each worker keeps
  // only its range of it, without any message.
  DistArray permuted(const std::array<int, N>& perm,
                     std::source_location loc = std::source_location::current()) const {
    CheckSparse();
    std::array<bool, N> seen{};
    bool ok = true;
    for (int d = 0; d < N; ++d) {
      ok = ok && perm[d] >= 0 && perm[d] < N && !seen[perm[d]];
      if (ok) seen[perm[d]] = true;
    }
    if (!ok) {
      std::string given;
      for (int d = 0; d < N; ++d) given += (d > 0 ? ", " : "") + std::to_string(perm[d]);
      const std::string msg = "DistArray::permuted({" + given + "}) of a rank-" +
                              std::to_string(N) + " array: perm must hold each of 0.." +
                              std::to_string(N - 1) + " exactly once";
      internal::CheckFailed(loc.file_name(), static_cast<int>(loc.line()), "a key permutation",
                            msg.c_str());
    }
    Shape shape;
    for (int d = 0; d < N; ++d) shape[d] = s_->shape_[perm[d]];
    DistArray r(*s_->ctx_, shape, /*sparse=*/true, internal::OriginOf(loc));
    s_->ctx_->PermuteInto(*s_, std::vector<int>(perm.begin(), perm.end()), *r.s_);
    return r;
  }

  // Every element of this sparse array takes the value of the element of `source` whose key,
  // permuted as `permuted` does, is its key: this[(k[perm[0]], ..., k[perm[N - 1]])] = source[k]
  // for every key k of `source`. The keys stay as they are, only values move: the two orders of
  // one data set (made by `permuted`) hand each other their values, e.g. before each sweep that
  // reads the other order's values through its own elements:
  //   tokens_w.assign_permuted(tokens, {1, 0, 2});   // (doc, word, j) -> (word, doc, j)
  //   tokens.assign_permuted(tokens_w, {1, 0, 2});   // and back (this perm is its own inverse)
  // REQUIRES: both sparse, this array's shape `source`'s under perm, and this array holding
  // exactly the permuted keys of `source` (checked: a perm that is no permutation, another shape
  // or an element without a counterpart aborts, naming it); code outside loop bodies.
  // Cost: the first call for a pair of arrays makes a plan -- where each element's counterpart
  // is, 4 bytes per element, kept while neither array's layout changes and used in both
  // directions -- by one pass with a lookup per element (O(1) for keys in each row's order);
  // every call then copies the values by it in O(nnz).
  // Distributed (collective: every worker calls it at the same point, as SPMD serial code does):
  // where both arrays are partitioned, each value goes once from its holder to the worker holding
  // its counterpart, element size per value (a new plan's keys travel once), in bounded rounds,
  // counted in Context::traffic().permuted, and both stay partitioned; where one is partitioned
  // and the other whole, the partitioned one is gathered whole first (docs/runtime.md,
  // "Permuted arrays").
  void assign_permuted(const DistArray& source, const std::array<int, N>& perm,
                       std::source_location loc = std::source_location::current()) {
    CheckSparse();
    source.CheckSparse();
    TESSERA_CHECK_MSG(source.s_.get() != s_.get(),
                      "DistArray::assign_permuted: an array cannot take its values from itself");
    std::array<bool, N> seen{};
    bool ok = true;
    for (int d = 0; d < N; ++d) {
      ok = ok && perm[d] >= 0 && perm[d] < N && !seen[perm[d]];
      if (ok) seen[perm[d]] = true;
      ok = ok && s_->shape_[d] == source.s_->shape_[perm[d]];
    }
    if (!ok) {
      std::string given, shape, source_shape;
      for (int d = 0; d < N; ++d) {
        given += (d > 0 ? ", " : "") + std::to_string(perm[d]);
        shape += (d > 0 ? ", " : "") + std::to_string(s_->shape_[d]);
        source_shape += (d > 0 ? ", " : "") + std::to_string(source.s_->shape_[d]);
      }
      const std::string msg = "DistArray::assign_permuted(source, {" + given + "}) of a rank-" +
                              std::to_string(N) + " array of shape (" + shape +
                              "): perm must hold each of 0.." + std::to_string(N - 1) +
                              " exactly once, and extent d must be the source's extent perm[d] "
                              "(the source's shape is (" +
                              source_shape + "))";
      internal::CheckFailed(loc.file_name(), static_cast<int>(loc.line()), "a key permutation",
                            msg.c_str());
    }
    s_->ctx_->AssignPermuted(*s_, *source.s_, std::vector<int>(perm.begin(), perm.end()));
  }

  // --- For the runtime (parallel_for, executors). ---
  const internal::ArrayBase& base() const { return *s_; }
  // Calls body(key, value) for positions [begin, end) in order.
  template <typename Body>
  void ForEachInRange(int64_t begin, int64_t end, Body& body) {
    if (s_->sparse_) {
      const Key<N>* keys = s_->keys_.data();
      T* values = s_->values_.data();
      internal::LoopPositionScope scope(s_.get());  // for writes at a permuted key
      for (int64_t p = begin; p < end; ++p) {
        internal::current_loop_position.position = p;
        Invoke(body, keys[p], values[p]);
      }
      return;
    }
    if (begin >= end) return;
    Key<N> k = s_->Unravel(begin);
    for (int64_t p = begin; p < end; ++p) {
      Invoke(body, k, data_[p]);
      for (int d = N - 1; d >= 0; --d) {  // odometer increment, row-major
        if (++k.idx[d] < s_->shape_[d]) break;
        k.idx[d] = 0;
      }
    }
  }
  template <typename Body>
  void ForEachPosition(const int64_t* positions, size_t count, Body& body) {
    internal::LoopPositionScope scope(s_->sparse_ ? s_.get() : nullptr);
    for (size_t i = 0; i < count; ++i) {
      const int64_t p = positions[i];
      if (s_->sparse_) {
        internal::current_loop_position.position = p;
        Invoke(body, s_->keys_[p], s_->values_[p]);
      } else {
        Invoke(body, s_->Unravel(p), data_[p]);
      }
    }
  }

 private:
  DistArray(Context& ctx, Shape shape, bool sparse, internal::ArrayOrigin origin)
      : s_(std::make_unique<internal::ArrayStorage<T, N>>(&ctx, ctx.NextArrayId(), shape, sparse,
                                                          origin)),
        data_(s_->dense_.data()) {}

  // shuffle_blocks' reordering of a whole array: a counting sort of the positions by their
  // block's turn in `visit`, then each block sorted by key or shuffled from `state`.
  template <typename Index, typename BlockOf>
  void OrderBlocks(int64_t num_blocks, const std::vector<int64_t>& visit, BlockOf& block_of_key,
                   bool sort_within, uint64_t& state) {
    const auto& keys = s_->keys_;
    std::vector<int64_t> start(num_blocks + 1, 0);
    for (size_t p = 0; p < keys.size(); ++p) ++start[visit[block_of_key(keys[p])] + 1];
    for (int64_t i = 0; i < num_blocks; ++i) start[i + 1] += start[i];
    std::vector<Index> order(keys.size());
    {
      std::vector<int64_t> fill(start.begin(), start.end() - 1);
      for (size_t p = 0; p < keys.size(); ++p) {
        order[fill[visit[block_of_key(keys[p])]]++] = static_cast<Index>(p);
      }
    }
    for (int64_t i = 0; i < num_blocks; ++i) {
      if (sort_within) {
        std::sort(order.begin() + start[i], order.begin() + start[i + 1],
                  [&keys](Index a, Index b) { return keys[a].idx < keys[b].idx; });
        continue;
      }
      for (int64_t n = start[i + 1] - start[i]; n > 1; --n) {
        std::swap(order[start[i] + n - 1],
                  order[start[i] + static_cast<int64_t>(internal::SplitMix64(state) % n)]);
      }
    }
    s_->Permute(std::move(order));
  }

  // Computes the elements now, or leaves them to the executor where it keeps the array
  // partitioned (an array only loop bodies touch, in a distributed job): then each worker
  // computes only the rows it holds.
  template <typename Init>
  void Initialize(Init init) {
    if (s_->ctx_->DefersInitialization(s_->origin_)) {
      s_->deferred_init_ = std::move(init);
      s_->set_rows_elsewhere(true);  // no row is computed yet
      return;
    }
    init(s_->dense_.data(), 0, static_cast<int64_t>(s_->dense_.size()));
  }

  // Bodies may take (key, value) or just (key).
  template <typename Body>
  static void Invoke(Body& body, const Key<N>& k, T& v) {
    if constexpr (std::is_invocable_v<Body&, const Key<N>&, T&>) {
      body(k, v);
    } else {
      static_assert(std::is_invocable_v<Body&, const Key<N>&>,
                    "parallel_for body must be callable as body(const Key<N>&, T&) or body(const Key<N>&)");
      body(k);
    }
  }
  // Code outside loops may touch any element: an array a distributed job keeps partitioned is
  // first made whole on every worker (collective, as SPMD serial code is). Inside a loop body the
  // executor has already placed the elements the body may touch.
  [[gnu::noinline]] T& SparseAt(const Key<N>& k) {
    if (T* v = s_->PermutedFind(k)) return *v;
    Whole();
    return s_->SparseFindOrInsert(k);
  }
  [[gnu::noinline]] const T& SparseAt(const Key<N>& k) const {
    if (const T* v = s_->PermutedFind(k)) return *v;
    Whole();
    const T* v = s_->SparseFind(k);
    TESSERA_CHECK_MSG(v != nullptr, "const access to an element a sparse DistArray does not store");
    return *v;
  }
  [[gnu::noinline]] T SparseGet(const Key<N>& k) const {
    if (const T* v = s_->PermutedFind(k)) return *v;
    Whole();
    const T* v = s_->SparseFind(k);
    return v == nullptr ? T{} : *v;
  }
  // Sparse, or code outside loops touching a dense array the job keeps partitioned: then the
  // element's row comes from its holder first (collective; tessc allows it only where every
  // worker runs the access).
  [[gnu::noinline]] T& SlowAt(const Key<N>& k) {
    if (s_->sparse_) return SparseAt(k);
    s_->ctx_->FetchRow(*s_, k[0]);
    return data_[s_->Linear(k)];
  }
  [[gnu::noinline]] const T& SlowAt(const Key<N>& k) const {
    if (s_->sparse_) return SparseAt(k);
    s_->ctx_->FetchRow(*s_, k[0]);
    return data_[s_->Linear(k)];
  }
  void Whole() const {
    if (s_->partition_) [[unlikely]] {
      if (internal::CurrentExecutorSlot() == 0) s_->ctx_->GatherWhole(*s_);
    }
  }
  void CheckSparse() const { TESSERA_CHECK_MSG(s_->sparse_, "sparse-only DistArray operation on a dense array"); }
  void CheckRow(int64_t i) const {
    TESSERA_CHECK_MSG(!s_->sparse_, "row() of a sparse DistArray");
    TESSERA_CHECK_MSG(i >= 0 && i < s_->shape_[0], "DistArray::row index out of range");
  }

  std::unique_ptr<internal::ArrayStorage<T, N>> s_;
  T* data_ = nullptr;  // s_->dense_.data(), cached: dense storage never reallocates
};

}  // namespace tessera

#endif  // TESSERA_DIST_ARRAY_H_
