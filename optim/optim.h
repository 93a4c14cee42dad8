#pragma once
// Umbrella header of the optim layer: gradients, optimizers, schedulers, accumulation, data
// parallelism and checkpoints.
#include "optim/adam.h"
#include "optim/checkpoint/caller_state.h"
#include "optim/checkpoint/checkpoint_error.h"
#include "optim/checkpoint/checkpoint_series.h"
#include "optim/checkpoint/training_record.h"
#include "optim/data_parallel.h"
#include "optim/gradients_accumulator.h"
#include "optim/gradients_params.h"
#include "optim/lr_scheduler.h"
#include "optim/optimizer.h"
#include "optim/sgd.h"
