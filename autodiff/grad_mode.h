#pragma once
// Grad mode: whether ops record nodes on the tape. Thread-local: each thread (in-process rank) has
// its own switch, so one rank's NoGradGuard never affects another's.

namespace ruccl::autodiff {

/// Whether ops on this thread record the tape (true unless a NoGradGuard is alive).
bool is_grad_enabled();
/// Switches recording on or off for this thread; prefer the guards below.
void set_grad_enabled(bool enabled);

/// Turns recording off on this thread for its lifetime (like torch.no_grad()): results of ops are
/// constants that need no gradient. Restores the previous mode on destruction.
///
///   { NoGradGuard guard; Var y = model.forward(x); }   // evaluation, no tape
class NoGradGuard {
 public:
  NoGradGuard() : previous_(is_grad_enabled()) { set_grad_enabled(false); }
  ~NoGradGuard() { set_grad_enabled(previous_); }
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool previous_;
};

/// Turns recording back on inside a NoGradGuard scope, restoring the previous mode afterwards.
class EnableGradGuard {
 public:
  EnableGradGuard() : previous_(is_grad_enabled()) { set_grad_enabled(true); }
  ~EnableGradGuard() { set_grad_enabled(previous_); }
  EnableGradGuard(const EnableGradGuard&) = delete;
  EnableGradGuard& operator=(const EnableGradGuard&) = delete;

 private:
  bool previous_;
};

}  // namespace ruccl::autodiff
