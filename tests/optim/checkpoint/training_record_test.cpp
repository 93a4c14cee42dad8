// TrainingRecord: bit-for-bit resume, damaged files refused, mismatches refused before anything
// changes.
#include <catch2/catch.hpp>

#include <cstring>

#include <filesystem>
#include <fstream>

#include "autodiff/nn/activation.h"
#include "autodiff/nn/dropout.h"
#include "autodiff/nn/linear.h"
#include "autodiff/nn/loss.h"
#include "autodiff/nn/sequential.h"
#include "optim/adam.h"
#include "optim/checkpoint/checkpoint_error.h"
#include "optim/checkpoint/record_file.h"
#include "optim/checkpoint/training_record.h"
#include "optim/sgd.h"
#include "tests/optim/scratch_dir.h"
#include "tests/support/tensor_matchers.h"

using namespace ruccl;
using namespace ruccl::optim;
using autodiff::Var;
using ruccl::optim::test_support::ScratchDir;
using ruccl::testing::TensorEqual;

namespace {

std::shared_ptr<nn::Sequential> make_mlp(std::uint64_t seed, std::int64_t hidden = 5) {
  Generator gen(seed);
  auto model = std::make_shared<nn::Sequential>(std::vector<std::shared_ptr<nn::Module>>{
      std::make_shared<nn::Linear>(4, hidden, gen), std::make_shared<nn::ReLU>(),
      std::make_shared<nn::Linear>(hidden, 2, gen)});
  model->assign_param_ids(1);
  return model;
}

/// Everything a run carries: model, AdamW, warm-up + cosine schedule, an accumulator of two
/// micro-batches per step, and a data generator.
struct Run {
  std::shared_ptr<nn::Sequential> model;
  AdamW optimizer{AdamWOptions{0.9, 0.99, 1e-8, 0.05}};
  WarmupCosineLr schedule{0.01, 2, 10};
  GradientsAccumulator accumulator;
  Generator data{2024};
  std::int64_t micro = 0;  // micro-batches consumed
  std::int64_t steps = 0;

  explicit Run(std::uint64_t init_seed) : model(make_mlp(init_seed)) {}

