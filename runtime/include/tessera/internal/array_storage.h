// Storage behind DistArray and RelaxedArray. Implementation detail: programs use dist_array.h.
#ifndef TESSERA_INTERNAL_ARRAY_STORAGE_H_
#define TESSERA_INTERNAL_ARRAY_STORAGE_H_

#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <functional>
#include <new>
#include <array>
#include <atomic>
#include <mutex>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <optional>
#include <source_location>
#include <string>
#include <type_traits>
#include <utility>
#include <unordered_map>
#include <vector>

#include "tessera/common/check.h"
#include "tessera/context.h"
#include "tessera/executor.h"
#include "tessera/internal/permuted_index.h"
#include "tessera/key.h"

namespace tessera::internal {

// splitmix64: a tiny, fully specified generator, so that DistArray::random gives the same values
// on every worker and every standard library (std::uniform_*_distribution is not specified).
inline uint64_t SplitMix64(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

// The value SplitMix64 returns on its (i + 1)-th call from `seed`: the generator's state only
// advances by a constant, so element i of DistArray::random can be computed on its own.
inline uint64_t SplitMix64At(uint64_t seed, uint64_t i) {
  uint64_t state = seed + i * 0x9E3779B97F4A7C15ULL;
  return SplitMix64(state);
}

// Allocates zeroed memory (calloc) and constructs elements without writing them, so that a large
// dense array costs no resident memory until its elements are written: the pages of a large
// calloc are the kernel's zero pages until touched. Elements read as T{} for the arithmetic types
// DistArray holds.
template <typename T>
struct ZeroedAllocator {
  using value_type = T;
  ZeroedAllocator() = default;
  template <typename U>
  ZeroedAllocator(const ZeroedAllocator<U>&) {}  // NOLINT(google-explicit-constructor)
  T* allocate(size_t n) {
    static_assert(alignof(T) <= alignof(std::max_align_t), "over-aligned DistArray element");
    void* p = std::calloc(n, sizeof(T));
    if (p == nullptr) throw std::bad_alloc();
    return static_cast<T*>(p);
  }
  void deallocate(T* p, size_t) { std::free(p); }
  template <typename U>
  void construct(U* p) {
    ::new (static_cast<void*>(p)) U;  // default-initialized: calloc's zeros stay untouched
  }
  template <typename U, typename... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
  template <typename U>
  bool operator==(const ZeroedAllocator<U>&) const {
    return true;
  }
};

// The origin of an array made by a factory called at `loc`.
inline ArrayOrigin OriginOf(const std::source_location& loc) {
  return ArrayOrigin{loc.file_name(), static_cast<unsigned>(loc.line()),
                     static_cast<unsigned>(loc.column()), ""};
}

// Row-major strides; aborts when the shape's element count does not fit in int64_t (the sparse
// index uses linear keys).
template <int N>
std::array<int64_t, N> RowMajorStrides(const std::array<int64_t, N>& shape) {
  std::array<int64_t, N> strides{};
  int64_t stride = 1;
  for (int d = N - 1; d >= 0; --d) {
    TESSERA_CHECK_MSG(shape[d] >= 0, "DistArray extents must be non-negative");
    strides[d] = stride;
    int64_t next = 0;
    TESSERA_CHECK_MSG(!__builtin_mul_overflow(stride, std::max<int64_t>(shape[d], 1), &next),
                      "DistArray shape has more elements than fit in int64_t");
    stride = next;
  }
  return strides;
}

template <typename T, int N>
class ArrayStorage final : public ArrayBase {
 public:
  static_assert(!std::is_same_v<T, bool>, "use uint8_t instead of bool (std::vector<bool>)");

  ArrayStorage(Context* ctx, int64_t id, std::array<int64_t, N> shape, bool sparse,
               ArrayOrigin origin)
      : ctx_(ctx),
        id_(id),
        shape_(shape),
        strides_(RowMajorStrides<N>(shape)),
        sparse_(sparse),
        origin_(origin) {
    if (!sparse_) dense_.resize(static_cast<size_t>(ElementCount()));
    ctx_->AttachArray(this);
  }
  ~ArrayStorage() override { ctx_->DetachArray(this); }
  ArrayStorage(const ArrayStorage&) = delete;
  ArrayStorage& operator=(const ArrayStorage&) = delete;

  // ArrayBase.
  int rank() const override { return N; }
  bool is_sparse() const override { return sparse_; }
  int64_t size() const override {
    return sparse_ ? static_cast<int64_t>(keys_.size()) : static_cast<int64_t>(dense_.size());
  }
  int64_t extent(int dim) const override { return shape_[dim]; }
  int64_t key_component(int64_t position, int dim) const override {
    if (sparse_) return keys_[position].idx[dim];
    return (position / strides_[dim]) % std::max<int64_t>(shape_[dim], 1);
  }
  void key_components(int dim, int64_t first, int64_t count, int64_t* out) const override {
    if (sparse_) {
      for (int64_t i = 0; i < count; ++i) out[i] = keys_[first + i].idx[dim];
      return;
    }
    const int64_t stride = strides_[dim], extent = std::max<int64_t>(shape_[dim], 1);
    for (int64_t i = 0; i < count; ++i) out[i] = ((first + i) / stride) % extent;
  }
  int64_t id() const override { return id_; }
  uint64_t layout_version() const override { return layout_version_; }
  const ArrayOrigin& origin() const override { return origin_; }
  bool deferred_init() const override { return static_cast<bool>(deferred_init_); }
  void set_rows_elsewhere(bool elsewhere) override { slow_access_ = sparse_ || elsewhere; }
  void InitElements(int64_t first, int64_t count) override {
    if (deferred_init_ && count > 0) deferred_init_(dense_.data() + first, first, count);
  }
  void ComputeInitialElements(int64_t first, int64_t count, void* out) const override {
    if (count <= 0) return;
    if (deferred_init_) {
      deferred_init_(static_cast<T*>(out), first, count);
    } else {
      std::memcpy(out, dense_.data() + first, static_cast<size_t>(count) * sizeof(T));
    }
  }
  void* value_data() override { return sparse_ ? values_.data() : dense_.data(); }
  int64_t value_count() const override { return size(); }
  size_t element_bytes() const override { return sizeof(T); }
  bool arithmetic() const override { return std::is_arithmetic_v<T>; }
  void SubtractValues(const void* a, const void* b, void* out, int64_t count) const override {
    if constexpr (std::is_arithmetic_v<T>) {
      const T* x = static_cast<const T*>(a);
      const T* y = static_cast<const T*>(b);
      T* o = static_cast<T*>(out);
      for (int64_t i = 0; i < count; ++i) o[i] = static_cast<T>(x[i] - y[i]);
    } else {
      TESSERA_CHECK_MSG(false, "SubtractValues on a non-arithmetic array");
    }
  }
  void AddValues(void* dst, const void* delta, int64_t count) const override {
    if constexpr (std::is_arithmetic_v<T>) {
      T* d = static_cast<T*>(dst);
      const T* x = static_cast<const T*>(delta);
      for (int64_t i = 0; i < count; ++i) d[i] = static_cast<T>(d[i] + x[i]);
    } else {
      TESSERA_CHECK_MSG(false, "AddValues on a non-arithmetic array");
    }
  }
  bool relaxed() const override { return relaxed_; }
  int staleness() const override { return staleness_; }
  int table_value_type() const override {
    if constexpr (std::is_same_v<T, float>) return 0;
    if constexpr (std::is_same_v<T, double>) return 1;
    if constexpr (std::is_same_v<T, int32_t>) return 2;
    if constexpr (std::is_same_v<T, int64_t>) return 3;
    return -1;
  }

  int64_t ElementCount() const {
    int64_t n = 1;
    for (int64_t e : shape_) n *= e;
    return n;
  }
  bool InBounds(const Key<N>& k) const {
    for (int d = 0; d < N; ++d) {
      if (k.idx[d] < 0 || k.idx[d] >= shape_[d]) return false;
    }
    return true;
  }
  int64_t Linear(const Key<N>& k) const {
    int64_t l = 0;
    for (int d = 0; d < N; ++d) l += k.idx[d] * strides_[d];
    return l;
  }
  Key<N> Unravel(int64_t linear) const {
    Key<N> k;
    for (int d = N - 1; d >= 0; --d) {
      const int64_t e = std::max<int64_t>(shape_[d], 1);
      k.idx[d] = linear % e;
      linear /= e;
    }
    return k;
  }

  const RecordPartition* record_partition() const override {
    return partition_ ? &*partition_ : nullptr;
  }
  void ExportRecords(const std::function<size_t(const int64_t* key)>& dest,
                     std::vector<RecordBatch>* out) override {
    TESSERA_CHECK_MSG(sparse_, "ExportRecords of a dense array");
    for (size_t p = 0; p < keys_.size(); ++p) {
      RecordBatch& b = (*out)[dest(keys_[p].idx.data())];
      b.keys.insert(b.keys.end(), keys_[p].idx.begin(), keys_[p].idx.end());
      const char* v = reinterpret_cast<const char*>(&values_[p]);
      b.values.insert(b.values.end(), v, v + sizeof(T));
      b.order.push_back(partition_ ? PlaceAt(p) : RecordOrder{0, p});
    }
    std::vector<Key<N>>().swap(keys_);
    std::vector<T>().swap(values_);
    std::vector<RecordOrder>().swap(order_);
    key_places_ = false;
    Relaid();
  }
  // Each batch arrives in serial order (its sender's storage order), so the batches are appended
  // one at a time, each freed once copied, and then put in order by a merge of the runs applied
  // in place: at most the elements, one batch and a permutation are resident, not two copies.
  void ImportRecords(std::vector<RecordBatch> in, const RecordPartition* partition) override {
    TESSERA_CHECK_MSG(sparse_, "ImportRecords into a dense array");
    size_t n = 0;
    for (const RecordBatch& b : in) n += b.size();
    std::vector<Key<N>>().swap(keys_);
    std::vector<T>().swap(values_);
    std::vector<RecordOrder>().swap(order_);
    key_places_ = false;
    keys_.reserve(n);
    values_.reserve(n);
    order_.reserve(n);
    std::vector<size_t> runs{0};  // runs[r]..runs[r + 1]: batch r's elements
    bool sorted = true;
    for (RecordBatch& b : in) {
      TESSERA_CHECK_MSG(b.keys.size() == b.size() * N && b.values.size() == b.size() * sizeof(T),
                        "ImportRecords: a batch's keys, values and places disagree in length");
      for (size_t i = 0; i < b.size(); ++i) {
        Key<N> k;
        for (int d = 0; d < N; ++d) k.idx[d] = b.keys[i * N + d];
        keys_.push_back(k);
        T v;
        std::memcpy(&v, b.values.data() + i * sizeof(T), sizeof(T));
        values_.push_back(v);
        sorted = sorted && (order_.empty() || order_.back() < b.order[i]);
        order_.push_back(b.order[i]);
      }
      runs.push_back(order_.size());
      b = RecordBatch();  // its memory goes now
    }
    if (!sorted) MergeRuns(runs);
    if (partition != nullptr) {
      partition_ = *partition;
      DropPlacesIfKeyOrder();
    } else {
      partition_.reset();
      std::vector<RecordOrder>().swap(order_);
    }
    Relaid();
  }
  const int64_t* key_data() const override {
    static_assert(sizeof(Key<N>) == N * sizeof(int64_t), "Key<N> is its components");
    TESSERA_CHECK_MSG(sparse_, "key_data of a dense array");
    return keys_.empty() ? nullptr : keys_.front().idx.data();
  }
  const RecordOrder* order_data() const override {
    TESSERA_CHECK_MSG(partition_.has_value(), "order_data of an array that is not partitioned");
    return key_places_ ? nullptr : order_.data();
  }
  RecordOrder place_at(size_t p) const override {
    TESSERA_CHECK_MSG(partition_.has_value(), "place_at of an array that is not partitioned");
    return PlaceAt(p);
  }
  void ReserveRows(int64_t lo, int parts, const std::vector<uint64_t>& counts) override {
    TESSERA_CHECK_MSG(sparse_, "ReserveRows of a dense array");
    TESSERA_CHECK_MSG(parts >= 1 && counts.size() % static_cast<size_t>(parts) == 0,
                      "ReserveRows: counts are not whole rows of parts");
    std::vector<Key<N>>().swap(keys_);
    std::vector<T>().swap(values_);
    std::vector<RecordOrder>().swap(order_);
    partition_.reset();
    key_places_ = false;
    NoBlockPlaces();
    build_lo_ = lo;
    build_parts_ = parts;
    build_start_.assign(counts.size() + 1, 0);
    for (size_t r = 0; r < counts.size(); ++r) {
      build_start_[r + 1] = build_start_[r] + static_cast<int64_t>(counts[r]);
    }
    build_next_.assign(build_start_.begin(), build_start_.end() - 1);
    keys_.resize(static_cast<size_t>(build_start_.back()));
    values_.resize(keys_.size());
    Relaid();
  }
  bool PlaceInRows(const int64_t* keys, const void* values, size_t n, int part) override {
    const char* v = static_cast<const char*>(values);
    const int64_t rows = static_cast<int64_t>(build_next_.size()) / build_parts_;
    if (part < 0 || part >= build_parts_) return false;
    for (size_t i = 0; i < n; ++i) {
      Key<N> k;
      for (int d = 0; d < N; ++d) k.idx[d] = keys[i * N + d];
      const int64_t r = k.idx[0] - build_lo_;
      if (!InBounds(k) || r < 0 || r >= rows) return false;
      const int64_t slot = r * build_parts_ + part;
      if (build_next_[slot] == build_start_[slot + 1]) return false;
      const int64_t p = build_next_[slot]++;
      keys_[p] = k;
      std::memcpy(static_cast<void*>(&values_[p]), v + i * sizeof(T), sizeof(T));
    }
    return true;
  }
  bool FinishRows(const RecordPartition* partition) override {
    const size_t slots = build_next_.size(), parts = static_cast<size_t>(build_parts_);
    for (size_t q = 0; q < slots; ++q) {
      if (build_next_[q] != build_start_[q + 1]) return false;
    }
    // A row whose parts did not arrive in key order is sorted through a scratch copy of itself
    // alone (most rows are short).
    std::vector<std::pair<Key<N>, T>> scratch;
    for (size_t r = 0; r < slots / parts; ++r) {
      const int64_t b = build_start_[r * parts], e = build_start_[(r + 1) * parts];
      bool sorted = true;
      for (int64_t p = b + 1; p < e && sorted; ++p) sorted = keys_[p - 1].idx < keys_[p].idx;
      if (sorted) continue;
      scratch.clear();
      for (int64_t p = b; p < e; ++p) scratch.emplace_back(keys_[p], std::move(values_[p]));
      std::sort(scratch.begin(), scratch.end(),
                [](const auto& x, const auto& y) { return x.first.idx < y.first.idx; });
      for (int64_t p = b; p < e; ++p) {
        keys_[p] = scratch[p - b].first;
        values_[p] = std::move(scratch[p - b].second);
        if (p > b && keys_[p - 1].idx == keys_[p].idx) return false;
      }
    }
    std::vector<int64_t>().swap(build_start_);
    std::vector<int64_t>().swap(build_next_);
    if (partition != nullptr) {
      partition_ = *partition;
      key_places_ = true;
    }
    NoBlockPlaces();
    Relaid();
    return true;
  }
  // Makes the stored elements this worker's share of a partitioned array as they stand, without
  // a copy through record batches: order[p] is position p's place in the serial order.
  // REQUIRES: sparse; order has one place per stored element, increasing.
  void AdoptPartition(std::vector<RecordOrder> order, const RecordPartition& partition) {
    TESSERA_CHECK_MSG(sparse_, "AdoptPartition of a dense array");
    TESSERA_CHECK_MSG(order.size() == keys_.size(), "AdoptPartition: one place per element");
    TESSERA_CHECK_MSG(std::is_sorted(order.begin(), order.end()),
                      "AdoptPartition: places out of serial order");
    NoBlockPlaces();
    order_ = std::move(order);
    partition_ = partition;
    key_places_ = false;
    DropPlacesIfKeyOrder();
    Relaid();
  }
  // The same for a share whose serial order is its keys' order (as after sort_keys): no place is
  // stored (see key_places_). REQUIRES: sparse; keys strictly increasing.
  void AdoptPartitionInKeyOrder(const RecordPartition& partition) {
    TESSERA_CHECK_MSG(sparse_, "AdoptPartitionInKeyOrder of a dense array");
    for (size_t p = 1; p < keys_.size(); ++p) {
      TESSERA_CHECK_MSG(keys_[p - 1].idx < keys_[p].idx,
                        "AdoptPartitionInKeyOrder: keys out of order");
    }
    std::vector<RecordOrder>().swap(order_);
    NoBlockPlaces();
    partition_ = partition;
    key_places_ = true;
    Relaid();
  }
  // Partitioned: orders the held elements as shuffle_blocks(sort_within) orders a whole array --
  // by their block's turn (turn[b] for block b of the grid of blocks[d] parts per dimension d),
  // then by key -- and keeps no place per element: each is computed from the key (KeyPlace).
  // REQUIRES: partitioned; blocks[d] in [1, max(extent(d), 1)]; turn has one entry per block.
  void OrderByBlocks(const std::array<int64_t, N>& blocks, std::vector<int64_t> turn) {
    TESSERA_CHECK_MSG(partition_.has_value(), "OrderByBlocks of an array that is not partitioned");
    block_counts_ = blocks;
    block_turn_ = std::move(turn);
    // Positions fit in 32 bits up to 4G held elements; sorted by their implicit places.
    auto order_by = [this](auto index) {
      using Index = decltype(index);
      std::vector<Index> from(keys_.size());
      std::iota(from.begin(), from.end(), Index{0});
      std::sort(from.begin(), from.end(),
                [this](Index a, Index b) { return KeyPlace(keys_[a]) < KeyPlace(keys_[b]); });
      std::vector<RecordOrder>().swap(order_);
      ApplyPermutation(0, from.size(), &from);
    };
    if (keys_.size() <= UINT32_MAX) {
      order_by(uint32_t{0});
    } else {
      order_by(uint64_t{0});
    }
    key_places_ = true;
    Relaid();
  }
  // Partitioned: gives every held element a new place in the serial order (order[p] for
  // position p) and sorts the held elements by it, in place.
  void Reorder(std::vector<RecordOrder> order) {
    NoBlockPlaces();
    std::vector<size_t> from(order.size());
    std::iota(from.begin(), from.end(), 0);
    std::sort(from.begin(), from.end(), [&order](size_t a, size_t b) { return order[a] < order[b]; });
    order_ = std::move(order);
    key_places_ = false;
    ApplyPermutation(0, from.size(), &from);
    DropPlacesIfKeyOrder();
    Relaid();
  }
  // Sparse element lookup; the hash index is built on first use because loops only need the
  // key/value vectors, and loading is faster without maintaining it.
  T* SparseFind(const Key<N>& k) {
    EnsureIndex();
    auto it = index_.find(Linear(k));
    return it == index_.end() ? nullptr : &values_[it->second];
  }
  // Inside a loop over a sparse space: the element at the permutation of the visited element's
  // key, when `k` is that key (internal/permuted_index.h); null otherwise (then look `k` up).
  T* PermutedFind(const Key<N>& k) {
    if (current_loop_position.space == nullptr) return nullptr;
    int64_t ahead = -1;
    const int64_t q = permuted_.Find(*this, layout_version_, N, k.idx.data(), &ahead);
    if (ahead >= 0) __builtin_prefetch(&values_[static_cast<size_t>(ahead)], 1);
    return q < 0 ? nullptr : &values_[static_cast<size_t>(q)];
  }
  // Returns true when inserted, false when the key was already stored (value left unchanged).
  bool SparseInsert(const Key<N>& k, T v) {
    EnsureIndex();
    auto [it, inserted] = index_.try_emplace(Linear(k), static_cast<int64_t>(keys_.size()));
    if (!inserted) return false;
    ++layout_version_;
    keys_.push_back(k);
    values_.push_back(v);
    return true;
  }
  // Appends without checking for duplicates. REQUIRES: k not stored yet.
  void SparseAppendUnchecked(const Key<N>& k, T v) {
    ++layout_version_;
    keys_.push_back(k);
    values_.push_back(v);
    index_valid_.store(false, std::memory_order_relaxed);
    index_.clear();
  }
  T& SparseFindOrInsert(const Key<N>& k) {
    EnsureIndex();
    const int64_t linear = Linear(k);
    // A lookup first: executor threads may run it at once, an insert they may not.
    if (auto found = index_.find(linear); found != index_.end()) return values_[found->second];
    // Checked before the index changes: other threads may be reading it.
    TESSERA_CHECK_MSG(!ConcurrentExecutorThread(),
                      "a loop body running on several executor threads inserted an element into "
                      "a sparse DistArray (operator() or at() of a key it does not store), "
                      "which is not safe there; tessc runs a body serially unless it proves "
                      "such keys stored, so the array's keys changed in a way it did not see "
                      "(or the binary's schedules are not tessc's for this source)");
    auto [it, inserted] = index_.try_emplace(linear, static_cast<int64_t>(keys_.size()));
    if (inserted) {
      TESSERA_CHECK_MSG(!partition_,
                        "a loop body inserted an element into a sparse DistArray the job keeps "
                        "partitioned; only stored elements may be written in a loop");
      ++layout_version_;
      keys_.push_back(k);
      values_.push_back(T{});
    }
    return values_[it->second];
  }
  // Element order[p] goes to position p (order: a permutation of the positions), in place.
  template <typename Index>
  void Permute(std::vector<Index> order) {
    ApplyPermutation(0, order.size(), &order);
    Relaid();
  }

  // Positions of the stored elements grouped by key[0] (stable: storage order within a row), for
  // SparseRowView; rebuilt on first use after the layout changed. When the elements are stored
  // grouped by key[0] already (e.g. in key order), row_pos_ stays empty: row r is the positions
  // [row_start_[r], row_start_[r + 1]) themselves. Safe to call from several executor threads
  // at once (the first builds, the others wait), as long as nothing changes the layout meanwhile.
  void EnsureRows() {
    if (rows_version_.load(std::memory_order_acquire) == layout_version_) return;
    std::lock_guard<std::mutex> lock(rows_build_);
    if (rows_version_.load(std::memory_order_relaxed) == layout_version_) return;
    const int64_t rows = shape_[0];
    row_start_.assign(static_cast<size_t>(rows) + 1, 0);
    bool grouped = true;
    for (size_t p = 0; p < keys_.size(); ++p) {
      ++row_start_[keys_[p].idx[0] + 1];
      grouped = grouped && (p == 0 || keys_[p - 1].idx[0] <= keys_[p].idx[0]);
    }
    for (int64_t r = 0; r < rows; ++r) row_start_[r + 1] += row_start_[r];
    if (grouped) {
      std::vector<int64_t>().swap(row_pos_);
    } else {
      row_pos_.resize(keys_.size());
      std::vector<int64_t> fill(row_start_.begin(), row_start_.end() - 1);
      for (size_t p = 0; p < keys_.size(); ++p) {
        row_pos_[fill[keys_[p].idx[0]]++] = static_cast<int64_t>(p);
      }
    }
    rows_version_.store(layout_version_, std::memory_order_release);
  }

  Context* ctx_;
  int64_t id_;
  std::array<int64_t, N> shape_;
  std::array<int64_t, N> strides_;
  bool sparse_;
  // Element access must leave the inlined dense path: sparse, or rows held elsewhere
  // (ArrayBase::set_rows_elsewhere). Next to sparse_, read on every access.
  bool slow_access_ = sparse_;
  ArrayOrigin origin_;
  std::vector<T, ZeroedAllocator<T>> dense_;
  // Set by a factory whose values the executor computes where they are needed (see
  // ArrayBase::deferred_init): writes elements [first, first + count) to out[0, count).
  std::function<void(T* out, int64_t first, int64_t count)> deferred_init_;
  std::vector<Key<N>> keys_;
  std::vector<T> values_;
  // Partitioned (see RecordPartition): what this worker holds, and each held element's place in
  // the serial order (order_[p] for position p, increasing) -- or, when key_places_, no stored
  // places: position p's place is KeyPlace(keys_[p]), which saves 16 bytes per held element (a
  // loaded or key-sorted share, or one ordered by OrderByBlocks).
  std::optional<RecordPartition> partition_;
  std::vector<RecordOrder> order_;
  bool key_places_ = false;
  // OrderByBlocks' grid and the turn of each of its blocks; block_turn_ empty: the serial order
  // KeyPlace gives is the keys' order. Changed only where the places are made anew.
  std::array<int64_t, N> block_counts_{};
  std::vector<int64_t> block_turn_;
  std::vector<int64_t> row_start_;  // see EnsureRows
  std::vector<int64_t> row_pos_;
  // ReserveRows: part q of row r (key[0] = build_lo_ + r), slot s = r * build_parts_ + q, is
  // positions [build_start_[s], build_start_[s + 1]), filled up to build_next_[s]; empty outside
  // a build.
  int64_t build_lo_ = 0;
  int build_parts_ = 1;
  std::vector<int64_t> build_start_, build_next_;
  bool relaxed_ = false;  // set by RelaxedArray right after construction
  int staleness_ = 0;

 private:
  // Executor threads may look keys up at once (a loop never changes the layout), so the first
  // lookup after a change builds the index under a lock.
  void EnsureIndex() {
    if (index_valid_.load(std::memory_order_acquire)) return;
    std::lock_guard<std::mutex> lock(index_build_);
    if (index_valid_.load(std::memory_order_relaxed)) return;
    index_.clear();
    index_.reserve(keys_.size());
    for (size_t i = 0; i < keys_.size(); ++i) {
      auto [it, inserted] = index_.try_emplace(Linear(keys_[i]), static_cast<int64_t>(i));
      TESSERA_CHECK_MSG(inserted, "sparse DistArray holds a key twice (SparseAppendUnchecked misuse)");
    }
    index_valid_.store(true, std::memory_order_release);
  }

  // Sorts the elements by order_, given that each range [runs[r], runs[r + 1]) is sorted: a k-way
  // merge gives each new position its element, applied in place cycle by cycle. A run that is
  // not sorted (a sender broke the contract) is sorted first.
  void MergeRuns(const std::vector<size_t>& runs) {
    const size_t n = order_.size();
    std::vector<size_t> from(n);  // from[p]: the element that goes to position p
    std::vector<size_t> next(runs.begin(), runs.end() - 1);
    for (size_t r = 0; r + 1 < runs.size(); ++r) {
      if (!std::is_sorted(order_.begin() + runs[r], order_.begin() + runs[r + 1])) {
        std::vector<size_t> idx(runs[r + 1] - runs[r]);
        std::iota(idx.begin(), idx.end(), runs[r]);
        std::stable_sort(idx.begin(), idx.end(),
                         [this](size_t a, size_t b) { return order_[a] < order_[b]; });
        std::copy(idx.begin(), idx.end(), from.begin() + runs[r]);
        ApplyPermutation(runs[r], runs[r + 1], &from);
      }
    }
    auto later = [this, &next](size_t a, size_t b) { return order_[next[b]] < order_[next[a]]; };
    std::vector<size_t> heap;  // runs with elements left, smallest next place on top
    for (size_t r = 0; r + 1 < runs.size(); ++r) {
      if (runs[r] < runs[r + 1]) heap.push_back(r);
    }
    std::make_heap(heap.begin(), heap.end(), later);
    for (size_t p = 0; p < n; ++p) {
      std::pop_heap(heap.begin(), heap.end(), later);
      const size_t r = heap.back();
      from[p] = next[r]++;
      if (next[r] < runs[r + 1]) {
        std::push_heap(heap.begin(), heap.end(), later);
      } else {
        heap.pop_back();
      }
    }
    ApplyPermutation(0, n, &from);
  }

  // Moves element from[p] to position p for p in [lo, hi) (from: a permutation of [lo, hi)),
  // following cycles; `from` is consumed.
  template <typename Index>
  void ApplyPermutation(size_t lo, size_t hi, std::vector<Index>* from) {
    std::vector<Index>& f = *from;
    const bool places = !order_.empty();
    for (size_t i = lo; i < hi; ++i) {
      if (static_cast<size_t>(f[i]) == i) continue;
      Key<N> key = keys_[i];
      T value = std::move(values_[i]);
      RecordOrder place = places ? order_[i] : RecordOrder{};
      size_t j = i;
      while (true) {
        const size_t k = static_cast<size_t>(f[j]);
        f[j] = static_cast<Index>(j);
        if (k == i) {
          keys_[j] = key;
          values_[j] = std::move(value);
          if (places) order_[j] = place;
          break;
        }
        keys_[j] = keys_[k];
        values_[j] = std::move(values_[k]);
        if (places) order_[j] = order_[k];
        j = k;
      }
    }
  }

  // The place a key-ordered share gives position p: sort_keys' places, (0, the linear index).
  // The place a key has when places are implicit: its linear index, after its block's turn when
  // OrderByBlocks ordered the share (otherwise sort_keys' places, (0, the linear index)).
  RecordOrder KeyPlace(const Key<N>& k) const {
    uint64_t turn = 0;
    if (!block_turn_.empty()) {
      int64_t b = 0;
      for (int d = 0; d < N; ++d) b = b * block_counts_[d] + k.idx[d] * block_counts_[d] / shape_[d];
      turn = static_cast<uint64_t>(block_turn_[static_cast<size_t>(b)]);
    }
    return {turn, static_cast<uint64_t>(Linear(k))};
  }
  // Places are made anew in key order (or stored): forget OrderByBlocks' grid.
  void NoBlockPlaces() { std::vector<int64_t>().swap(block_turn_); }
  RecordOrder PlaceAt(size_t p) const { return key_places_ ? KeyPlace(keys_[p]) : order_[p]; }
  // Forgets the stored places when each is its key's KeyPlace (they are then implicit).
  void DropPlacesIfKeyOrder() {
    if (key_places_ || order_.size() != keys_.size()) return;
    for (size_t p = 0; p < keys_.size(); ++p) {
      if (order_[p] != KeyPlace(keys_[p])) return;
    }
    std::vector<RecordOrder>().swap(order_);
    key_places_ = true;
  }

  // Positions changed meaning.
  void Relaid() {
    ++layout_version_;
    index_valid_.store(false, std::memory_order_relaxed);
    index_.clear();
  }

  std::unordered_map<int64_t, int64_t> index_;
  std::atomic<bool> index_valid_{true};
  std::mutex index_build_;
  PermutedMap permuted_;  // see PermutedFind
  // layout_version_ row_start_/row_pos_ were built for.
  std::atomic<uint64_t> rows_version_{~uint64_t{0}};
  std::mutex rows_build_;
  uint64_t layout_version_ = 0;  // see ArrayBase::layout_version
};

}  // namespace tessera::internal

#endif  // TESSERA_INTERNAL_ARRAY_STORAGE_H_
