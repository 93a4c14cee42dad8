#pragma once
// Helpers of the cases every process of an MPI test job runs (tests/mpi/mpi_job_main.cpp).
#include <catch2/catch.hpp>

#include <chrono>
#include <optional>
#include <string>

#include "collective/collective.h"
#include "collective/mpi/mpi_runtime.h"
#include "collective/mpi_group.h"

namespace ruccl::testing::mpi_job {

/// A group of every process of the job, with a deadline that fails a case instead of stalling.
inline Communicator world(std::chrono::milliseconds timeout = std::chrono::seconds(20),
                          CommunicatorOptions options = {}) {
  options.timeout = timeout;
  return MpiGroup::world(Device::cpu(), std::move(options));
}

/// The number of processes of the job.
inline int job_size() {
  ruccl::mpi::ensure_initialized();
  int size = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  return size;
}

inline int job_rank() {
  ruccl::mpi::ensure_initialized();
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

/// The CollectiveError `f` raised, or nullopt when it returned.
template <typename F>
std::optional<CollectiveError> error_of(F&& f) {
  try {
    f();
  } catch (const CollectiveError& e) {
    return e;
  }
  return std::nullopt;
}

/// `f` raised a CollectiveError of `kind` on this rank; returns it.
template <typename F>
CollectiveError require_error(CollectiveErrorKind kind, F&& f) {
  const std::optional<CollectiveError> e = error_of(f);
  REQUIRE(e.has_value());
  INFO(e->what());
  REQUIRE(e->kind() == kind);
  return *e;
}

/// `f` raised the group's failure: `kind` itself (it came during the call) or Aborted naming it
/// (it was known before the call began), with `text` in the message either way. For a rank that
/// learns of a failure from a peer's notice: when it arrives depends on the schedule.
template <typename F>
CollectiveError require_failure(CollectiveErrorKind kind, const std::string& text, F&& f) {
  const std::optional<CollectiveError> e = error_of(f);
  REQUIRE(e.has_value());
  INFO(e->what());
  REQUIRE((e->kind() == kind || e->kind() == CollectiveErrorKind::Aborted));
  REQUIRE(e->what() != nullptr);
  REQUIRE(std::string(e->what()).find(text) != std::string::npos);
  return *e;
}

inline bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace ruccl::testing::mpi_job
