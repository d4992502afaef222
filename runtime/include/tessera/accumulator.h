// Accumulator<T>: a sum that parallel_for bodies add to and the program reads after the loop.
//
//   tessera::Accumulator<double> loss(ctx);
//   tessera::parallel_for(R, [&](const tessera::Key<2>& k, float& r) { loss += err * err; });
//   double total = loss.value();
//
// Additions are only allowed, so the analyzer treats an Accumulator like a relaxed table whose
// reads happen after the loop. Each executor thread adds into its own cache-line-padded slot
// (internal::CurrentExecutorSlot), so there is no lock or atomic in the loop; value() sums them.
//
// Distributed (SPMD) runs: what loop bodies add on every worker is summed across the workers at
// the end of each parallel_for, so value() is the whole job's sum on every worker. Additions made
// outside parallel_for run on every worker alike and count once, as in the serial program.
//
// Ownership: refers to the Context it was made from, which must outlive it.
// Thread safety: operator+= may be called concurrently from distinct executor threads; value()
// and reset() must not race with additions (call them outside parallel_for).
#ifndef TESSERA_ACCUMULATOR_H_
#define TESSERA_ACCUMULATOR_H_

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>

#include "tessera/context.h"
#include "tessera/executor.h"

namespace tessera {

template <typename T>
class Accumulator final : private internal::AccumulatorBase {
 public:
  static_assert(std::is_trivially_copyable_v<T>, "Accumulator<T> needs a trivially copyable T");

  explicit Accumulator(Context& ctx, T initial = T{})
      : ctx_(&ctx), slots_(new Slot[internal::kMaxExecutorSlots]) {
    slots_[0].value = initial;
    ctx_->AttachAccumulator(this);
  }
  ~Accumulator() override { ctx_->DetachAccumulator(this); }
  Accumulator(const Accumulator&) = delete;
  Accumulator& operator=(const Accumulator&) = delete;

  Accumulator& operator+=(T v) {
    slots_[internal::CurrentExecutorSlot()].value += v;
    return *this;
  }
  T value() const {
    T sum = slots_[0].value;
    for (int i = 1; i < internal::kMaxExecutorSlots; ++i) sum += slots_[i].value;
    return sum + remote_;
  }
  // Back to T{}.
  void reset() {
    for (int i = 0; i < internal::kMaxExecutorSlots; ++i) slots_[i].value = T{};
    remote_ = T{};
  }

 private:
  // internal::AccumulatorBase: slot 0 is code outside loops (replicated on every worker, so it
  // is not exchanged); slots 1.. are executor threads.
  size_t value_bytes() const override { return sizeof(T); }
  void TakeLoopContribution(void* out) override {
    T loop_sum{};
    for (int i = 1; i < internal::kMaxExecutorSlots; ++i) {
      loop_sum += slots_[i].value;
      slots_[i].value = T{};
    }
    std::memcpy(out, &loop_sum, sizeof(T));
  }
  void AddRemote(const void* value) override {
    T v;
    std::memcpy(&v, value, sizeof(T));
    remote_ += v;
  }

  // The state: remote_, then (slot index, value) for every slot whose bytes are not all zero.
  std::string State() const override {
    std::string out(reinterpret_cast<const char*>(&remote_), sizeof(T));
    for (int i = 0; i < internal::kMaxExecutorSlots; ++i) {
      const char* v = reinterpret_cast<const char*>(&slots_[i].value);
      if (std::all_of(v, v + sizeof(T), [](char c) { return c == 0; })) continue;
      const auto slot = static_cast<uint8_t>(i);
      out.append(reinterpret_cast<const char*>(&slot), 1);
      out.append(v, sizeof(T));
    }
    return out;
  }
  bool SetState(std::string_view state) override {
    if (state.size() < sizeof(T) || (state.size() - sizeof(T)) % (1 + sizeof(T)) != 0) {
      return false;
    }
    reset();
    std::memcpy(&remote_, state.data(), sizeof(T));
    for (size_t at = sizeof(T); at < state.size(); at += 1 + sizeof(T)) {
      const auto slot = static_cast<uint8_t>(state[at]);
      if (slot >= internal::kMaxExecutorSlots) return false;
      std::memcpy(&slots_[slot].value, state.data() + at + 1, sizeof(T));
    }
    return true;
  }

  struct alignas(64) Slot {
    T value{};
  };
  Context* ctx_;
  std::unique_ptr<Slot[]> slots_;
  // Every worker's loop contributions, this one's included, added in rank order: the same sum
  // on every worker.
  T remote_{};
};

}  // namespace tessera

#endif  // TESSERA_ACCUMULATOR_H_
