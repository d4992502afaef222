// Executor: the seam between parallel_for and whatever runs it.
//
// parallel_for does not run loops itself. It describes the call site (LoopSite), wraps the body in
// a type-erased LoopTask over *positions* of the iteration space, and hands both to the Context's
// Executor. The serial executor (the default, and the reference semantics) runs every position in
// order. A parallel or distributed executor may split the positions into blocks and run them on
// several threads or workers, as long as the result is one that some serial order would give
// (or, for a DataParallel site, one the user's permission allows).
//
// Programs never use this header directly; it is the extension point for the runtime.
//
// Positions: for a sparse space, position p is its p-th stored element (insertion order, or the
// order after DistArray::shuffle); for a dense space, the row-major linear index. Positions are
// stable while a parallel_for runs (the body must not insert into the space it iterates).
#ifndef TESSERA_EXECUTOR_H_
#define TESSERA_EXECUTOR_H_

#include <cstddef>
#include <compare>
#include <cstdint>
#include <functional>
#include <memory>
#include <source_location>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/schedule.h"

namespace tessera {

namespace internal {

// Where an array was created: the factory call (DistArray::dense/filled/random/sparse/clone,
// RelaxedArray::dense) or the loader call (load_triples, load_docword) plus the field of its
// result the array is ("train", "test", "counts"). tessc records the same for every array name a
// loop body uses when it can prove the name still denotes the array created there, so executors
// can bind a schedule's array names to live arrays (docs/runtime.md, "Binding arrays").
// `file` and `member` point to static strings.
struct ArrayOrigin {
  const char* file = "";
  unsigned line = 0;
  unsigned column = 0;
  const char* member = "";
};

// A stored element's place in the serial order of its sparse array, compared (high, low): how
// workers holding parts of one array agree on the order of the elements (RecordPartition).
struct RecordOrder {
  uint64_t high = 0;
  uint64_t low = 0;
  auto operator<=>(const RecordOrder&) const = default;
};

// Which stored elements of a sparse array this worker holds when a distributed job keeps the array
// partitioned (docs/runtime.md, "Partitioned data"): those whose key[dim] is in [lo, hi). The
// workers' ranges are disjoint and cover the extent; each holds its elements in serial order.
struct RecordPartition {
  int dim = 0;
  int64_t lo = 0;
  int64_t hi = 0;
  int64_t global_size = 0;  // elements held by all workers together
};

// Stored elements of a sparse array on their way between workers: key components (rank() per
// element), values (element_bytes() per element, raw) and places in the serial order.
struct RecordBatch {
  std::vector<int64_t> keys;
  std::vector<char> values;
  std::vector<RecordOrder> order;
  size_t size() const { return order.size(); }
};

// The element-type-independent face of a DistArray's storage, so that executors can inspect an
// iteration space (its rank, shape, sparsity and the keys of its elements) without templates.
class ArrayBase {
 public:
  virtual ~ArrayBase() = default;
  virtual int rank() const = 0;
  virtual bool is_sparse() const = 0;
  // Number of positions: stored elements when sparse, product of the shape when dense.
  virtual int64_t size() const = 0;
  virtual int64_t extent(int dim) const = 0;
  // Component `dim` of the key at `position`. REQUIRES: 0 <= position < size().
  virtual int64_t key_component(int64_t position, int dim) const = 0;
  // key_component(p, dim) for positions p in [first, first + count), into out[0, count).
  // REQUIRES: 0 <= first, first + count <= size().
  virtual void key_components(int dim, int64_t first, int64_t count, int64_t* out) const = 0;
  // Creation number within its Context; identical on every worker of an SPMD job because every
  // worker creates its arrays in the same order.
  virtual int64_t id() const = 0;
  // Changes whenever positions change meaning (a sparse insert, shuffle or sort), so that
  // executors may cache per-position data (blocks of a schedule) across calls.
  virtual uint64_t layout_version() const = 0;
  // Where the array was created (see ArrayOrigin).
  virtual const ArrayOrigin& origin() const = 0;
  // A factory left the elements to be computed where they are needed: the distributed executor
  // keeps the array partitioned (Context::DefersInitialization) and calls InitElements for the
  // elements a worker holds, before anything reads them. Dense arrays only.
  virtual bool deferred_init() const = 0;
  // Computes elements [first, first + count) in storage order. REQUIRES: deferred_init().
  virtual void InitElements(int64_t first, int64_t count) = 0;
  // Whether code outside loops must fetch a row before it touches it (Context::FetchRow): set
  // while a distributed job keeps this dense array partitioned and some row is held elsewhere or
  // not computed yet; clear while a loop runs (its executor has placed what the body touches).
  virtual void set_rows_elsewhere(bool elsewhere) = 0;
  // The values InitElements computes for [first, first + count), into out (element_bytes()
  // each) without writing the array (the stored elements when no recipe is left). Dense only.
  virtual void ComputeInitialElements(int64_t first, int64_t count, void* out) const = 0;

