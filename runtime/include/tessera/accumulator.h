// Accumulator<T>: a sum that parallel_for bodies add to and the program reads after the loop.
//
//   tessera::Accumulator<double> loss;
//   tessera::parallel_for(R, [&](const tessera::Key<2>& k, float& r) { loss += err * err; });
//   double total = loss.value();
//
// Additions are only allowed, so the analyzer treats an Accumulator like a relaxed table whose
// reads happen after the loop. Each executor thread adds into its own cache-line-padded slot
// (internal::CurrentExecutorSlot), so there is no lock or atomic in the loop; value() sums them.
//
// Thread safety: operator+= may be called concurrently from distinct executor threads; value()
// and reset() must not race with additions (call them outside parallel_for).
// In serial mode value() is the whole sum. Reducing across the workers of a distributed job is the
// distributed executor's part (not in serial mode).
#ifndef TESSERA_ACCUMULATOR_H_
#define TESSERA_ACCUMULATOR_H_

#include <memory>

#include "tessera/executor.h"

namespace tessera {

template <typename T>
class Accumulator {
 public:
  explicit Accumulator(T initial = T{}) : slots_(new Slot[internal::kMaxExecutorSlots]) {
    slots_[0].value = initial;
  }

  Accumulator& operator+=(T v) {
    slots_[internal::CurrentExecutorSlot()].value += v;
    return *this;
  }
  T value() const {
    T sum = slots_[0].value;
    for (int i = 1; i < internal::kMaxExecutorSlots; ++i) sum += slots_[i].value;
    return sum;
  }
  // Back to T{}.
  void reset() {
    for (int i = 0; i < internal::kMaxExecutorSlots; ++i) slots_[i].value = T{};
  }

 private:
  struct alignas(64) Slot {
    T value{};
  };
  std::unique_ptr<Slot[]> slots_;
};

}  // namespace tessera

#endif  // TESSERA_ACCUMULATOR_H_
