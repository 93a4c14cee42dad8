#pragma once
// CallerState: the caller's own part of a TrainingRecord — its position (step, data position, the
// data-order generator, rank and world size) and any values it names itself.
//
//   CallerState caller{.step = step, .data_position = pos, .rng = shuffle.state()};
//   caller.set("epoch", epoch);                 // integers
//   caller.set("best_loss", best);              // doubles
//   caller.set("noise_rng", noise.state());     // generator states
//   caller.set("ema", ema_weights);             // tensors (copied to the host)
//   caller.set("tokenizer", bytes);             // strings, or any bytes
//   ...
//   const std::int64_t epoch = record.caller().get<std::int64_t>("epoch");
//   noise.set_state(record.caller().get<Generator::State>("noise_rng"));
#include <concepts>
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "optim/checkpoint/tensor_blob.h"
#include "tensor/core/error.h"
#include "tensor/core/tensor.h"
#include "tensor/random/generator.h"

namespace ruccl::optim {

/// One named caller value: an integer, a double, a string of bytes, a tensor (its host copy) or
/// a generator state. The alternatives' order is the file format's type tag.
using CallerValue = std::variant<std::int64_t, double, std::string, TensorBlob, Generator::State>;

/// The name of the type a CallerValue alternative holds: "int64", "double", "string", "tensor",
/// "generator state".
const char* caller_value_type(const CallerValue& value);

/// The caller's own training position and named values. See the file comment.
struct CallerState {
  std::int64_t step = 0;           ///< optimizer steps taken
  std::int64_t data_position = 0;  ///< where the data stream continues (sample, batch, byte...)
  Generator::State rng{};          ///< the data-order generator
  std::int64_t rank = 0;           ///< the rank that wrote the record (restore() checks it)
  std::int64_t world_size = 1;     ///< the world size of the run that wrote it (checked likewise)
  /// The caller's named values (set() and get() are the way in and out).
  std::map<std::string, CallerValue> values{};

  /// Stores `value` under `name` (non-empty), replacing any value of any type stored there.
  /// Integers are kept as int64 (ValueError for an unsigned one above INT64_MAX); a tensor is
  /// copied to the host (any device, any strides), so later changes to it are not recorded.
  template <std::integral T>
  requires(!std::same_as<T, bool>) void set(const std::string& name, T value) {
    if constexpr (std::is_unsigned_v<T> && sizeof(T) >= sizeof(std::int64_t)) {
      RUCCL_CHECK(value <= static_cast<T>(std::numeric_limits<std::int64_t>::max()), ValueError,
                  "CallerState::set: '", name, "': expected an integer <= INT64_MAX, got ", value);
    }
    put(name, static_cast<std::int64_t>(value));
  }
  void set(const std::string& name, double value) { put(name, value); }
  void set(const std::string& name, std::string value) { put(name, std::move(value)); }
  void set(const std::string& name, const char* value) { put(name, std::string(value)); }
  void set(const std::string& name, const Tensor& value);
  void set(const std::string& name, const Generator::State& value) { put(name, value); }
  /// A bool has no type of its own here: store it as an integer (0 or 1) on purpose.
  void set(const std::string& name, bool value) = delete;

  /// The value stored under `name`, as T: an integral type (from an int64 value; ValueError when
  /// it does not fit T), double or float, std::string, Tensor (on the host), Generator::State.
  /// ValueError naming the key when there is none (and the names there are), or naming the
  /// stored and the asked type when they differ.
  template <typename T>
  T get(const std::string& name) const {
    if constexpr (std::same_as<T, bool>) {
      static_assert(!std::same_as<T, bool>, "a bool is stored as an integer: get<std::int64_t>");
    } else if constexpr (std::integral<T>) {
      const std::int64_t v = std::get<std::int64_t>(find(name, 0, "int64"));
      RUCCL_CHECK(std::in_range<T>(v), ValueError, "CallerState::get: '", name, "' holds ", v,
                  ", which does not fit the integer type asked for");
      return static_cast<T>(v);
    } else if constexpr (std::floating_point<T>) {
      return static_cast<T>(std::get<double>(find(name, 1, "double")));
    } else if constexpr (std::same_as<T, std::string>) {
      return std::get<std::string>(find(name, 2, "string"));
    } else if constexpr (std::same_as<T, Tensor>) {
      return std::get<TensorBlob>(find(name, 3, "tensor")).to_tensor();
    } else if constexpr (std::same_as<T, Generator::State>) {
      return std::get<Generator::State>(find(name, 4, "generator state"));
    } else {
      static_assert(std::same_as<T, void>,
                    "CallerState::get: T is an integer, double, std::string, Tensor or "
                    "Generator::State");
    }
  }
  /// Whether a value is stored under `name`.
  bool contains(const std::string& name) const { return values.count(name) != 0; }
  /// Removes the value under `name` (nothing when there is none).
  void erase(const std::string& name) { values.erase(name); }

 private:
  void put(const std::string& name, CallerValue value);
  /// The value under `name`, which must hold alternative `index` (named `type` in errors).
  const CallerValue& find(const std::string& name, std::size_t index, const char* type) const;
};

}  // namespace ruccl::optim
