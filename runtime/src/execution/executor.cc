#include "tessera/executor.h"

namespace tessera {
namespace internal {
ExecutorSlotScope::ExecutorSlotScope(int slot, bool shared)
    : previous_(current_executor_slot), previous_concurrent_(current_executor_concurrent) {
  current_executor_slot = slot;
  current_executor_concurrent = slot != 0 && shared;
}
ExecutorSlotScope::~ExecutorSlotScope() {
  current_executor_slot = previous_;
  current_executor_concurrent = previous_concurrent_;
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
