#pragma once
// Umbrella header of the optim layer: gradients, optimizers, schedulers, accumulation, data
// parallelism and checkpoints.
#include "optim/adam.h"
#include "optim/caller_state.h"
#include "optim/checkpoint_error.h"
#include "optim/checkpoint_series.h"
#include "optim/data_parallel.h"
#include "optim/gradients_accumulator.h"
#include "optim/gradients_params.h"
#include "optim/lr_scheduler.h"
#include "optim/optimizer.h"
#include "optim/sgd.h"
#include "optim/training_record.h"
