// Integer-valued loops, one per strategy tessc emits, built with tessera_add_program so that their
// schedules are tessc's own. Each returns every element the loop wrote and, per position, the
// executor slot that ran it (internal::CurrentExecutorSlot), so tests can compare runs exactly
// and check how the iterations were partitioned.
#ifndef TESSERA_TESTS_RUNTIME_PARALLEL_KERNELS_H_
#define TESSERA_TESTS_RUNTIME_PARALLEL_KERNELS_H_

#include <cstdint>
#include <vector>

#include <tessera/tessera.h>

namespace tessera::testing {

struct KernelRun {
  std::vector<int64_t> values;  // the arrays the loop writes, flattened
  // slots[i]: slot that ran the iteration with key keys[i] (keys in row-major order of the
  // space's shape; -1 for keys a sparse space does not store).
  std::vector<int64_t> slots;
  std::vector<int64_t> cols;  // extent of the last key dim, to recover keys from slot indices
};

// independent: A(i, j) = A(i, j) * scale(i) + j over a dense rows x cols space.
KernelRun RowScaling(Context& ctx, int64_t rows, int64_t cols);
// 1d (space key[1]): A(i, j) = (3 * A(i, j) + A(i - 1, j)) mod M, a recurrence down the columns.
KernelRun ColumnRecurrence(Context& ctx, int64_t rows, int64_t cols);
// 1d (space key[0]) over a shuffled sparse space: acc(i) = (31 * acc(i) + r) mod M, an
// order-sensitive fold of each row, so the serial order inside a row must be kept.
KernelRun SparseRowFold(Context& ctx, int64_t rows, int64_t cols, int64_t nnz);
// SparseRowFold's loop run `epochs` times on one array, reshuffled after each run: the
// executor's cached blocks must follow the new positions.
KernelRun SparseRowFoldReshuffled(Context& ctx, int64_t rows, int64_t cols, int64_t nnz, int epochs);
// 2d (space key[0], time key[1]): MF-shaped A(i) += f(B(j)), B(j) += g(A(i)) over a sparse
// space, with the reads restricted to bits the updates never change so the result is order-free;
// the read-yield-write of each update loses an update if two threads ever share a row or column.
// Also adds into a RelaxedArray (like LDA's topic totals).
KernelRun MatrixUpdate2D(Context& ctx, int64_t rows, int64_t cols, int64_t nnz);
// unimodular (skew [1 1; 0 1]): A(i, j) = (A(i - 1, j) + A(i, j - 1) + A(i, j)) mod M.
KernelRun Wavefront(Context& ctx, int64_t n);
// unimodular (skew [2 1; 1 0]): A(i, j) = (A(i - 1, j + 1) + 2 A(i, j - 1)) mod M.
KernelRun SkewedWavefront(Context& ctx, int64_t n);
// data_parallel (DataParallel permission): hits(value) += 1 conflicts (racy by permission; not
// returned), per-sample sums are local and exact.
KernelRun DataParallelSums(Context& ctx, int64_t samples, int64_t features, bool lock_free);
// LDA-shaped sweeps over two orders of one sparse key set, X keyed (a, b, j) and Y keyed (b, a, j),
// both sorted by key: each loop reads its own row (sparse_row(key[0])) and writes the other order
// at the permuted key (through the runtime's position map), `rounds` times each way. values: X's
// then Y's values in storage order.
KernelRun PermutedSweeps(Context& ctx, int64_t rows, int64_t cols, int rounds, bool shuffled = false);
// No schedule by tessc's choice: every iteration adds into one captured `total`, state outside
// the loop body that tessc cannot partition, so tessc runs the loop serially. values: {total}.
KernelRun SharedTotal(Context& ctx, int64_t n);

}  // namespace tessera::testing

#endif  // TESSERA_TESTS_RUNTIME_PARALLEL_KERNELS_H_
