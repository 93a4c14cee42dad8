#pragma once
// The tensor-parallel GPT of train_char_lm --tp T: lm::Gpt split over a tensor-parallel group
// (docs/parallelism.md, "The char LM on a mesh"). Vocabulary-parallel token embedding whose
// transpose is the tied head (the logits stay split: rank r computes classes [r Vp/T, (r+1) Vp/T)),
// vocab_parallel_cross_entropy; replicated position embedding and LayerNorms; heads split by
// ParallelMultiheadAttention; a ColumnParallelLinear fc and a RowParallelLinear proj.
//
// The vocabulary V is padded to Vp, the next multiple of T: the padded rows of the embedding (and
// of an untied head) start at zero, are never looked up, and their logits are set to -1e30 before
// the loss, so exp() makes them exactly 0: the loss, its gradient and every real parameter are the
// one-rank model's (the padded rows get a zero gradient and stay zero).
//
// Initialisation draws what lm::Gpt draws, in its order, from the same generator, and keeps this
// rank's shards: the shards concatenate (and, for the embedding, cut back to V rows) to Gpt's.
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "autodiff/autodiff.h"
#include "examples/train_char_lm/gpt.h"

namespace ruccl::examples::char_lm {

/// How the parameters of lm::Gpt are laid out over a tensor-parallel group: which parts of the
/// whole (one-rank) parameter a rank's shard holds. World 1 (lm::Gpt itself): every shard whole.
struct ShardLayout {
  int rank = 0;
  int world = 1;
  std::int64_t vocab = 0;   ///< V
  std::int64_t padded = 0;  ///< Vp: V rounded up to a multiple of world
  /// Shard elements [local_begin, local_begin + length) along `dim` are the whole parameter's
  /// [global_begin, global_begin + length) there (the other dims whole).
  struct Piece {
    int dim = 0;
    std::int64_t local_begin = 0;
    std::int64_t global_begin = 0;
    std::int64_t length = 0;
  };
  /// The whole parameter's shape, from the path and this rank's shard shape.
  Shape whole_shape(const std::string& path, const Shape& shard) const;
  /// The pieces of the shard of `path` (whole shape `whole`), in local order: one, or three for
  /// attention's in_proj (its q, k and v rows), none for a rank of only padded vocabulary rows.
  /// The shard's rows past the last piece are padding (zero).
  std::vector<Piece> pieces(const std::string& path, const Shape& whole) const;
  /// This rank's shard of `path` (shape `local`): `read(whole, piece)` gives the whole
  /// parameter's elements of each piece; the rows past them are zeros of `dtype` (padding).
  Tensor assemble(const std::string& path, const Shape& local, DType dtype,
                  const std::function<Tensor(const Shape& whole, const Piece&)>& read) const;
};

/// x + attn(ln1(x)), then x + proj(gelu(fc(ln2(x)))), the attention heads and the MLP's hidden
/// features split over `tp`; x and the output replicated [B, T, E].
class TpBlock : public nn::Cloneable<TpBlock> {
 public:
  TpBlock(std::int64_t embed, std::int64_t heads, Communicator tp, Generator& gen)
      : ln1(register_module("ln1", nn::LayerNorm(embed))),
        attn(register_module(
            "attn", nn::ParallelMultiheadAttention(embed, heads, tp, gen, {.batch_first = true}))),
        ln2(register_module("ln2", nn::LayerNorm(embed))),
        fc(register_module("fc", nn::ColumnParallelLinear(embed, 4 * embed, tp, gen))),
        proj(register_module("proj", nn::RowParallelLinear(4 * embed, embed, tp, gen))) {}
  autodiff::Var forward(const autodiff::Var& x) override {
    autodiff::Var h = ln1(x);
    autodiff::Var y = x + attn->forward(h, {}, /*is_causal=*/true);
    return y + proj(fc(ln2(y)).gelu());
  }
  nn::ModuleHandle<nn::LayerNorm> ln1;
  nn::ModuleHandle<nn::ParallelMultiheadAttention> attn;
  nn::ModuleHandle<nn::LayerNorm> ln2;
  nn::ModuleHandle<nn::ColumnParallelLinear> fc;
  nn::ModuleHandle<nn::RowParallelLinear> proj;
};

/// tokens [B, T] (I64, replicated over tp) -> this rank's logits [B, T, Vp / T].
class TpGpt : public nn::Cloneable<TpGpt> {
 public:
  /// Vp: `vocab` rounded up to a multiple of `world`.
  static std::int64_t padded_vocab(std::int64_t vocab, int world) {
    return (vocab + world - 1) / world * world;
  }

  /// The shards of lm::Gpt(config, gen) for rank tp.rank() of `tp`.
  TpGpt(const GptConfig& config, Communicator tp, Generator& gen);

  using nn::Module::forward;
  /// This rank's logits, the padded classes at -1e30.
  autodiff::Var forward(const Tensor& tokens);
  /// The summed cross-entropy of `tokens` [B, T] against `targets` [B * T]: replicated over tp.
  autodiff::Var loss_sum(const Tensor& tokens, const Tensor& targets);
  /// The whole logits [B, T, V] on every rank of the group (gathered; no gradient).
  Tensor full_logits(const Tensor& tokens);
  /// Every parameter of lm::Gpt by its path, in visit order (Gpt's), gathered from the shards:
  /// a collective of tp.
  std::vector<std::pair<std::string, Tensor>> consolidated();
  /// lm::Gpt's parameters by path, cut into this rank's shards (padded as above): what
  /// load_consolidated takes, and what consolidated() inverts.
  std::map<std::string, Tensor> shards_of(const std::map<std::string, Tensor>& whole) const;
  /// Sets every parameter from lm::Gpt's parameters by path (values converted to this model's
  /// dtype).
  void load_consolidated(const std::map<std::string, Tensor>& whole);
  const GptConfig& config() const { return config_; }
  Communicator& communicator() { return tp_; }
  ShardLayout layout() const { return {tp_.rank(), tp_.world_size(), config_.vocab, padded_}; }

 private:
  GptConfig config_;
  Communicator tp_;
  std::int64_t padded_;
  Tensor pad_mask_;  // [Vp / T] Bool: this rank's padded classes (undefined when it has none)

 public:
  nn::ModuleHandle<nn::VocabParallelEmbedding> tok;
  nn::ModuleHandle<nn::Embedding> pos;
  std::vector<nn::ModuleHandle<TpBlock>> blocks;
  nn::ModuleHandle<nn::LayerNorm> ln_f;
  nn::ModuleHandle<nn::ColumnParallelLinear> head;
};

}  // namespace ruccl::examples::char_lm
