#pragma once
// Slurm's compact lists, as srun writes them into a task's environment:
//   host lists (SLURM_STEP_NODELIST, SLURM_JOB_NODELIST): "node[01-03,7],gpu5"
//   tasks per node (SLURM_STEP_TASKS_PER_NODE, SLURM_TASKS_PER_NODE): "2(x3),1"
// Each parser refuses what srun never writes (unbalanced or nested brackets, empty elements, a
// range that runs backwards, signs, spaces) with CollectiveError(InvalidConfig) saying what it
// expected and what came, and caps what it expands before allocating anything.
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace ruccl {

/// The hosts of a Slurm host list, in order. A bracket holds comma-separated numbers and ranges
/// "lo-hi"; a range keeps the zero padding of its low bound ("[08-10]" -> 08 09 10, "[8-10]" ->
/// 8 9 10); several brackets in one name expand as a product, the first varying slowest
/// ("r[1-2]n[1-2]" -> r1n1 r1n2 r2n1 r2n2).
///
///   expand_slurm_hostlist("node[01-03,7],gpu5")  // {"node01", "node02", "node03", "node7",
///   "gpu5"}
///
/// Throws when the list names more than `max_hosts` hosts.
std::vector<std::string> expand_slurm_hostlist(std::string_view list,
                                               std::size_t max_hosts = std::size_t{1} << 20);

/// How many hosts a Slurm host list names, without expanding it (saturates at SIZE_MAX).
std::size_t count_slurm_hosts(std::string_view list);

/// The first host of a non-empty Slurm host list, without expanding the rest.
std::string first_slurm_host(std::string_view list);

/// The task count of each node from Slurm's "count(xrepeat)" list.
///
///   expand_slurm_tasks_per_node("2(x3),1")  // {2, 2, 2, 1}
///
/// Counts are in [1, 2^31); throws when the list describes more than `max_nodes` nodes.
std::vector<int> expand_slurm_tasks_per_node(std::string_view text,
                                             std::size_t max_nodes = std::size_t{1} << 20);

}  // namespace ruccl
