// Communicator::from_env and the choice it makes: which engine joins the job the environment
// describes (RUCCL_ENGINE; an MPI launcher's variables), and the engines other layers register
// for it (the CUDA layer's "nccl").
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

#include "collective/common/env.h"
#include "collective/communicator.h"
#include "collective/tcp_group.h"
#include "ruccl/config.h"
#if RUCCL_WITH_MPI
#include "collective/mpi_group.h"
#endif

namespace ruccl {
namespace {

std::mutex env_engines_mutex;
std::map<std::string, StoreEngineFactory>& env_engines() {
  static std::map<std::string, StoreEngineFactory> engines;
  return engines;
}

StoreEngineFactory env_engine(const std::string& name) {
  std::lock_guard<std::mutex> lock(env_engines_mutex);
  const auto it = env_engines().find(name);
  return it == env_engines().end() ? StoreEngineFactory{} : it->second;
}

}  // namespace

void register_env_engine(const std::string& name, StoreEngineFactory engine) {
  std::lock_guard<std::mutex> lock(env_engines_mutex);
  env_engines()[name] = std::move(engine);
}

bool mpi_engine_from_env() {
  const EnvReader env;
  const std::string asked = env.get("RUCCL_ENGINE").value_or("");
  if (!asked.empty() && asked != "mpi" && asked != "tcp" && env_engine(asked)) return false;
  if (asked == "nccl") {
    throw CollectiveError(CollectiveErrorKind::InvalidConfig,
                          "RUCCL_ENGINE: expected \"tcp\" or \"mpi\" in this build, got "
                          "\"nccl\" (ruCCL was built without CUDA, or the CUDA layer is not "
                          "installed: configure with -DRUCCL_WITH_CUDA=ON)");
  }
  if (!asked.empty() && asked != "mpi" && asked != "tcp") {
    env.fail_value("RUCCL_ENGINE", "\"mpi\" or \"tcp\"", asked);
  }
  if (!RUCCL_WITH_MPI && asked == "mpi") {
    throw CollectiveError(CollectiveErrorKind::InvalidConfig,
                          "RUCCL_ENGINE: expected \"tcp\" in this build, got \"mpi\" (ruCCL was "
                          "built without MPI: install libopenmpi-dev and configure with "
                          "-DRUCCL_WITH_MPI=ON)");
  }
  const bool mpi_launcher =
      env.first_set({"OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "PMIX_RANK"}) != nullptr;
  return RUCCL_WITH_MPI && (asked == "mpi" || (asked.empty() && mpi_launcher));
}

Communicator Communicator::from_env(Device device, CommunicatorOptions options) {
#if RUCCL_WITH_MPI
  if (mpi_engine_from_env()) return MpiGroup::world(device, std::move(options));
#else
  (void)mpi_engine_from_env();  // a bad RUCCL_ENGINE is an error here too
#endif
  if (const std::optional<std::string> asked = EnvReader().get("RUCCL_ENGINE")) {
    if (StoreEngineFactory engine = env_engine(*asked)) {
      return TcpGroup::from_env(device, std::move(options), {}, engine);
    }
  }
  return TcpGroup::from_env(device, std::move(options));
}

}  // namespace ruccl
