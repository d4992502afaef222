#include "tessera/executor.h"

namespace tessera {
namespace internal {
namespace {
// Per-thread, not shared: which executor slot this thread fills. A thread_local rather than a
// Context member because Accumulator::operator+= sits in the innermost loop and has no Context.
thread_local int current_slot = 0;
thread_local bool current_concurrent = false;
}  // namespace

int CurrentExecutorSlot() { return current_slot; }
bool ConcurrentExecutorThread() { return current_concurrent; }

ExecutorSlotScope::ExecutorSlotScope(int slot, bool shared)
    : previous_(current_slot), previous_concurrent_(current_concurrent) {
  current_slot = slot;
  current_concurrent = slot != 0 && shared;
}
ExecutorSlotScope::~ExecutorSlotScope() {
  current_slot = previous_;
  current_concurrent = previous_concurrent_;
}

}  // namespace internal

namespace {

class SerialExecutor final : public Executor {
 public:
  std::string_view name() const override { return "serial"; }
  void Run(const LoopSite& site, const internal::ArrayBase& space, const LoopTask& task) override {
    task.RunRange(0, space.size());
  }
};

}  // namespace

std::unique_ptr<Executor> MakeSerialExecutor() { return std::make_unique<SerialExecutor>(); }

}  // namespace tessera
