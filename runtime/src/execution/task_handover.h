// ThreadSanitizer cannot see oneTBB hand work from one thread to another: Debian's libtbb (the
// scheduler that spawns, steals and waits for tasks) is not instrumented, so what a caller wrote
// before tbb::parallel_for and a task reads, or what a task wrote and the caller reads after it
// returns, looks like a race. A HandoverPoint makes such an edge visible: Release() after the
// last write the other side may read, Acquire() before its first read. The executors mark the
// edges the scheduler guarantees (the spawn, each task's end, a flow-graph node's predecessors)
// and nothing more, so races between tasks that may run at once still show. No-ops without TSan.
#ifndef TESSERA_RUNTIME_SRC_EXECUTION_TASK_HANDOVER_H_
#define TESSERA_RUNTIME_SRC_EXECUTION_TASK_HANDOVER_H_

#if defined(__SANITIZE_THREAD__)
#define TESSERA_TASK_HANDOVER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define TESSERA_TASK_HANDOVER_TSAN 1
#endif
#endif
#ifdef TESSERA_TASK_HANDOVER_TSAN
#include <sanitizer/tsan_interface.h>
#endif

#include <utility>

namespace tessera::internal {

class HandoverPoint {
 public:
  void Release() {
#ifdef TESSERA_TASK_HANDOVER_TSAN
    __tsan_release(this);
#endif
  }
  void Acquire() {
#ifdef TESSERA_TASK_HANDOVER_TSAN
    __tsan_acquire(this);
#endif
  }

 private:
  char address_ = 0;  // a distinct address per point, which is TSan's name for it
};

// The edges of a group of tasks spawned together: the spawner's writes before Fork() are seen by
// every task from its Begin(); every task's writes before its End() are seen by the spawner
// after Join().
struct TaskGroupHandover {
  HandoverPoint fork;
  HandoverPoint join;
  void Fork() { fork.Release(); }
  void Begin() { fork.Acquire(); }
  void End() { join.Release(); }
  void Join() { join.Acquire(); }
};

// A task body for TBB whose hand-over TSan sees: every copy TBB makes of it (into a task, a
// flow-graph node, a split of a range) is released once made, and every call acquires first and
// releases `edges.join` last. The copy is made inside tbb::parallel_for, after any point the
// caller could mark, and the body's captures live in it; the caller's own writes are released by
// edges.Fork() before it spawns, or by the copy that follows them.
template <typename Body>
class HandedOver {
 public:
  HandedOver(TaskGroupHandover& edges, Body body) : edges_(&edges), body_(std::move(body)) {
    self_.Release();
    edges_->Fork();
  }
  HandedOver(const HandedOver& other) : edges_(other.edges_), body_(other.body_) {
    self_.Release();
    edges_->Fork();
  }
  HandedOver& operator=(const HandedOver&) = delete;

  template <typename... Args>
  void operator()(Args&&... args) const {
    self_.Acquire();  // first: this object's own members were written by whoever made it
    edges_->Begin();
    body_(std::forward<Args>(args)...);
    edges_->End();
  }

 private:
  mutable HandoverPoint self_;
  TaskGroupHandover* edges_;
  Body body_;
};

}  // namespace tessera::internal

#endif  // TESSERA_RUNTIME_SRC_EXECUTION_TASK_HANDOVER_H_
