#pragma once
// Umbrella header of the collective layer.
#include "collective/call_options.h"
#include "collective/collective_error.h"
#include "collective/communicator.h"
#include "collective/in_process_group.h"
#include "collective/reduce_operation.h"
#include "collective/run_ranks.h"
#include "collective/session/collective_config.h"
#include "collective/session/session.h"
