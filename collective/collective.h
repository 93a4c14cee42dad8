#pragma once
// Umbrella header of the collective layer.
#include "collective/common/collective_error.h"
#include "collective/common/reduce_operation.h"
#include "collective/communicator.h"
#include "collective/host_hierarchy.h"
#include "collective/in_process_group.h"
#include "collective/mesh.h"
#include "collective/protocol/call_options.h"
#include "collective/registered/collective_config.h"
#include "collective/registered/register_peer.h"
#include "collective/run_ranks.h"
#include "collective/sim_group.h"