  /// Consumes `n` micro-batches; every second one ends an optimizer step.
  void train(int n) {
    for (int i = 0; i < n; ++i) {
      const Tensor x = Tensor::randn({3, 4}, data);
      const Tensor y = Tensor::randn({3, 2}, data);
      model->zero_grad();
      nn::mse_loss(model->forward(Var(x)), Var(y)).backward();
      accumulator.accumulate(GradientsParams::from_module(*model), 3, LossReduction::Mean);
      if (++micro % 2 == 0) {
        optimizer.step(schedule.step(), *model, accumulator.mean());
        ++steps;
      }
    }
  }
  TrainingRecord capture() const {
    return TrainingRecord::capture(*model, &optimizer, &schedule, &accumulator,
                                   {.step = steps, .data_position = micro, .rng = data.state()});
  }
  void restore(const TrainingRecord& record) {
    record.restore(*model, &optimizer, &schedule, &accumulator);
    steps = record.caller().step;
    micro = record.caller().data_position;
    data.set_state(record.caller().rng);
  }
};

std::string read_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_bytes(const std::filesystem::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

/// The little-endian bytes of 64-bit words, as PortableBinaryOutputArchive writes them (the
/// payload's byte-order flag says little endian on the hosts we build for).
std::string words(std::initializer_list<std::int64_t> values) {
  std::string out;
  for (std::int64_t v : values) {
    for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
  }
  return out;
}

/// `payload` with its `nth` (0-based) occurrence of `from` replaced by `to` (same length).
std::string replace_nth(std::string payload, const std::string& from, const std::string& to,
                        int nth) {
  REQUIRE(from.size() == to.size());
  std::size_t at = payload.find(from);
  for (int i = 0; i < nth && at != std::string::npos; ++i) at = payload.find(from, at + 1);
  REQUIRE(at != std::string::npos);
  payload.replace(at, from.size(), to);
  return payload;
}

}  // namespace

TEST_CASE("resuming from a TrainingRecord reproduces the uninterrupted run bit for bit",
          "[optim]") {
  ScratchDir dir;
  Run straight(1);
  straight.train(11);

  // Interrupted after 5 micro-batches: mid-step, so pending accumulated gradients are saved.
  {
    Run first(1);
    first.train(5);
    CHECK(first.accumulator.micro_batches() == 1);
    first.capture().save(dir / "rank0.ckpt");
  }
  Run resumed(999);  // a different initialisation: everything must come from the file
  const TrainingRecord record = TrainingRecord::load(dir / "rank0.ckpt");
  CHECK(record.source() == dir / "rank0.ckpt");
  CHECK(record.caller().step == 2);
  CHECK(record.caller().data_position == 5);
  resumed.restore(record);
  resumed.train(6);

  CHECK(resumed.steps == straight.steps);
  CHECK(resumed.schedule.steps() == straight.schedule.steps());
  const auto a = straight.model->parameters();
  const auto b = resumed.model->parameters();
  REQUIRE(a.size() == b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    REQUIRE_THAT(b[i].value(), TensorEqual(a[i].value()));
  }
  const OptimizerState sa = straight.optimizer.state();
  const OptimizerState sb = resumed.optimizer.state();
  for (const auto& [id, slot] : sa.slots) {
    CHECK(sb.slots.at(id).steps == slot.steps);
    CHECK(sb.slots.at(id).buffers[1].bytes == slot.buffers[1].bytes);
  }
}

TEST_CASE("a record of a model without explicit ids restores into the same model built again",
          "[optim]") {
  // ParamIds come from the paths, so a model built again by the same code (here after other
  // parameters were made, as in a later run or another rank) has the ids of the saved one.
  const auto build = [](std::uint64_t seed) {
    Generator gen(seed);
    return std::make_shared<nn::Sequential>(std::vector<std::shared_ptr<nn::Module>>{
        std::make_shared<nn::Linear>(4, 5, gen), std::make_shared<nn::ReLU>(),
        std::make_shared<nn::Linear>(5, 2, gen)});
  };
  ScratchDir dir;
  auto saved = build(1);
  Adam adam;
  nn::mse_loss(saved->forward(Var(Tensor::ones({3, 4}))), Var(Tensor::zeros({3, 2}))).backward();
  adam.step(0.01, *saved, GradientsParams::from_module(*saved));
  TrainingRecord::capture(*saved, &adam).save(dir / "r.ckpt");

  (void)build(2)->parameters();              // other models made in between,
  (void)nn::Param(Tensor::zeros({1})).id();  // and a counter id taken, change nothing
  auto again = build(3);
  Adam adam_again;
  TrainingRecord::load(dir / "r.ckpt").restore(*again, &adam_again);
  const auto a = saved->named_parameters();
  const auto b = again->named_parameters();
  REQUIRE(a.size() == b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    CHECK(b[i].second.id() == a[i].second.id());
    CHECK(b[i].second.id() == nn::param_id_for_path(b[i].first));
    CHECK_THAT(b[i].second.value(), TensorEqual(a[i].second.value()));
    CHECK(adam_again.steps(b[i].second.id()) == 1);
  }
}

TEST_CASE("a damaged TrainingRecord file is refused at every flipped bit and every truncation",
          "[optim]") {
  ScratchDir dir;
  Run run(3);
  run.train(3);
  run.capture().save(dir / "good.ckpt");
  const std::string good = read_bytes(dir / "good.ckpt");
  REQUIRE(good.size() > 500);
  const std::filesystem::path bad = dir / "bad.ckpt";
  int tried = 0;
  // Every bit of the 32-byte header, then one bit at 400 offsets spread over the payload.
  std::vector<std::size_t> bits;
  for (std::size_t bit = 0; bit < 256; ++bit) bits.push_back(bit);
  for (std::size_t k = 0; k < 400; ++k) bits.push_back(256 + (good.size() * 8 - 256) * k / 400);
  for (std::size_t bit : bits) {
    std::string damaged = good;
    damaged[bit / 8] = static_cast<char>(damaged[bit / 8] ^ (1 << (bit % 8)));
    write_bytes(bad, damaged);
    ++tried;
    try {
      TrainingRecord::load(bad);
      FAIL_CHECK("flipping bit " << bit << " was not detected");
    } catch (const CheckpointError& e) {
      if (std::string(e.what()).find("bad.ckpt") == std::string::npos) {
        FAIL_CHECK("the message does not name the file: " << e.what());
      }
    }
  }
  CHECK(tried == 656);
  for (std::size_t k = 0; k < 200; ++k) {
    const std::size_t length = good.size() * k / 200;
    write_bytes(bad, good.substr(0, length));
    INFO("truncated to " << length << " of " << good.size() << " bytes");
    CHECK_THROWS_WITH(TrainingRecord::load(bad),
                      Catch::Contains("truncated") && Catch::Contains("bad.ckpt"));
  }
  CHECK_THROWS_WITH(TrainingRecord::load(dir / "absent.ckpt"),
                    Catch::Contains("absent.ckpt") && Catch::Contains("does not exist"));
  // A valid frame around a payload that is not a TrainingRecord.
  CHECK_THROWS_WITH(TrainingRecord::parse_payload("not a record", "memory"),
                    Catch::Contains("checkpoint memory: malformed record"));
}

TEST_CASE("restore refuses a record that does not match, changing nothing", "[optim]") {
  ScratchDir dir;
  Run run(3);
  run.train(2);
  const TrainingRecord record = run.capture();
  record.save(dir / "r.ckpt");
  const TrainingRecord loaded = TrainingRecord::load(dir / "r.ckpt");

  auto check_untouched = [](const nn::Module& model, std::uint64_t seed) {
    const auto fresh = make_mlp(seed)->parameters();
    const auto now = model.parameters();
    for (std::size_t i = 0; i < now.size(); ++i) {
      REQUIRE_THAT(now[i].value(), TensorEqual(fresh[i].value()));
    }
  };
  SECTION("another shape names the parameter and the file") {
    auto other = make_mlp(7, /*hidden=*/6);
    CHECK_THROWS_WITH(loaded.restore(*other),
                      Catch::Contains("r.ckpt") && Catch::Contains("parameter '0.weight'") &&
                          Catch::Contains("expected shape [6, 4], the record has [5, 4]"));
  }
  SECTION("other ParamIds") {
    auto other = make_mlp(7);
    other->assign_param_ids(100);
    CHECK_THROWS_WITH(loaded.restore(*other),
                      Catch::Contains("(ParamId 100) is not in the record, which has '0.weight' "
                                      "under ParamId 1: the model's ParamIds differ"));
    other->assign_param_ids(1);
    check_untouched(*other, 7);
  }
  SECTION("another dtype names the parameter and both dtypes") {
    Generator gen(7);
    auto other = std::make_shared<nn::Sequential>(std::vector<std::shared_ptr<nn::Module>>{
        std::make_shared<nn::Linear>(4, 5, gen, nn::LinearOptions{.dtype = DType::F64}),
        std::make_shared<nn::ReLU>(),
        std::make_shared<nn::Linear>(5, 2, gen, nn::LinearOptions{.dtype = DType::F64})});
    other->assign_param_ids(1);
    const Tensor before = other->parameters()[0].value().clone();
    CHECK_THROWS_WITH(loaded.restore(*other),
                      Catch::Contains("r.ckpt") && Catch::Contains("parameter '0.weight'") &&
                          Catch::Contains("expected dtype F64, the record has F32"));
    REQUIRE_THAT(other->parameters()[0].value(), TensorEqual(before));
  }
  SECTION("a frozen parameter") {
    auto other = make_mlp(7);
    other->param("2.bias").set_trainable(false);
    CHECK_THROWS_WITH(loaded.restore(*other), Catch::Contains("is frozen but the record has it "
                                                              "trainable"));
  }
  SECTION("another optimizer, scheduler, or a component that was not captured") {
    auto other = make_mlp(7);
    Adam adam;
    CHECK_THROWS_WITH(loaded.restore(*other, &adam), Catch::Contains("of kind 'adamw'"));
    AdamW adamw_other{AdamWOptions{0.9, 0.99, 1e-8, 0.5}};
    CHECK_THROWS_AS(loaded.restore(*other, &adamw_other), CheckpointError);
    CHECK_THROWS_WITH(loaded.restore(*other, &adamw_other),
                      Catch::Contains("r.ckpt") &&
                          Catch::EndsWith("the 'adamw' optimizer passed has other hyper-parameters "
                                          "than the record's: expected weight_decay 0.05 (the "
                                          "record's), got 0.5"));
    AdamW adamw_two{AdamWOptions{0.9, 0.999, 1e-7, 0.05}};
    CHECK_THROWS_WITH(loaded.restore(*other, &adamw_two),
                      Catch::EndsWith("expected beta2 0.99 (the record's), got 0.999; expected "
                                      "eps 1e-08 (the record's), got 1e-07"));
    AdamW same_adamw{AdamWOptions{0.9, 0.99, 1e-8, 0.05}};
    WarmupCosineLr later_schedule{0.01, 2, 12};
    CHECK_THROWS_WITH(loaded.restore(*other, &same_adamw, &later_schedule),
                      Catch::EndsWith("the 'warmup_cosine' scheduler passed has another "
                                      "configuration than the record's: expected total_steps 10 "
                                      "(the record's), got 12"));
    CHECK(same_adamw.steps(1) == 0);
    AdamW adamw{AdamWOptions{0.9, 0.99, 1e-8, 0.05}};
    StepLr step(0.01, 3);
    CHECK_THROWS_WITH(loaded.restore(*other, &adamw, &step),
                      Catch::Contains("kind 'warmup_cosine'"));
    const TrainingRecord model_only = TrainingRecord::capture(*run.model);
    CHECK_THROWS_WITH(model_only.restore(*other, &adamw),
                      Catch::Contains("the record holds no optimizer state"));
    check_untouched(*other, 7);
    CHECK(adamw.steps(1) == 0);
    model_only.restore(*other);  // the model alone restores
    REQUIRE_THAT(other->parameters()[0].value(), TensorEqual(run.model->parameters()[0].value()));
  }
  SECTION("a state that refuses to load after another loaded: the loaded one is rolled back") {
    // The scheduler's step count, set to -1 inside an otherwise valid payload: the optimizer's
    // state loads first, then the scheduler refuses; the optimizer must get its old state back.
    std::string payload = record.serialize_payload();
    const std::string kind = "warmup_cosine";
    const std::size_t at = payload.find(kind);
    REQUIRE(at != std::string::npos);
    std::uint64_t count = 0;
    std::memcpy(&count, payload.data() + at + kind.size(), sizeof count);
    const std::int64_t minus_one = -1;
    std::memcpy(payload.data() + at + kind.size() + 8 + 8 * count, &minus_one, sizeof minus_one);
    const TrainingRecord damaged = TrainingRecord::parse_payload(payload, "memory");
    auto other = make_mlp(7);
    AdamW adamw{AdamWOptions{0.9, 0.99, 1e-8, 0.05}};
    WarmupCosineLr schedule{0.01, 2, 10};
    CHECK_THROWS_WITH(damaged.restore(*other, &adamw, &schedule),
                      Catch::Contains("expected a step count >= 0, got -1"));
    CHECK(adamw.steps(1) == 0);
    CHECK(adamw.state().slots.empty());
    CHECK(schedule.state().steps == 0);
    check_untouched(*other, 7);
  }
}

TEST_CASE("a CRC-valid record whose tensor shape wraps the byte count is refused naming the file",
          "[optim]") {
  ScratchDir dir;
  Run run(3);
  run.train(2);
  const std::string payload = run.capture().serialize_payload();
  // A [5, 4] F32 blob (2 dims, 80 bytes) becomes [2^62 + 20, 1]: 4 * (2^62 + 20) wraps to 80.
  const std::string blob = words({2, 5, 4, 80});
  const std::string wrapped = words({2, (std::int64_t{1} << 62) + 20, 1, 80});
  // The first [5, 4] blob is the parameter 0.weight, the second its AdamW first moment.
  for (int nth : {0, 1}) {
    INFO("occurrence " << nth);
    write_record_file(dir / "wrapped.ckpt", replace_nth(payload, blob, wrapped, nth));
    CHECK_THROWS_AS(TrainingRecord::load(dir / "wrapped.ckpt"), CheckpointError);
    CHECK_THROWS_WITH(TrainingRecord::load(dir / "wrapped.ckpt"),
                      Catch::Contains("wrapped.ckpt") && Catch::Contains("overflows") &&
                          Catch::Contains(nth == 0 ? "parameter '0.weight'"
                                                   : "the optimizer state of ParamId 1"));
  }
}

TEST_CASE("restore refuses a record of another rank or world size unless told otherwise",
          "[optim]") {
  ScratchDir dir;
  Run run(3);
  run.train(2);
  TrainingRecord::capture(*run.model, nullptr, nullptr, nullptr, {.rank = 1, .world_size = 2})
      .save(dir / "rank1.ckpt");
  const TrainingRecord record = TrainingRecord::load(dir / "rank1.ckpt");
  CHECK(record.caller().rank == 1);
  CHECK(record.caller().world_size == 2);
  auto other = make_mlp(7);
  const Tensor before = other->parameters()[0].value().clone();
  CHECK_THROWS_WITH(record.restore(*other, nullptr, nullptr, nullptr, {.rank = 0, .world_size = 3}),
                    Catch::Contains("rank1.ckpt") &&
                        Catch::Contains("expected world size 2 rank 1 (the record's), got world "
                                        "size 3 rank 0") &&
                        Catch::Contains("allow_other_rank_or_world"));
  // The default options mean a single-process run: rank 0 of 1.
  CHECK_THROWS_WITH(record.restore(*other),
                    Catch::Contains("expected world size 2 rank 1 (the record's), got world "
                                    "size 1 rank 0"));
  CHECK_THROWS_AS(record.check_rank_and_world({.rank = 0, .world_size = 2}), CheckpointError);
  REQUIRE_THAT(other->parameters()[0].value(), TensorEqual(before));
  // Options that describe no run at all are the caller's mistake.
  CHECK_THROWS_AS(record.restore(*other, nullptr, nullptr, nullptr, {.rank = 2, .world_size = 2}),
                  ValueError);
  CHECK_THROWS_AS(record.restore(*other, nullptr, nullptr, nullptr, {.rank = 0, .world_size = 0}),
                  ValueError);

  record.restore(*other, nullptr, nullptr, nullptr, {.rank = 1, .world_size = 2});
  REQUIRE_THAT(other->parameters()[0].value(), TensorEqual(run.model->parameters()[0].value()));
  auto elsewhere = make_mlp(8);
  record.restore(*elsewhere, nullptr, nullptr, nullptr,
                 {.rank = 0, .world_size = 3, .allow_other_rank_or_world = true});
  REQUIRE_THAT(elsewhere->parameters()[0].value(), TensorEqual(run.model->parameters()[0].value()));
}

TEST_CASE("capture refuses a rank outside its world size, restore refuses a record with one",
          "[optim]") {
  ScratchDir dir;
  auto model = make_mlp(3);
  CHECK_THROWS_AS(
      TrainingRecord::capture(*model, nullptr, nullptr, nullptr, {.rank = 2, .world_size = 2}),
      ValueError);
  CHECK_THROWS_AS(
      TrainingRecord::capture(*model, nullptr, nullptr, nullptr, {.rank = -1, .world_size = 2}),
      ValueError);
  // A CRC-valid file whose record claims rank 5 of 2 (as one written with only .rank set, when
  // the fields were informative, claims rank r of 1): it loads, and restores only when allowed.
  const std::string payload =
      TrainingRecord::capture(*model, nullptr, nullptr, nullptr,
                              {.step = 77777, .data_position = 88888, .rank = 1, .world_size = 2})
          .serialize_payload();
  write_record_file(dir / "odd.ckpt", replace_nth(payload, words({77777, 88888, 1, 2}),
                                                  words({77777, 88888, 5, 2}), 0));
  const TrainingRecord odd = TrainingRecord::load(dir / "odd.ckpt");
  CHECK(odd.caller().rank == 5);
  auto other = make_mlp(7);
  CHECK_THROWS_WITH(odd.restore(*other, nullptr, nullptr, nullptr, {.rank = 1, .world_size = 2}),
                    Catch::Contains("odd.ckpt") &&
                        Catch::Contains("expected world size 2 rank 5 (the record's)"));
  odd.restore(*other, nullptr, nullptr, nullptr,
              {.rank = 1, .world_size = 2, .allow_other_rank_or_world = true});
  REQUIRE_THAT(other->parameters()[0].value(), TensorEqual(model->parameters()[0].value()));
}

TEST_CASE("a CRC-valid record with an impossible generator state is refused at load", "[optim]") {
  ScratchDir dir;
  auto model = make_mlp(3);
  Generator::State rng;
  rng.seed = 0x5eed5eed5eed5eedULL;
  rng.counter = 0x0c0c0c0c0c0c0c0cULL;
  rng.buffered = 2;
  const std::string payload =
      TrainingRecord::capture(*model, nullptr, nullptr, nullptr, {.rng = rng}).serialize_payload();
  // buffered (a u32 after seed and counter) is the words of its block still unused: at most 4.
  std::string damaged = payload;
  const std::size_t at = damaged.find(words({0x5eed5eed5eed5eedLL, 0x0c0c0c0c0c0c0c0cLL}));
  REQUIRE(at != std::string::npos);
  damaged[at + 16] = 9;  // buffered's low byte
  write_record_file(dir / "rng.ckpt", damaged);
  CHECK_THROWS_AS(TrainingRecord::load(dir / "rng.ckpt"), CheckpointError);
  CHECK_THROWS_WITH(TrainingRecord::load(dir / "rng.ckpt"),
                    Catch::Contains("rng.ckpt") && Catch::Contains("buffered <= 4"));
}

namespace {

/// Linear(4, 8) -> `middle` -> Dropout(0.3) -> Linear(8, 2); `middle` is a ReLU, or a second
/// Dropout with `two_dropouts`; `dropout` false puts a ReLU where the Dropout is. The Linear
/// weights come from `init_seed`, the Dropouts' generators from fixed seeds (the same code in
/// a fresh process draws the same).
std::shared_ptr<nn::Sequential> make_dropout_mlp(std::uint64_t init_seed, bool dropout = true,
                                                 bool two_dropouts = false) {
  Generator gen(init_seed);
  std::shared_ptr<nn::Module> middle =
      two_dropouts ? std::shared_ptr<nn::Module>(std::make_shared<nn::Dropout>(0.2, 5))
                   : std::make_shared<nn::ReLU>();
  std::shared_ptr<nn::Module> drop =
      dropout ? std::shared_ptr<nn::Module>(std::make_shared<nn::Dropout>(0.3, 11))
              : std::make_shared<nn::ReLU>();
  return std::make_shared<nn::Sequential>(
      std::vector<std::shared_ptr<nn::Module>>{std::make_shared<nn::Linear>(4, 8, gen), middle,
                                               drop, std::make_shared<nn::Linear>(8, 2, gen)});
}

/// `steps` AdamW steps of `model` on batches drawn from `data`.
void train_dropout_mlp(nn::Module& model, Optimizer& optimizer, Generator& data, int steps) {
  for (int i = 0; i < steps; ++i) {
    const Tensor x = Tensor::randn({6, 4}, data);
    const Tensor y = Tensor::randn({6, 2}, data);
    model.zero_grad();
    nn::mse_loss(model.forward(Var(x)), Var(y)).backward();
    optimizer.step(0.01, model, GradientsParams::from_module(model));
  }
}

}  // namespace

TEST_CASE("a model with Dropout resumes bit for bit: the record holds its generator", "[optim]") {
  ScratchDir dir;
  auto straight = make_dropout_mlp(1);
  AdamW straight_opt;
  Generator straight_data(42);
  train_dropout_mlp(*straight, straight_opt, straight_data, 7);
  {
    auto first = make_dropout_mlp(1);
    AdamW opt;
    Generator data(42);
    train_dropout_mlp(*first, opt, data, 3);
    TrainingRecord::capture(*first, &opt, nullptr, nullptr, {.step = 3, .rng = data.state()})
        .save(dir / "rank0.ckpt");
  }
  // A fresh process: the same code builds the model (its Dropout at its seed's first mask),
  // the record brings back the parameters and the generator's position.
  auto resumed = make_dropout_mlp(999);
  AdamW opt;
  Generator data(0);
  const TrainingRecord record = TrainingRecord::load(dir / "rank0.ckpt");
  REQUIRE(record.generators().size() == 1);
  CHECK(record.generators()[0].path == "2.generator");
  record.restore(*resumed, &opt);
  data.set_state(record.caller().rng);
  CHECK(resumed->named_generators()[0].second->state() == record.generators()[0].state);
  train_dropout_mlp(*resumed, opt, data, 4);
  const auto a = straight->parameters();
  const auto b = resumed->parameters();
  REQUIRE(a.size() == b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    INFO("parameter " << i);
    REQUIRE_THAT(b[i].value(), TensorEqual(a[i].value()));
  }
  CHECK(resumed->named_generators()[0].second->state() ==
        straight->named_generators()[0].second->state());
}

TEST_CASE("restore refuses a model whose generators differ from the record's, naming the path",
          "[optim]") {
  auto saved = make_dropout_mlp(1);
  const TrainingRecord with_dropout = TrainingRecord::capture(*saved);
  auto no_dropout = make_dropout_mlp(2, /*dropout=*/false);
  const Tensor before = no_dropout->parameters()[0].value().clone();
  CHECK_THROWS_WITH(with_dropout.restore(*no_dropout),
                    Catch::Contains("the record's generator '2.generator' is not in the model"));
  REQUIRE_THAT(no_dropout->parameters()[0].value(), TensorEqual(before));
  auto two = make_dropout_mlp(2, true, /*two_dropouts=*/true);
  const Generator::State untouched = two->named_generators()[1].second->state();
  CHECK_THROWS_AS(with_dropout.restore(*two), CheckpointError);
  CHECK_THROWS_WITH(with_dropout.restore(*two),
                    Catch::Contains("the model's generator '1.generator' is not in the record"));
  CHECK(two->named_generators()[1].second->state() == untouched);
}

TEST_CASE("a record file of the format before module generators is refused as another version",
          "[optim]") {
  ScratchDir dir;
  TrainingRecord::capture(*make_dropout_mlp(1)).save(dir / "rank0.ckpt");
  std::string bytes = read_bytes(dir / "rank0.ckpt");
  bytes[8] = static_cast<char>(1);  // version 1: no generators in the payload
  const std::uint32_t crc = crc32_of(std::string_view(bytes.data(), 28));
  for (int i = 0; i < 4; ++i) bytes[28 + i] = static_cast<char>((crc >> (8 * i)) & 0xFF);
  write_bytes(dir / "old.ckpt", bytes);
  CHECK_THROWS_AS(TrainingRecord::load(dir / "old.ckpt"), CheckpointError);
  CHECK_THROWS_WITH(
      TrainingRecord::load(dir / "old.ckpt"),
      Catch::Contains("old.ckpt") && Catch::Contains(str("unsupported format version: expected ",
                                                         kRecordFormatVersion, ", got 1")));
}
