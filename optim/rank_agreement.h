#pragma once
// Agreement between ranks for the training glue (GradientsParams, DataParallel): every rank
// publishes a small summary of what it is about to do; every rank sees every summary, so a
// mismatch or a local problem is detected identically on all ranks and each raises the same
// CollectiveError, before any gradient or parameter moves. The communicator stays usable.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "collective/communicator.h"

namespace ruccl::optim {

/// How to fix replicas whose ParamIds differ (appended to the messages that report it).
inline constexpr const char* kParamIdAdvice =
    "ParamIds come from the parameters' paths, so replicas built by the same code agree; they "
    "differ when set by hand (Param(id, ...), set_id, assign_param_ids), taken by Param::id() "
    "before the model listed its parameters, or fixed by listing a sub-module on its own first "
    "(docs/training.md, ParamIds). Build every rank's replica with the same code, or call "
    "model.assign_param_ids(1) on every rank";

/// all_gather of a fixed number of int64 words from every rank: result[r] is rank r's `words`.
/// Every rank must pass the same number of words.
std::vector<std::vector<std::int64_t>> all_gather_words(Communicator& comm,
                                                        const std::vector<std::int64_t>& words,
                                                        const char* label);

/// all_gather of strings of any length (two collectives: lengths, then padded bytes).
std::vector<std::string> all_gather_strings(Communicator& comm, const std::string& text,
                                            const char* label);

/// Appends `value`'s bytes to `out` (for building binary descriptions to hash and compare).
void append_word(std::string& out, std::int64_t value);

}  // namespace ruccl::optim
