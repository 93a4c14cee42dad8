// Slurm's host lists and tasks-per-node lists: expansion as srun writes them, every malformed
// list refused with the reason, and caps that hold before anything is expanded.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "collective/common/collective_error.h"
#include "collective/launch/slurm_hostlist.h"

using namespace ruccl;
using Hosts = std::vector<std::string>;

namespace {

std::string hostlist_error(const std::string& list) {
  try {
    (void)expand_slurm_hostlist(list);
  } catch (const CollectiveError& e) {
    CHECK(e.kind() == CollectiveErrorKind::InvalidConfig);
    return e.what();
  }
  FAIL("expand_slurm_hostlist accepted \"" << list << "\"");
  return "";
}

std::string tasks_error(const std::string& text, std::size_t max_nodes = 1 << 20) {
  try {
    (void)expand_slurm_tasks_per_node(text, max_nodes);
  } catch (const CollectiveError& e) {
    CHECK(e.kind() == CollectiveErrorKind::InvalidConfig);
    return e.what();
  }
  FAIL("expand_slurm_tasks_per_node accepted \"" << text << "\"");
  return "";
}

}  // namespace

TEST_CASE("Slurm host lists expand ranges, keep zero padding and keep the order",
          "[collective][launch]") {
  CHECK(expand_slurm_hostlist("node[01-03,7],gpu5") ==
        Hosts{"node01", "node02", "node03", "node7", "gpu5"});
  CHECK(expand_slurm_hostlist("single") == Hosts{"single"});
  CHECK(expand_slurm_hostlist("a,b,c") == Hosts{"a", "b", "c"});
  CHECK(expand_slurm_hostlist("n[8-10]") == Hosts{"n8", "n9", "n10"});
  CHECK(expand_slurm_hostlist("n[08-10]") == Hosts{"n08", "n09", "n10"});
  CHECK(expand_slurm_hostlist("n[098-101]") == Hosts{"n098", "n099", "n100", "n101"});
  CHECK(expand_slurm_hostlist("n[5]") == Hosts{"n5"});
  CHECK(expand_slurm_hostlist("[1-2]x") == Hosts{"1x", "2x"});
  CHECK(expand_slurm_hostlist("r[1-2]n[1-2].ib") ==
        Hosts{"r1n1.ib", "r1n2.ib", "r2n1.ib", "r2n2.ib"});
  CHECK(expand_slurm_hostlist("gpu-a_1.cluster,cpu[3,1]") ==
        Hosts{"gpu-a_1.cluster", "cpu3", "cpu1"});
}

TEST_CASE("Slurm host lists are counted and their first host found without expanding",
          "[collective][launch]") {
  CHECK(count_slurm_hosts("node[01-03,7],gpu5") == 5);
  CHECK(count_slurm_hosts("r[1-3]n[1-4]") == 12);
  CHECK(count_slurm_hosts("n[0-999999999999999]") == 1000000000000000ull);
  CHECK(count_slurm_hosts("a[0-999999999999999]b[0-999999999999999]") == SIZE_MAX);
  CHECK(first_slurm_host("node[01-03,7],gpu5") == "node01");
  CHECK(first_slurm_host("r[007-9]n[2,1]x") == "r007n2x");
  CHECK(first_slurm_host("gpu5") == "gpu5");
}

TEST_CASE("Slurm host lists larger than the cap are refused before expanding",
          "[collective][launch]") {
  CHECK(expand_slurm_hostlist("n[1-4]", 4).size() == 4);
  CHECK_THROWS_WITH(expand_slurm_hostlist("n[1-5]", 4), Catch::Contains("(more than 4 hosts)"));
  CHECK_THROWS_WITH(expand_slurm_hostlist("n[0-999999999999999]"),
                    Catch::Contains("(more than 1048576 hosts)"));
}

