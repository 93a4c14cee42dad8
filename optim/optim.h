#pragma once
// Umbrella header of the optim layer: gradients, optimizers, schedulers, accumulation, data
// parallelism, checkpoints, and the pieces of a training program (a data-parallel classifier
// trainer, the IDX dataset reader, the progress line, launcher detection), with the layers under
// it (autodiff/autodiff.h: nn::Sequential, the losses, Var; tensor/tensor.h;
// collective/collective.h).
#include "autodiff/autodiff.h"
#include "collective/collective.h"
#include "optim/adam.h"
#include "optim/checkpoint/agreed_load.h"
#include "optim/checkpoint/caller_state.h"
#include "optim/checkpoint/checkpoint_error.h"
#include "optim/checkpoint/checkpoint_series.h"
#include "optim/checkpoint/sharded_checkpoint.h"
#include "optim/checkpoint/training_record.h"
#include "optim/classifier_trainer.h"
#include "optim/clip_grad_norm.h"
#include "optim/data/idx_dataset.h"
#include "optim/data_parallel.h"
#include "optim/gradients_accumulator.h"
#include "optim/gradients_params.h"
#include "optim/lr_scheduler.h"
#include "optim/optimizer.h"
#include "optim/progress_line.h"
#include "optim/sgd.h"
#include "optim/zero_checkpoint.h"