  // --- Raw element access for distributed executors, which keep the workers' copies equal. ---
  // The elements in storage order (dense: row-major; sparse: position order), value_count() of
  // them, element_bytes() each. Valid until the array changes layout.
  virtual void* value_data() = 0;
  virtual int64_t value_count() const = 0;
  virtual size_t element_bytes() const = 0;
  // Whether the elements are arithmetic, so that AddValues/SubtractValues may be used.
  virtual bool arithmetic() const = 0;
  // out[i] = a[i] - b[i] and dst[i] += delta[i] over `count` elements of the array's type.
  // REQUIRES: arithmetic().
  virtual void SubtractValues(const void* a, const void* b, void* out, int64_t count) const = 0;
  virtual void AddValues(void* dst, const void* delta, int64_t count) const = 0;
  // A RelaxedArray (a parameter-server table when distributed) and its staleness bound.
  virtual bool relaxed() const = 0;
  virtual int staleness() const = 0;
  // The table's element type, when it is one a parameter-server table can hold: 0 float,
  // 1 double, 2 int32, 3 int64; -1 otherwise.
  virtual int table_value_type() const = 0;

  // --- Partitioned sparse arrays (distributed executor and loaders). ---
  // Null unless this worker holds only part of a sparse array's elements.
  virtual const RecordPartition* record_partition() const = 0;
  // Moves every stored element into out[dest(key)] (out holds one batch per destination),
  // leaving the array empty. REQUIRES: sparse.
  virtual void ExportRecords(const std::function<size_t(const int64_t* key)>& dest,
                             std::vector<RecordBatch>* out) = 0;
  // Replaces the stored elements with those of `in`, in RecordOrder order; the array is then
  // partitioned as `partition` says, or whole when it is null. REQUIRES: sparse, keys in range
  // and unique.
  virtual void ImportRecords(std::vector<RecordBatch> in, const RecordPartition* partition) = 0;
  // Checkpoints of a partitioned array, written from the storage itself: the held elements' keys
  // (rank() components each, in storage order) and their places in the serial order (size() of
  // them), valid until the array changes. REQUIRES: sparse; order_data: record_partition().
  // order_data is null when the places are implicit (a share in its keys' order stores none);
  // place_at(p) gives position p's place either way.
  virtual const int64_t* key_data() const = 0;
  virtual const RecordOrder* order_data() const = 0;
  virtual RecordOrder place_at(size_t p) const = 0;

  // --- Building a sparse array row by row (DistArray::permuted, permute/permute_records.h). ---
  // Replaces the stored elements by room for the rows of key[0] values [lo, lo + counts.size() /
  // parts), each cut into `parts` parts, part q of row v holding exactly counts[(v - lo) * parts
  // + q] elements, which PlaceInRows fills. REQUIRES: sparse; parts >= 1 divides counts.size().
  virtual void ReserveRows(int64_t lo, int parts, const std::vector<uint64_t>& counts) = 0;
  // Places n elements (rank() key components and element_bytes() raw value bytes each) in part
  // `part` of their rows, after those already placed there. False when a key is outside the
  // shape, its key[0] outside the reserved rows or its part full (the elements before it are
  // placed). A sender's elements go to a part of their own, so that rows whose parts arrive in
  // key order need no sort.
  virtual bool PlaceInRows(const int64_t* keys, const void* values, size_t n, int part) = 0;
  // Sorts every reserved row by key: the array then holds its elements in key order (its serial
  // order), partitioned as `partition` says (places implicit) or whole when it is null. False,
  // leaving the array undefined, when a row is not full or a key is placed twice.
  virtual bool FinishRows(const RecordPartition* partition) = 0;
};

// A sum that loop bodies add to (tessera::Accumulator): what a distributed executor reduces
// across workers at the end of each parallel_for.
class AccumulatorBase {
 public:
  virtual ~AccumulatorBase() = default;
  virtual size_t value_bytes() const = 0;
  // Writes (into `out`, value_bytes() long) what executor threads added since the previous call,
  // and takes it out of the value until it comes back through AddRemote.
  virtual void TakeLoopContribution(void* out) = 0;
  // Adds a worker's contribution (value_bytes() long). Every worker adds every worker's, its own
  // included, in rank order, so that all compute the same sum.
  virtual void AddRemote(const void* value) = 0;
  // Checkpoints: the exact state between loops -- every partial sum (code outside loops, each
  // executor thread's, the workers' contributions) -- so that a restored accumulator adds what
  // comes next in the order an uninterrupted run does. SetState returns false for bytes that are
  // not a state of this accumulator's type.
  virtual std::string State() const = 0;
  virtual bool SetState(std::string_view state) = 0;
};

// Per-thread, not shared: which executor slot this thread fills (ExecutorSlotScope sets them).
// Inline thread_locals rather than Context members because Accumulator::operator+= and relaxed
// adds sit in the innermost loop of a body and have no Context; inline so that reading them
// there is one load, not a call.
inline constinit thread_local int current_executor_slot = 0;
inline constinit thread_local bool current_executor_concurrent = false;

// Index of the executor thread running the current code: 0 outside parallel_for and in serial
// mode; executors set it on their threads with ExecutorSlotScope. Accumulators use it to give each
// thread its own partial sum without locks.
inline int CurrentExecutorSlot() { return current_executor_slot; }

// Whether other executor threads of this process may run loop bodies while this one does (an
// executor slot of an executor with several threads): relaxed adds must then be atomic.
inline bool ConcurrentExecutorThread() { return current_executor_concurrent; }

// `shared`: other threads of the executor may run bodies at the same time (false: this is its
// only thread, e.g. one thread per worker process, and relaxed adds need no atomics).
class ExecutorSlotScope {
 public:
  explicit ExecutorSlotScope(int slot, bool shared = true);
  ~ExecutorSlotScope();
  ExecutorSlotScope(const ExecutorSlotScope&) = delete;
  ExecutorSlotScope& operator=(const ExecutorSlotScope&) = delete;