TEST_CASE("Malformed Slurm host lists are refused with the reason", "[collective][launch]") {
  CHECK(hostlist_error("node[01-03") ==
        "expected a Slurm host list like \"node[01-03,7],gpu5\", got \"node[01-03\" (the '[' at "
        "offset 4 is not closed)");
  CHECK_THAT(hostlist_error(""), Catch::Contains("(it is empty)"));
  CHECK_THAT(hostlist_error("a,,b"), Catch::Contains("(empty host name at offset 2)"));
  CHECK_THAT(hostlist_error("a,"), Catch::Contains("(empty host name at offset 2)"));
  CHECK_THAT(hostlist_error(",a"), Catch::Contains("(empty host name at offset 0)"));
  CHECK_THAT(hostlist_error("n[3-1]"),
             Catch::Contains("(the range \"3-1\" at offset 2 runs backwards)"));
  CHECK_THAT(hostlist_error("n[1-]"),
             Catch::Contains("expected a number or a range lo-hi at offset 2, got \"1-\""));
  CHECK_THAT(hostlist_error("n[]"), Catch::Contains("got \"\""));
  CHECK_THAT(hostlist_error("n[1,,2]"), Catch::Contains("at offset 4, got \"\""));
  CHECK_THAT(hostlist_error("n[a-b]"), Catch::Contains("got \"a-b\""));
  CHECK_THAT(hostlist_error("n[-1]"), Catch::Contains("got \"-1\""));
  CHECK_THAT(hostlist_error("n[1[2]]"), Catch::Contains("(the '[' at offset 1 is not closed)"));
  CHECK_THAT(hostlist_error("n]1"), Catch::Contains("(unexpected \"]\" at offset 1)"));
  CHECK_THAT(hostlist_error("node 1"), Catch::Contains("(unexpected \" \" at offset 4)"));
  CHECK_THAT(hostlist_error("n[1-9999999999999999999]"),
             Catch::Contains("got \"1-9999999999999999999\""));
}

TEST_CASE("Slurm tasks-per-node lists expand run lengths", "[collective][launch]") {
  CHECK(expand_slurm_tasks_per_node("2(x3),1") == std::vector<int>{2, 2, 2, 1});
  CHECK(expand_slurm_tasks_per_node("4") == std::vector<int>{4});
  CHECK(expand_slurm_tasks_per_node("1,2,3") == std::vector<int>{1, 2, 3});
  CHECK(expand_slurm_tasks_per_node("8(x1),3(x2)") == std::vector<int>{8, 3, 3});
  CHECK(expand_slurm_tasks_per_node("2147483647") == std::vector<int>{2147483647});
}

TEST_CASE("Malformed or oversized Slurm tasks-per-node lists are refused", "[collective][launch]") {
  CHECK(tasks_error("2(x0)") ==
        "expected a Slurm tasks-per-node list like \"2(x3),1\", got \"2(x0)\" (expected \"(xM)\" "
        "with M >= 1 after the count at offset 0, got \"(x0)\")");
  CHECK_THAT(tasks_error("0"),
             Catch::Contains("(expected a task count in [1, 2^31) at offset 0, got \"0\")"));
  CHECK_THAT(tasks_error(""), Catch::Contains("task count in [1, 2^31) at offset 0, got \"\""));
  CHECK_THAT(tasks_error("2,,1"), Catch::Contains("at offset 2, got \"\""));
  CHECK_THAT(tasks_error("2,"), Catch::Contains("at offset 2, got \"\""));
  CHECK_THAT(tasks_error("2(x3"), Catch::Contains("got \"(x3\""));
  CHECK_THAT(tasks_error("(x3)"), Catch::Contains("task count in [1, 2^31) at offset 0, got \"\""));
  CHECK_THAT(tasks_error("2(y3)"), Catch::Contains("got \"(y3)\""));
  CHECK_THAT(tasks_error("2(x3)x"), Catch::Contains("got \"(x3)x\""));
  CHECK_THAT(tasks_error("-2"), Catch::Contains("got \"-2\""));
  CHECK_THAT(tasks_error("2147483648"), Catch::Contains("got \"2147483648\""));
  CHECK_THAT(tasks_error("1(x5)", 4), Catch::Contains("(more than 4 nodes)"));
  CHECK_THAT(tasks_error("1(x2),1(x3)", 4), Catch::Contains("(more than 4 nodes)"));
  CHECK_THAT(tasks_error("1(x99999999999999999)"), Catch::Contains("(more than 1048576 nodes)"));
}
