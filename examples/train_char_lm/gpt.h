#pragma once
// A small GPT for train_char_lm: token and position embeddings, pre-LN blocks of causal
// multi-head attention and a GELU MLP (each with a residual), a final LayerNorm and a head that
// is the token embedding's transpose (tied) or a Linear of its own.
#include <cstdint>
#include <string>
#include <vector>

#include "autodiff/autodiff.h"

namespace ruccl::examples::char_lm {

/// The model's sizes.
struct GptConfig {
  std::int64_t vocab = 0;     ///< distinct characters
  std::int64_t context = 64;  ///< longest sequence (position table rows)
  std::int64_t embed = 64;    ///< E
  std::int64_t heads = 4;     ///< E must divide by it
  std::int64_t layers = 2;
  bool tie_weights = true;  ///< head = token embedding's transpose
};

/// x + attn(ln1(x)), then x + mlp(ln2(x)); [B, T, E] -> [B, T, E].
class Block : public nn::Cloneable<Block> {
 public:
  Block(std::int64_t embed, std::int64_t heads, Generator& gen)
      : ln1(register_module("ln1", nn::LayerNorm(embed))),
        attn(register_module("attn",
                             nn::MultiheadAttention(embed, heads, gen, {.batch_first = true}))),
        ln2(register_module("ln2", nn::LayerNorm(embed))),
        fc(register_module("fc", nn::Linear(embed, 4 * embed, gen))),
        proj(register_module("proj", nn::Linear(4 * embed, embed, gen))) {}
  autodiff::Var forward(const autodiff::Var& x) override {
    autodiff::Var h = ln1(x);
    autodiff::Var a = attn->forward(h, h, h, {}, /*is_causal=*/true);
    autodiff::Var y = x + a;
    return y + proj(fc(ln2(y)).gelu());
  }
  nn::ModuleHandle<nn::LayerNorm> ln1;
  nn::ModuleHandle<nn::MultiheadAttention> attn;
  nn::ModuleHandle<nn::LayerNorm> ln2;
  nn::ModuleHandle<nn::Linear> fc, proj;
};

/// tokens [B, T] (I64, T <= context) -> logits [B, T, vocab].
class Gpt : public nn::Cloneable<Gpt> {
 public:
  /// Every parameter drawn from `gen` (the same seed gives the same model on every rank).
  Gpt(const GptConfig& config, Generator& gen)
      : config_(config),
        tok(register_module("tok", nn::Embedding(config.vocab, config.embed, gen))),
        pos(register_module("pos", nn::Embedding(config.context, config.embed, gen))),
        ln_f(register_module("ln_f", nn::LayerNorm(config.embed))) {
    // GPT-2's initialisation scale for the embeddings (N(0, 1) would swamp the residual stream).
    for (nn::Param* p : {&tok->weight(), &pos->weight()}) nn::init::normal_(*p, 0.0, 0.02, gen);
    for (std::int64_t i = 0; i < config.layers; ++i) {
      blocks.push_back(
          register_module("block" + std::to_string(i), Block(config.embed, config.heads, gen)));
    }
    if (!config.tie_weights) {
      head = register_module("head", nn::Linear(config.embed, config.vocab, gen, {.bias = false}));
    }
  }
  using nn::Module::forward;
  autodiff::Var forward(const Tensor& tokens) {
    const std::int64_t t_len = tokens.shape()[1];
    autodiff::Var x = tok(tokens) + pos(Tensor::arange(0, t_len, 1, DType::I64));
    for (auto& block : blocks) x = block(x);
    x = ln_f(x);
    if (config_.tie_weights) return autodiff::matmul(x, autodiff::transpose(tok->weight(), 0, 1));
    return head(x);
  }
  const GptConfig& config() const { return config_; }

 private:
  GptConfig config_;

 public:
  nn::ModuleHandle<nn::Embedding> tok, pos;
  std::vector<nn::ModuleHandle<Block>> blocks;
  nn::ModuleHandle<nn::LayerNorm> ln_f;
  nn::ModuleHandle<nn::Linear> head;
};

}  // namespace ruccl::examples::char_lm