 private:
  int previous_;
  bool previous_concurrent_;
};

// Upper bound on executor threads per process (size of per-thread partial arrays).
inline constexpr int kMaxExecutorSlots = 64;

}  // namespace internal

// Why a call site has no schedule to run with.
enum class NoScheduleCause {
  kNotEmbedded,  // the program embeds no entry for it (not built with tessera_add_program)
  kAmbiguous,    // several embedded entries match it
  kTesscSerial,  // tessc analysed it and chose to run it serially (its entry says why)
};

// One parallel_for call as the executor sees it.
struct LoopSite {
  std::source_location location;
  bool data_parallel = false;  // the user passed DataParallel{} at this call
  int staleness = 0;           // DataParallel::staleness when data_parallel
  bool lock_free = false;      // DataParallel::lock_free when data_parallel
  // The schedule tessc embedded for this site; nullptr when there is none. Owned by the
  // program's static data.
  const EmbeddedSchedule* schedule = nullptr;
  // When `schedule` is nullptr: why, and for kTesscSerial tessc's entry (strategy "serial", with
  // its reasons; never a schedule to run).
  NoScheduleCause no_schedule = NoScheduleCause::kNotEmbedded;
  const EmbeddedSchedule* serial_entry = nullptr;
};

// A parallel_for body over positions, type-erased so that Executor can be a virtual interface
// while the body stays inlined inside each call. Does not own the callable, which must outlive it.
// Thread safety: the callables may be invoked concurrently on disjoint positions.
class LoopTask {
 public:
  template <typename RangeFn, typename ListFn>
  LoopTask(RangeFn& range, ListFn& list)
      : range_obj_(&range), list_obj_(&list), range_fn_(&CallRange<RangeFn>),
        list_fn_(&CallList<ListFn>) {}

  // Runs positions [begin, end) in increasing order.
  void RunRange(int64_t begin, int64_t end) const { range_fn_(range_obj_, begin, end); }
  // Runs the given positions in the given order.
  void RunPositions(const int64_t* positions, size_t count) const {
    list_fn_(list_obj_, positions, count);
  }

 private:
  template <typename F>
  static void CallRange(void* f, int64_t b, int64_t e) { (*static_cast<F*>(f))(b, e); }
  template <typename F>
  static void CallList(void* f, const int64_t* p, size_t n) { (*static_cast<F*>(f))(p, n); }

  void* range_obj_;
  void* list_obj_;
  void (*range_fn_)(void*, int64_t, int64_t);
  void (*list_fn_)(void*, const int64_t*, size_t);
};

// Runs parallel_for loops. Owned by a Context; used from the thread that owns the Context.
class Executor {
 public:
  virtual ~Executor() = default;
  virtual std::string_view name() const = 0;
  // Executor threads this executor may run a loop on (<= internal::kMaxExecutorSlots).
  virtual int concurrency() const { return 1; }
  // Runs every position of `space` exactly once and returns when all have run.
  virtual void Run(const LoopSite& site, const internal::ArrayBase& space, const LoopTask& task) = 0;
  // A loop the program ran before the checkpoint it resumes from, replayed without running:
  // an executor whose choices depend on the loops before (a rotation's phase) counts it.
  virtual void Skipped(const LoopSite& /*site*/, const internal::ArrayBase& /*space*/) {}
};

// The reference executor: all positions, in order, on the calling thread.
std::unique_ptr<Executor> MakeSerialExecutor();

}  // namespace tessera

#endif  // TESSERA_EXECUTOR_H_
