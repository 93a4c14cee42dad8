#include "optim/checkpoint/training_record.h"

#include <algorithm>
#include <cereal/archives/portable_binary.hpp>
#include <cereal/types/array.hpp>
#include <cereal/types/map.hpp>
#include <cereal/types/optional.hpp>
#include <cereal/types/string.hpp>
#include <cereal/types/vector.hpp>
#include <map>
#include <set>
#include <sstream>
#include <utility>
#include <variant>

#include "autodiff/grad_mode.h"
#include "optim/checkpoint/checkpoint_error.h"
#include "optim/checkpoint/record_file.h"
#include "optim/hyper_parameters.h"
#include "tensor/serialize/bounded_input_archive.h"

namespace ruccl::optim {

// Archiving of the record's plain structs (kept here: they are the file format).
template <class Archive>
void archive_generator_state(Archive& archive, Generator::State& g) {
  archive(g.seed, g.counter, g.buffered, g.block, g.has_spare_normal, g.spare_normal);
}

/// A default value of the CallerValue alternative `index` (a file's type tag); false when there is
/// none.
template <std::size_t... I>
bool emplace_alternative(CallerValue& value, std::size_t index, std::index_sequence<I...>) {
  return ((index == I ? (value.emplace<I>(), true) : false) || ...);
}

/// The caller's named values: a count, then per value its name, its type tag (the CallerValue
/// alternative's index) and its payload.
template <class Archive>
void archive_caller_values(Archive& archive, std::map<std::string, CallerValue>& values) {
  const auto payload = [&archive](auto& v) {
    if constexpr (std::is_same_v<std::decay_t<decltype(v)>, Generator::State>) {
      archive_generator_state(archive, v);
    } else {
      archive(v);
    }
  };
  if constexpr (Archive::is_saving::value) {
    archive(cereal::make_size_tag(static_cast<cereal::size_type>(values.size())));
    for (auto& [name, value] : values) {
      std::string key = name;
      archive(key, static_cast<std::uint8_t>(value.index()));
      std::visit(payload, value);
    }
  } else {
    cereal::size_type count = 0;
    archive(cereal::make_size_tag(count));  // bounded by the bytes left (BoundedInputArchive)
    values.clear();
    for (cereal::size_type i = 0; i < count; ++i) {
      std::string name;
      std::uint8_t tag = 0;
      archive(name, tag);
      CallerValue value;
      constexpr std::size_t kTypes = std::variant_size_v<CallerValue>;
      if (!emplace_alternative(value, tag, std::make_index_sequence<kTypes>())) {
        throw cereal::Exception(str("the caller value '", name.substr(0, 256),
                                    "': expected a type tag below ", kTypes, ", got ", int{tag}));
      }
      std::visit(payload, value);
      if (!values.emplace(std::move(name), std::move(value)).second) {
        throw cereal::Exception("the caller values hold one name twice");
      }
    }
  }
}

template <class Archive>
void serialize(Archive& archive, CallerState& c) {
  archive(c.step, c.data_position, c.rank, c.world_size);
  archive_generator_state(archive, c.rng);
  archive_caller_values(archive, c.values);
}

template <class Archive>
void serialize(Archive& archive, RecordedGenerator& g) {
  archive(g.path);
  archive_generator_state(archive, g.state);
}

template <class Archive>
void serialize(Archive& archive, RecordedParam& p) {
  archive(p.path, p.id, p.trainable, p.value);
}

namespace {

/// Identifies the payload inside the frame (the frame's magic says "ruCCL checkpoint").
constexpr const char* kPayloadKind = "ruccl.optim.TrainingRecord";

bool valid_rank_and_world(std::int64_t rank, std::int64_t world_size) {
  return world_size >= 1 && rank >= 0 && rank < world_size;
}

/// Checks every tensor of a parsed record (dtype, shape, byte count) without allocating any.
void validate_blobs(const std::vector<RecordedParam>& params,
                    const std::optional<OptimizerState>& optimizer,
                    const std::optional<AccumulatorState>& accumulator) {
  for (const RecordedParam& p : params) {
    try {
      p.value.validate();
    } catch (const CheckpointError& e) {
      throw CheckpointError(
          str("parameter '", p.path.substr(0, 256), "' (ParamId ", p.id, "): ", e.what()));
    }
  }
  if (optimizer.has_value()) {
    for (const auto& [id, slot] : optimizer->slots) {
      try {
        for (const TensorBlob& b : slot.buffers) b.validate();
      } catch (const CheckpointError& e) {
        throw CheckpointError(str("the optimizer state of ParamId ", id, ": ", e.what()));
      }
    }
  }
  if (accumulator.has_value()) {
    for (const auto& [id, blob] : accumulator->grads) {
      try {
        blob.validate();
      } catch (const CheckpointError& e) {
        throw CheckpointError(str("the accumulated gradient of ParamId ", id, ": ", e.what()));
      }
    }
  }
}

}  // namespace

TrainingRecord TrainingRecord::capture(const nn::Module& model, const Optimizer* optimizer,
                                       const LrScheduler* scheduler,
                                       const GradientsAccumulator* accumulator,
                                       const CallerState& caller) {
  RUCCL_CHECK(valid_rank_and_world(caller.rank, caller.world_size), ValueError,
              "TrainingRecord::capture: expected a world size >= 1 and a rank in [0, world size), "
              "got rank ",
              caller.rank, " of world size ", caller.world_size);
  TrainingRecord r;
  for (const auto& [path, p] : model.named_parameters()) {
    r.params_.push_back({path, p.id(), p.trainable(), TensorBlob::from_tensor(p.value())});
  }
  for (const auto& [path, g] : model.named_generators())
    r.generators_.push_back({path, g->state()});
  r.buffers_ = capture_buffers(model);
  if (optimizer != nullptr) r.optimizer_ = optimizer->state();
  if (scheduler != nullptr) r.scheduler_ = scheduler->state();
  if (accumulator != nullptr) r.accumulator_ = accumulator->state();
  r.caller_ = caller;
  return r;
}

std::string TrainingRecord::serialize_payload() const {
  std::ostringstream out;
  {
    cereal::PortableBinaryOutputArchive archive(out);
    archive(std::string(kPayloadKind), params_, generators_, optimizer_, scheduler_, accumulator_,
            caller_);
    // Buffers come last, and only when there are some: a model without buffers writes the bytes
    // it wrote before records held buffers, and a record ending after the caller state has none.
    if (!buffers_.empty()) archive(buffers_);
  }
  return out.str();
}

TrainingRecord TrainingRecord::parse_payload(const std::string& payload,
                                             const std::string& origin) {
  TrainingRecord r;
  std::string kind;
  try {
    BoundedInputArchive archive(payload);
    archive(kind);
    if (kind != kPayloadKind) {
      throw CheckpointError(str("checkpoint ", origin, ": expected a '", kPayloadKind,
                                "' payload, got '", kind.substr(0, 64), "'"));
    }
    archive(r.params_, r.generators_, r.optimizer_, r.scheduler_, r.accumulator_, r.caller_);
    if (archive.remaining() != 0) archive(r.buffers_);
    if (archive.remaining() != 0) {
      throw CheckpointError(str("checkpoint ", origin, ": ", archive.remaining(),
                                " unexpected bytes after the record"));
    }
  } catch (const CheckpointError&) {
    throw;
  } catch (const std::exception& e) {  // cereal::Exception, std::bad_alloc, length_error...
    throw CheckpointError(str("checkpoint ", origin, ": malformed record (", e.what(), ")"));
  }
  // Validate every tensor now, so restore() cannot fail half-way on a bad blob. Whatever goes
  // wrong while checking them still names the origin. (The caller state's rank and world size
  // are not checked here: files whose writer set only the rank, when it was informative, still
  // load; restore() refuses them unless told otherwise.)
  try {
    validate_blobs(r.params_, r.optimizer_, r.accumulator_);
    validate_buffers(r.buffers_);
    Generator probe(0);
    probe.set_state(r.caller_.rng);  // the caller's set_state must not be the first to refuse
    for (const auto& [name, value] : r.caller_.values) {
      try {
        if (const auto* blob = std::get_if<TensorBlob>(&value)) blob->validate();
        if (const auto* state = std::get_if<Generator::State>(&value)) probe.set_state(*state);
      } catch (const std::exception& e) {
        throw CheckpointError(str("the caller value '", name.substr(0, 256), "': ", e.what()));
      }
    }
    for (const RecordedGenerator& g : r.generators_) {
      try {
        probe.set_state(g.state);  // nor restore()'s
      } catch (const std::exception& e) {
        throw CheckpointError(str("generator '", g.path.substr(0, 256), "': ", e.what()));
      }
    }
  } catch (const std::exception& e) {
    throw CheckpointError(str("checkpoint ", origin, ": ", e.what()));
  }
  return r;
}

void TrainingRecord::save(const std::filesystem::path& path) const {
  write_record_file(path, serialize_payload());
}

TrainingRecord TrainingRecord::load(const std::filesystem::path& path) {
  TrainingRecord r = parse_payload(read_record_file(path), str(path));  // quoted, as the frame
  r.source_ = path;
  return r;
}

std::string TrainingRecord::where() const {
  return source_.empty() ? std::string("TrainingRecord::restore: ")
                         : str("TrainingRecord::restore: checkpoint ", source_, ": ");
}

void TrainingRecord::check_rank_and_world(const RestoreOptions& options) const {
  RUCCL_CHECK(valid_rank_and_world(options.rank, options.world_size), ValueError,
              "TrainingRecord::restore: expected a world size >= 1 and a rank in [0, world size), "
              "got rank ",
              options.rank, " of world size ", options.world_size);
  if (options.allow_other_rank_or_world) return;
  RUCCL_CHECK(caller_.rank == options.rank && caller_.world_size == options.world_size,
              CheckpointError, where(), "expected world size ", caller_.world_size, " rank ",
              caller_.rank, " (the record's), got world size ", options.world_size, " rank ",
              options.rank,
              "; set RestoreOptions::allow_other_rank_or_world to restore it elsewhere");
}

void TrainingRecord::restore(nn::Module& model, Optimizer* optimizer, LrScheduler* scheduler,
                             GradientsAccumulator* accumulator,
                             const RestoreOptions& options) const {
  check_rank_and_world(options);
  const std::string at = where();
  // 1. Check everything before changing anything.
  std::map<std::uint64_t, const RecordedParam*> recorded;
  for (const RecordedParam& p : params_) recorded.emplace(p.id, &p);
  const auto named = model.named_parameters();
  std::map<std::uint64_t, nn::Param> live;
  for (const auto& [path, p] : named) {
    const auto it = recorded.find(p.id());
    if (it == recorded.end()) {
      const std::string& wanted = path;  // clang 14 cannot capture a structured binding
      const auto same_path =
          std::find_if(params_.begin(), params_.end(),
                       [&](const RecordedParam& rp) { return rp.path == wanted; });
      if (same_path != params_.end()) {
        throw CheckpointError(str(at, "the model's parameter '", path, "' (ParamId ", p.id(),
                                  ") is not in the record, which has '", path, "' under ParamId ",
                                  same_path->id,
                                  ": the model's ParamIds differ from those it was saved with. "
                                  "Build it with the same code (ParamIds come from the "
                                  "parameters' paths) or give it the saved ids "
                                  "(Module::assign_param_ids, Param::set_id)"));
      }
      throw CheckpointError(str(at, "the model's parameter '", path, "' (ParamId ", p.id(),
                                ") is not in the record"));
    }
    const RecordedParam& rp = *it->second;
    const Shape shape = rp.value.shape_value();
    const DType dtype = rp.value.dtype_value();
    RUCCL_CHECK(shape == p.shape(), CheckpointError, at, "parameter '", path, "' (ParamId ", p.id(),
                "): expected shape ", p.shape(), ", the record has ", shape);
    RUCCL_CHECK(dtype == p.dtype(), CheckpointError, at, "parameter '", path, "' (ParamId ", p.id(),
                "): expected dtype ", p.dtype(), ", the record has ", dtype);
    RUCCL_CHECK(rp.trainable == p.trainable(), CheckpointError, at, "parameter '", path,
                "' (ParamId ", p.id(), ") is ", p.trainable() ? "trainable" : "frozen",
                " but the record has it ", rp.trainable ? "trainable" : "frozen");
    live.emplace(p.id(), p);
  }
  for (const RecordedParam& rp : params_) {
    RUCCL_CHECK(live.count(rp.id) != 0, CheckpointError, at, "the record's parameter '", rp.path,
                "' (ParamId ", rp.id, ") is not in the model");
  }
  std::map<std::string, const RecordedGenerator*> recorded_generators;
  for (const RecordedGenerator& g : generators_) recorded_generators.emplace(g.path, &g);
  const auto generators = model.named_generators();
  std::set<std::string> live_generators;
  for (const auto& [path, g] : generators) {
    RUCCL_CHECK(recorded_generators.count(path) != 0, CheckpointError, at,
                "the model's generator '", path,
                "' is not in the record (the model has random modules, such as Dropout, that the "
                "saved one did not have)");
    live_generators.insert(path);
  }
  for (const RecordedGenerator& g : generators_) {
    RUCCL_CHECK(live_generators.count(g.path) != 0, CheckpointError, at, "the record's generator '",
                g.path,
                "' is not in the model (the saved model had random modules, such as "
                "Dropout, that this one does not have)");
  }
  const std::vector<std::pair<std::string, Tensor>> buffers =
      buffers_to_restore(buffers_, model, at);
  if (optimizer != nullptr) {
    RUCCL_CHECK(optimizer_.has_value(), CheckpointError, at,
                "an optimizer was passed but the record holds no optimizer state");
    RUCCL_CHECK(optimizer_->kind == optimizer->kind(), CheckpointError, at,
                "expected an optimizer of kind '", optimizer_->kind,
                "' (the record's), got one of kind '", optimizer->kind(), "'");
    RUCCL_CHECK(optimizer_->config == optimizer->config(), CheckpointError, at, "the '",
                optimizer->kind(),
                "' optimizer passed has other hyper-parameters than the "
                "record's: ",
                hyper_parameter_differences(optimizer->config_names(), optimizer_->config,
                                            optimizer->config()));
    for (const auto& [id, slot] : optimizer_->slots) {
      const auto it = live.find(id);
      RUCCL_CHECK(it != live.end(), CheckpointError, at, "the optimizer state has ParamId ", id,
                  ", which is not a parameter of the model");
      for (const TensorBlob& b : slot.buffers) {
        RUCCL_CHECK(b.shape_value() == it->second.shape(), CheckpointError, at,
                    "the optimizer state of ParamId ", id, " has shape ", b.shape_value(),
                    ", expected ", it->second.shape());
      }
    }
  }
  if (scheduler != nullptr) {
    RUCCL_CHECK(scheduler_.has_value(), CheckpointError, at,
                "a scheduler was passed but the record holds no scheduler state");
    RUCCL_CHECK(scheduler_->kind == scheduler->kind(), CheckpointError, at,
                "expected a scheduler of kind '", scheduler_->kind,
                "' (the record's), got one of kind '", scheduler->kind(), "'");
    RUCCL_CHECK(scheduler_->config == scheduler->config(), CheckpointError, at, "the '",
                scheduler->kind(),
                "' scheduler passed has another configuration than the "
                "record's: ",
                hyper_parameter_differences(scheduler->config_names(), scheduler_->config,
                                            scheduler->config()));
  }
  if (accumulator != nullptr) {
    RUCCL_CHECK(accumulator_.has_value(), CheckpointError, at,
                "an accumulator was passed but the record holds no accumulator state");
    for (const auto& [id, blob] : accumulator_->grads) {
      const auto it = live.find(id);
      RUCCL_CHECK(it != live.end(), CheckpointError, at, "the accumulated gradients have ParamId ",
                  id, ", which is not a parameter of the model");
      RUCCL_CHECK(blob.shape_value() == it->second.shape(), CheckpointError, at,
                  "the accumulated gradient of ParamId ", id, " has shape ", blob.shape_value(),
                  ", expected ", it->second.shape());
    }
  }
  // 2. Build every new value, then commit.
  std::vector<std::pair<nn::Param, Tensor>> values;
  for (auto& [id, p] : live) {
    values.emplace_back(p, recorded.at(id)->value.to_tensor(p.value().device()));
  }
  autodiff::NoGradGuard no_grad;
  // The states' own load_state checks more (buffer counts, dtypes); should one refuse, the ones
  // already loaded get their previous state back, so a failed restore changes nothing.
  const Device device = named.empty() ? Device::cpu() : named.front().second.value().device();
  const std::optional<OptimizerState> old_optimizer =
      optimizer != nullptr ? std::optional(optimizer->state()) : std::nullopt;
  const std::optional<SchedulerState> old_scheduler =
      scheduler != nullptr ? std::optional(scheduler->state()) : std::nullopt;
  int loaded = 0;
  try {
    if (optimizer != nullptr) optimizer->load_state(*optimizer_);
    ++loaded;
    if (scheduler != nullptr) scheduler->load_state(*scheduler_);
    ++loaded;
    if (accumulator != nullptr) accumulator->load_state(*accumulator_, device);
  } catch (...) {
    if (loaded >= 2 && scheduler != nullptr) scheduler->load_state(*old_scheduler);
    if (loaded >= 1 && optimizer != nullptr) optimizer->load_state(*old_optimizer);
    throw;
  }
  for (auto& [p, v] : values) p.set_value(v);
  for (const auto& [path, b] : buffers) model.set_buffer(path, b);
  for (const auto& [path, g] : generators) g->set_state(recorded_generators.at(path)->state);
}

}  // namespace ruccl::optim
