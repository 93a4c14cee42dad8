#pragma once
// ThreadDefaultGenerator: a thread's own default generator (tensor/random/generator.h's
// default_generator()), so that threads which must draw the same numbers, such as the rank
// threads of run_ranks building replicas without a Generator&, do not share one stream.
//
// The rule on rank threads: run_ranks gives each rank thread one, started from the calling
// thread's default generator as it stands when run_ranks starts. Every rank draws the numbers the
// caller would have drawn next, so replicas built from the default generator are identical; the
// caller's generator does not advance. manual_seed(n) on a rank thread reseeds that rank's
// generator only: the main thread (and every other thread) sees no change.
#include <mutex>

#include "tensor/random/generator.h"

namespace ruccl {

/// Gives the calling thread its own default generator while this object lives: from its
/// construction to its destruction, default_generator(), default_generator_mutex(),
/// with_default_generator and manual_seed on this thread use a copy of `start` (with its own
/// mutex); other threads are unaffected, and this thread's previous default generator comes back
/// at destruction. Nests. Construct and destroy it on the same thread.
///
///   ThreadDefaultGenerator own(Generator(7));
///   nn::Linear layer(4, 2);  // drawn from this thread's Generator(7)
class ThreadDefaultGenerator {
 public:
  explicit ThreadDefaultGenerator(const Generator& start);
  ~ThreadDefaultGenerator();
  ThreadDefaultGenerator(const ThreadDefaultGenerator&) = delete;
  ThreadDefaultGenerator& operator=(const ThreadDefaultGenerator&) = delete;

  /// The innermost one of the calling thread, or nullptr (the thread uses the process's).
  static ThreadDefaultGenerator* current();
  /// This thread's generator and the mutex guarding it (what default_generator() returns).
  Generator& generator() { return generator_; }
  std::mutex& mutex() { return mutex_; }

 private:
  Generator generator_;
  std::mutex mutex_;
  ThreadDefaultGenerator* previous_;
};

}  // namespace ruccl
