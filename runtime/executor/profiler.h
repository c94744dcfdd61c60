// Execution observer: an optional hook that Method::execute() calls around every step, for
// profilers and tracers. Header-only; nothing here allocates.
#pragma once

#include <cstddef>
#include <cstdint>

#include "runtime/core/platform.h"
#include "runtime/core/span.h"

namespace tern {

/// Called by Method::execute() before and after each step (a kernel call, a delegate call or
/// a fallback kernel of a delegate call). Runs on the executing thread, inside execute(): an
/// implementation must not allocate on the heap, do I/O or throw, and should be cheap.
///
/// `step` is the step index (0 .. Method::num_steps()-1), `op` the operator name
/// ("tern::conv2d") for a kernel step or the backend name ("cpu") for a delegate call, and
/// `debug_name` the instruction's debug name; both strings point into the Program and stay
/// valid while it lives, and either may be null. on_step_end is called even when the step
/// failed (before execute() returns its error).
class ExecutionObserver {
 public:
  virtual ~ExecutionObserver() = default;
  virtual void on_step_begin(size_t step, const char* op, const char* debug_name) {
    (void)step;
    (void)op;
    (void)debug_name;
  }
  virtual void on_step_end(size_t step, const char* op, const char* debug_name) {
    (void)step;
    (void)op;
    (void)debug_name;
  }
};

/// One timed step, as StepRecorder stores it.
struct StepEvent {
  uint32_t step = 0;
  const char* op = nullptr;          ///< points into the Program (may be null)
  const char* debug_name = nullptr;  ///< points into the Program (may be null)
  uint64_t begin_ns = 0;             ///< monotonic_ns() before the step
  uint64_t end_ns = 0;               ///< monotonic_ns() after the step
};

/// An observer that timestamps every step into a caller-provided buffer. The caller owns the
/// buffer and keeps it alive while the recorder is installed; events past its capacity are
/// counted in dropped() and not stored. Never allocates.
class StepRecorder final : public ExecutionObserver {
 public:
  /// `buffer` receives the events in execution order.
  explicit StepRecorder(Span<StepEvent> buffer) : buffer_(buffer) {}

  void on_step_begin(size_t step, const char* op, const char* debug_name) override {
    open_ = size_ < buffer_.size();
    if (!open_) {
      ++dropped_;
      return;
    }
    StepEvent& e = buffer_[size_];
    e.step = static_cast<uint32_t>(step);
    e.op = op;
    e.debug_name = debug_name;
    e.end_ns = 0;
    e.begin_ns = monotonic_ns();
  }

  void on_step_end(size_t, const char*, const char*) override {
    if (!open_) return;
    buffer_[size_].end_ns = monotonic_ns();
    ++size_;
    open_ = false;
  }

  /// Number of events stored (at most the buffer's size).
  size_t size() const { return size_; }
  /// Event i (i < size()).
  const StepEvent& event(size_t i) const { return buffer_[i]; }
  /// Number of steps seen after the buffer was full.
  size_t dropped() const { return dropped_; }
  /// Forgets the stored events (the buffer is reused from its start).
  void clear() {
    size_ = 0;
    dropped_ = 0;
    open_ = false;
  }

 private:
  Span<StepEvent> buffer_;
  size_t size_ = 0;
  size_t dropped_ = 0;
  bool open_ = false;
};

}  // namespace tern
