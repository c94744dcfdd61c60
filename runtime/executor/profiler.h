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
  /// Called from inside delegate step `step` (between its begin and end) for each part the
  /// backend timed and reported (BackendExecuteContext::report_part): `label` names the part
  /// (e.g. "stage 3: packed_conv2d [1, 56, 56, 64]") and stays valid while the method lives;
  /// the times are monotonic_ns(). Default: ignored.
  virtual void on_delegate_part(size_t step, const char* label, uint64_t begin_ns,
                                uint64_t end_ns) {
    (void)step;
    (void)label;
    (void)begin_ns;
    (void)end_ns;
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

/// One part of a delegate step that its backend timed, as StepRecorder stores it.
struct PartEvent {
  uint32_t step = 0;
  const char* label = nullptr;  ///< valid while the method lives
  uint64_t begin_ns = 0;
  uint64_t end_ns = 0;
};

/// An observer that timestamps every step into a caller-provided buffer, and the parts that
/// backends report into a second one. The caller owns the buffers and keeps them alive while
/// the recorder is installed; events past a buffer's capacity are counted in dropped() /
/// parts_dropped() and not stored. Never allocates.
class StepRecorder final : public ExecutionObserver {
 public:
  /// `buffer` receives the step events in execution order, `parts` (may be empty) the
  /// delegate parts.
  explicit StepRecorder(Span<StepEvent> buffer, Span<PartEvent> parts = Span<PartEvent>())
      : buffer_(buffer), parts_(parts) {}

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

  void on_delegate_part(size_t step, const char* label, uint64_t begin_ns,
                        uint64_t end_ns) override {
    if (parts_size_ >= parts_.size()) {
      ++parts_dropped_;
      return;
    }
    PartEvent& e = parts_[parts_size_++];
    e.step = static_cast<uint32_t>(step);
    e.label = label;
    e.begin_ns = begin_ns;
    e.end_ns = end_ns;
  }

  /// Number of events stored (at most the buffer's size).
  size_t size() const { return size_; }
  /// Event i (i < size()).
  const StepEvent& event(size_t i) const { return buffer_[i]; }
  /// Number of steps seen after the buffer was full.
  size_t dropped() const { return dropped_; }
  /// Number of delegate parts stored, part i, and the number seen after the parts buffer was
  /// full.
  size_t parts_size() const { return parts_size_; }
  const PartEvent& part(size_t i) const { return parts_[i]; }
  size_t parts_dropped() const { return parts_dropped_; }
  /// Forgets the stored events (the buffers are reused from their start).
  void clear() {
    size_ = 0;
    dropped_ = 0;
    open_ = false;
    parts_size_ = 0;
    parts_dropped_ = 0;
  }

 private:
  Span<StepEvent> buffer_;
  Span<PartEvent> parts_;
  size_t size_ = 0;
  size_t dropped_ = 0;
  bool open_ = false;
  size_t parts_size_ = 0;
  size_t parts_dropped_ = 0;
};

}  // namespace tern
