#include "tools/ruccl_run/launcher_options.h"

#include <cmath>
#include <cstdlib>
#include <string_view>

#include "collective/common/collective_error.h"
#include "tensor/core/error.h"

namespace ruccl::run {
namespace {

int parse_int(const std::string& option, const std::string& value, long long lo, long long hi) {
  bool ok = !value.empty() && value.size() <= 10;
  long long n = 0;
  for (const char c : value) {
    ok = ok && c >= '0' && c <= '9';
    if (ok) n = n * 10 + (c - '0');
  }
  if (!ok || n < lo || n > hi) {
    throw UsageError(
        str(option, ": expected an integer in [", lo, ", ", hi, "], got \"", value, "\""));
  }
  return static_cast<int>(n);
}

double parse_seconds(const std::string& option, const std::string& value) {
  char* end = nullptr;
  const double s = value.empty() || value[0] == '-' || value[0] == '+' || value[0] == ' '
                       ? -1.0
                       : std::strtod(value.c_str(), &end);
  if (end == nullptr || *end != '\0' || !std::isfinite(s) || s < 0 || s > 86400) {
    throw UsageError(
        str(option, ": expected seconds in [0, 86400] (e.g. 10 or 0.5), got \"", value, "\""));
  }
  return s;
}

SessionId parse_id(const std::string& what, const std::string& value) {
  try {
    return parse_session_id(value, what);
  } catch (const CollectiveError& e) {
    throw UsageError(e.what());
  }
}

// The secret's messages name the file or variable and what was wrong, never the text.
template <typename Read>
JobSecret read_secret(Read&& read) {
  try {
    return read();
  } catch (const CollectiveError& e) {
    throw UsageError(e.what());
  }
}

}  // namespace

std::string usage_text() {
  return "usage: ruccl-run --nproc-per-node N [--nnodes M --node-rank K --master-addr A]\n"
         "                 [--master-port P] [--max-restarts R] [--secret-file F]\n"
         "                 [--grace-period S] [--] PROGRAM [ARGS...]\n"
         "       ruccl-run --new-session-id\n"
         "Starts N ranks of PROGRAM on this node (global rank = K * N + local rank) with\n"
         "RUCCL_RANK, RUCCL_WORLD_SIZE, ... and torchrun's RANK, WORLD_SIZE, ... set; prefixes\n"
         "their output lines with [rank]; forwards SIGINT, SIGTERM and SIGHUP; when a rank fails,\n"
         "ends the others and exits with its status (128 + signal), after restarting the whole "
         "job\n"
         "up to R times (RUCCL_RESTART_COUNT = 1, 2, ...).\n"
         "  --nproc-per-node N  ranks on this node, 1..1024 (required)\n"
         "  --nnodes M          nodes of the job (default 1); with M > 1 every node runs\n"
         "                      ruccl-run with --node-rank, --master-addr, the same\n"
         "                      RUCCL_SESSION_ID and the same --secret-file\n"
         "  --node-rank K       this node's index in [0, M)\n"
         "  --master-addr A     node 0's address, where rank 0 serves the rendezvous store\n"
         "                      (default 127.0.0.1 on one node)\n"
         "  --master-port P     its port (default: a free port on one node, 29500 on several)\n"
         "  --max-restarts R    restarts of the whole job after a failure (default 0)\n"
         "  --secret-file F     the job secret, 64 hex digits in a file only you can read (mode\n"
         "                      0600; e.g. (umask 077; openssl rand -hex 32 > F)); default\n"
         "                      RUCCL_JOB_SECRET, or a random one per attempt on one node. The\n"
         "                      ranks get it in RUCCL_JOB_SECRET (docs/security.md)\n"
         "  The session id comes from RUCCL_SESSION_ID (never the command line: ps shows it),\n"
         "  or is random per attempt on one node.\n"
         "  --grace-period S    seconds between SIGTERM and SIGKILL when ending ranks (default "
         "10)\n"
         "  --new-session-id    print a fresh random session id and exit\n";
}

LauncherOptions parse_launcher_options(int argc, char** argv,
                                       const std::optional<std::string>& env_session_id,
                                       const std::optional<std::string>& env_secret) {
  LauncherOptions o;
  bool have_nproc = false, have_node_rank = false;
  int i = 1;
  for (; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--") {
      ++i;
      break;
    }
    if (arg.size() < 2 || arg[0] != '-') break;  // PROGRAM
    if (arg == "-h" || arg == "--help") {
      o.help = true;
      return o;
    }
    if (arg.rfind("--", 0) != 0) throw UsageError(str("unknown option ", arg));
    std::string name = arg;
    std::optional<std::string> value;
    if (const std::size_t eq = arg.find('='); eq != std::string::npos) {
      name = arg.substr(0, eq);
      value = arg.substr(eq + 1);
    }
    for (std::size_t c = 2; c < name.size(); ++c) {
      if (name[c] == '_') name[c] = '-';  // torchrun spells --nproc_per_node too
    }
    if (name == "--new-session-id") {
      if (value) throw UsageError("--new-session-id: expected no value, got \"" + *value + "\"");
      o.new_session_id = true;
      continue;
    }
    if (name == "--session-id") {
      throw UsageError(
          "--session-id: refused: a session id on the command line is in every process listing "
          "(ps, /proc/<pid>/cmdline); set RUCCL_SESSION_ID in ruccl-run's environment instead, "
          "and give the job a secret with --secret-file F (docs/security.md)");
    }
    static const char* const kValued[] = {"--nproc-per-node", "--nnodes",      "--node-rank",
                                          "--master-addr",    "--master-port", "--max-restarts",
                                          "--secret-file",    "--grace-period"};
    bool known = false;
    for (const char* k : kValued) known = known || name == k;
    if (!known) throw UsageError(str("unknown option ", name));
    if (!value) {
      if (i + 1 >= argc) throw UsageError(str(name, ": expected a value, got nothing"));
      value = argv[++i];
    }
    if (name == "--nproc-per-node") {
      o.nproc_per_node = parse_int(name, *value, 1, 1024);
      have_nproc = true;
    } else if (name == "--nnodes") {
      o.nnodes = parse_int(name, *value, 1, 65536);
    } else if (name == "--node-rank") {
      o.node_rank = parse_int(name, *value, 0, 65535);
      have_node_rank = true;
    } else if (name == "--master-addr") {
      if (value->empty())
        throw UsageError("--master-addr: expected a host name or address, got \"\"");
      o.master_addr = *value;
    } else if (name == "--master-port") {
      o.master_port = parse_int(name, *value, 1, 65535);
    } else if (name == "--max-restarts") {
      o.max_restarts = parse_int(name, *value, 0, 1000000);
    } else if (name == "--secret-file") {
      const std::string path = *value;
      o.secret = read_secret([&] { return read_job_secret_file(path); });
    } else {
      o.grace_period_s = parse_seconds(name, *value);
    }
  }
  if (o.new_session_id) {
    if (i < argc || have_nproc) throw UsageError("--new-session-id: expected no other arguments");
    return o;
  }
  for (; i < argc; ++i) o.command.emplace_back(argv[i]);
  if (!have_nproc)
    throw UsageError("--nproc-per-node: expected the number of ranks to start, got nothing");
  if (o.command.empty()) throw UsageError("PROGRAM: expected the program to run, got nothing");
  if (o.node_rank >= o.nnodes) {
    throw UsageError(
        str("--node-rank: expected an integer in [0, --nnodes=", o.nnodes, "), got ", o.node_rank));
  }
  if (static_cast<long long>(o.nnodes) * o.nproc_per_node > kMaxLaunchWorldSize) {
    throw UsageError(str("--nnodes x --nproc-per-node: expected at most ", kMaxLaunchWorldSize,
                         " ranks, got ", static_cast<long long>(o.nnodes) * o.nproc_per_node));
  }
  if (env_session_id) o.session_id = parse_id("RUCCL_SESSION_ID", *env_session_id);
  if (!o.secret && env_secret) {
    o.secret = read_secret([&] { return parse_job_secret(*env_secret, "RUCCL_JOB_SECRET"); });
  }
  if (o.nnodes > 1) {
    if (!have_node_rank)
      throw UsageError(str("--node-rank: expected this node's index in [0, ", o.nnodes,
                           ") with --nnodes ", o.nnodes, ", got nothing"));
    if (o.master_addr.empty())
      throw UsageError(
          str("--master-addr: expected node 0's address (where rank 0 serves the rendezvous store) "
              "with --nnodes ",
              o.nnodes, ", got nothing"));
    if (!o.session_id) {
      throw UsageError(str(
          "RUCCL_SESSION_ID: expected the session id every node shares with --nnodes ", o.nnodes,
          ", got nothing: run `ruccl-run --new-session-id` once and set its output as "
          "RUCCL_SESSION_ID in ruccl-run's environment on every node"));
    }
    if (!o.secret) {
      throw UsageError(
          str("--secret-file: expected the job secret every node shares with --nnodes ", o.nnodes,
              ", got nothing: write one with (umask 077; openssl rand -hex 32 > F), copy F to "
              "every node and pass --secret-file F on each (or set RUCCL_JOB_SECRET)"));
    }
  }
  return o;
}

}  // namespace ruccl::run
