#include "examples/train_char_lm/tp_gpt.h"

#include "autodiff/collective/collective.h"
#include "tensor/ops/elementwise.h"
#include "tensor/ops/shape_ops.h"

namespace ruccl::examples::char_lm {

namespace dc = autodiff::collective;

namespace {

constexpr double kMaskedLogit = -1e30;  // exp(-1e30 - max) is exactly 0 in F32 and F64

// How a parameter of lm::Gpt is split over the group.
enum class Split {
  Replicated,  // every rank holds all of it
  Rows,        // dim 0 in equal blocks
  Columns,     // dim 1 in equal blocks
  Qkv,         // the q, k and v blocks of dim 0 each split in equal blocks
  Vocab,       // dim 0 padded to Vp, then in equal blocks
};

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

Split split_of(const std::string& path) {
  if (path == "tok.weight" || path == "head.weight") return Split::Vocab;
  if (ends_with(path, ".attn.in_proj_weight") || ends_with(path, ".attn.in_proj_bias")) {
    return Split::Qkv;
  }
  if (ends_with(path, ".attn.out_proj.weight") || ends_with(path, ".proj.weight")) {
    return Split::Columns;
  }
  if (ends_with(path, ".fc.weight") || ends_with(path, ".fc.bias")) return Split::Rows;
  return Split::Replicated;
}

}  // namespace

Shape ShardLayout::whole_shape(const std::string& path, const Shape& shard) const {
  Shape whole = shard;
  switch (split_of(path)) {
    case Split::Replicated:
      break;
    case Split::Rows:
    case Split::Qkv:
      whole[0] *= world;
      break;
    case Split::Columns:
      whole[1] *= world;
      break;
    case Split::Vocab:
      whole[0] = vocab;
      break;
  }
  return whole;
}

std::vector<ShardLayout::Piece> ShardLayout::pieces(const std::string& path,
                                                    const Shape& whole) const {
  switch (split_of(path)) {
    case Split::Replicated:
      return {{0, 0, 0, whole[0]}};
    case Split::Rows:
      return {{0, 0, whole[0] / world * rank, whole[0] / world}};
    case Split::Columns:
      return {{1, 0, whole[1] / world * rank, whole[1] / world}};
    case Split::Vocab: {
      const std::int64_t local = padded / world;
      const std::int64_t begin = local * rank;
      const std::int64_t length = std::min(vocab, begin + local) - begin;
      if (length <= 0) return {};
      return {{0, 0, begin, length}};
    }
    case Split::Qkv: {
      const std::int64_t e = whole[0] / 3;
      const std::int64_t local = e / world;
      std::vector<Piece> out;
      for (std::int64_t part = 0; part < 3; ++part) {
        out.push_back({0, part * local, part * e + rank * local, local});
      }
      return out;
    }
  }
  return {};
}

Tensor ShardLayout::assemble(
    const std::string& path, const Shape& local, DType dtype,
    const std::function<Tensor(const Shape& whole, const Piece&)>& read) const {
  const Shape whole = whole_shape(path, local);
  std::vector<Tensor> parts;
  int dim = 0;
  std::int64_t filled = 0;
  for (const Piece& p : pieces(path, whole)) {
    parts.push_back(read(whole, p));
    dim = p.dim;
    filled += p.length;
  }
  if (filled < local[dim]) {
    Shape rest = local;
    rest[dim] = local[dim] - filled;
    parts.push_back(Tensor::zeros(rest, dtype));
  }
  return parts.size() == 1 ? parts[0].contiguous().clone() : ruccl::cat(parts, dim);
}

TpGpt::TpGpt(const GptConfig& config, Communicator tp, Generator& gen)
    : config_(config), tp_(std::move(tp)), padded_(padded_vocab(config.vocab, tp_.world_size())) {
  Generator unused(0);  // the parallel layers' own draws are replaced by Gpt's, below
  tok = register_module("tok", nn::VocabParallelEmbedding(padded_, config.embed, tp_, unused));
  { nn::Embedding same_draws(config.vocab, config.embed, gen); }  // Gpt's tok draws
  pos = register_module("pos", nn::Embedding(config.context, config.embed, gen));
  ln_f = register_module("ln_f", nn::LayerNorm(config.embed));
  // Gpt's 0.02-normal re-init of tok, then pos: the whole table drawn, this rank's rows kept.
  const Tensor tok_whole = ruccl::add(
      ruccl::mul(Tensor::randn({config.vocab, config.embed}, gen, DType::F32), 0.02), 0.0);
  nn::init::normal_(pos->weight(), 0.0, 0.02, gen);
  for (std::int64_t i = 0; i < config.layers; ++i) {
    blocks.push_back(register_module("block" + std::to_string(i),
                                     TpBlock(config.embed, config.heads, tp_, gen)));
  }
  std::map<std::string, Tensor> whole{{"tok.weight", tok_whole}};
  if (!config.tie_weights) {
    nn::Linear same_draws(config.embed, config.vocab, gen, {.bias = false});
    head = register_module(
        "head", nn::ColumnParallelLinear(config.embed, padded_, tp_, unused, {.bias = false}));
    whole["head.weight"] = same_draws.weight().value();
  }
  for (const auto& [path, shard] : shards_of(whole)) param(path).set_value(shard);
  const std::int64_t local = padded_ / tp_.world_size();
  if ((tp_.rank() + 1) * local > config.vocab) {
    pad_mask_ =
        ruccl::ge(Tensor::arange(tp_.rank() * local, (tp_.rank() + 1) * local, 1, DType::I64),
                  Scalar(config.vocab));
  }
}

autodiff::Var TpGpt::forward(const Tensor& tokens) {
  const std::int64_t t_len = tokens.shape()[1];
  autodiff::Var x = tok(tokens) + pos(Tensor::arange(0, t_len, 1, DType::I64));
  for (auto& block : blocks) x = block(x);
  x = ln_f(x);
  autodiff::Var logits = config_.tie_weights
                             ? autodiff::matmul(dc::copy_to_region(x, tp_),
                                                autodiff::transpose(tok->weight().var(), 0, 1))
                             : head(x);
  if (pad_mask_.defined()) logits = autodiff::masked_fill(logits, pad_mask_, kMaskedLogit);
  return logits;
}

autodiff::Var TpGpt::loss_sum(const Tensor& tokens, const Tensor& targets) {
  autodiff::Var logits = forward(tokens);
  return nn::vocab_parallel_cross_entropy(
      autodiff::reshape(logits, {-1, padded_ / tp_.world_size()}), targets, tp_,
      {.reduction = autodiff::Reduction::Sum});
}

Tensor TpGpt::full_logits(const Tensor& tokens) {
  autodiff::NoGradGuard no_grad;
  return dc::all_gather_dim(forward(tokens), -1, tp_).value().narrow(2, 0, config_.vocab);
}

std::vector<std::pair<std::string, Tensor>> TpGpt::consolidated() {
  autodiff::NoGradGuard no_grad;
  const std::int64_t w = tp_.world_size();
  std::vector<std::pair<std::string, Tensor>> whole;
  for (auto& [path, p] : named_parameters()) {
    const Tensor shard = p.value();
    switch (split_of(path)) {
      case Split::Replicated:
        whole.emplace_back(path, shard.clone());
        break;
      case Split::Rows:
        whole.emplace_back(path, dc::all_gather_dim(autodiff::Var(shard), 0, tp_).value());
        break;
      case Split::Columns:
        whole.emplace_back(path, dc::all_gather_dim(autodiff::Var(shard), 1, tp_).value());
        break;
      case Split::Vocab:
        whole.emplace_back(
            path,
            dc::all_gather_dim(autodiff::Var(shard), 0, tp_).value().narrow(0, 0, config_.vocab));
        break;
      case Split::Qkv: {
        // Rank r holds [q_r; k_r; v_r]: gathered [w, 3, E / w, ...] -> [3, w, E / w, ...].
        const Tensor g = dc::all_gather_dim(autodiff::Var(shard), 0, tp_).value();
        const Shape& all = g.shape();
        std::vector<std::int64_t> dims{w, 3, all[0] / (3 * w)};
        std::vector<std::int64_t> order{1, 0, 2};
        for (std::int64_t i = 1; i < static_cast<std::int64_t>(all.size()); ++i) {
          dims.push_back(all[i]);
          order.push_back(i + 2);
        }
        Shape out = g.shape();
        whole.emplace_back(path, g.reshape(Shape(dims)).permute(order).contiguous().reshape(out));
        break;
      }
    }
  }
  return whole;
}

std::map<std::string, Tensor> TpGpt::shards_of(const std::map<std::string, Tensor>& whole) const {
  const ShardLayout here = layout();
  std::map<std::string, Tensor> shards;
  for (const auto& [path, t] : whole) {
    shards[path] = here.assemble(path, param(path).shape(), t.dtype(),
                                 [&t](const Shape&, const ShardLayout::Piece& p) {
                                   return t.narrow(p.dim, p.global_begin, p.length);
                                 });
  }
  return shards;
}

void TpGpt::load_consolidated(const std::map<std::string, Tensor>& whole) {
  for (const auto& [path, shard] : shards_of(whole)) {
    nn::Param p = param(path);
    p.set_value(shard.to(p.dtype()));
  }
}

}  // namespace ruccl::examples::char_lm
