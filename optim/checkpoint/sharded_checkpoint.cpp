#include "optim/checkpoint/sharded_checkpoint.h"

#include <algorithm>
#include <cereal/archives/portable_binary.hpp>
#include <cereal/types/string.hpp>
#include <cereal/types/vector.hpp>
#include <cstdio>
#include <mutex>
#include <random>
#include <set>
#include <sstream>

#include "optim/checkpoint/checkpoint_error.h"
#include "optim/checkpoint/record_file.h"
#include "optim/checkpoint/tensor_blob.h"
#include "optim/rank_agreement.h"
#include "tensor/serialize/bounded_input_archive.h"

namespace ruccl::optim {

namespace {

constexpr const char* kManifestKind = "ruccl.optim.ShardedCheckpoint";
constexpr const char* kRankKind = "ruccl.optim.ShardedCheckpoint.rank";
constexpr const char* kManifestName = "manifest.shards";
constexpr std::uint32_t kShardedVersion = 1;

/// A shard's metadata: what the manifest lists and the rank file repeats.
struct ShardMeta {
  std::string name;
  std::uint64_t param_id = 0;
  std::uint8_t dtype = 0;
  std::vector<std::int64_t> global_shape;
  std::vector<std::int64_t> offset, size;
  bool flat = false;
  std::int64_t padding = 0;

  ShardBox box() const { return ShardBox{offset, size, flat}; }
  friend bool operator==(const ShardMeta&, const ShardMeta&) = default;
  template <class Archive>
  void serialize(Archive& archive) {
    archive(name, param_id, dtype, global_shape, offset, size, flat, padding);
  }
};

struct RankEntry {
  std::string file;
  std::uint32_t crc = 0;
  std::vector<ShardMeta> shards;
  template <class Archive>
  void serialize(Archive& archive) {
    archive(file, crc, shards);
  }
};

template <typename... T>
std::string to_payload(const T&... values) {
  std::ostringstream out;
  {
    cereal::PortableBinaryOutputArchive archive(out);
    archive(values...);
  }
  return out.str();
}

/// Parses `payload` (from `origin`) into values after checking its kind; CheckpointError for
/// anything malformed.
template <typename... T>
void from_payload(const std::string& payload, const std::string& origin, const char* kind,
                  T&... values) {
  try {
    BoundedInputArchive archive(payload);
    std::string got;
    archive(got);
    if (got != kind) {
      throw CheckpointError(
          str(origin, ": expected a '", kind, "' payload, got '", got.substr(0, 64), "'"));
    }
    archive(values...);
    if (archive.remaining() != 0) {
      throw CheckpointError(str(origin, ": ", archive.remaining(), " unexpected bytes at the end"));
    }
  } catch (const CheckpointError&) {
    throw;
  } catch (const std::exception& e) {
    throw CheckpointError(str(origin, ": malformed (", e.what(), ")"));
  }
}

/// `t` narrowed to `box`'s elements relative to `origin` (t holds the box `origin`).
Tensor sub(const Tensor& t, const ShardBox& box, const ShardBox& origin) {
  Tensor out = t;
  for (std::size_t d = 0; d < box.offset.size(); ++d) {
    out = out.narrow(static_cast<std::int64_t>(d), box.offset[d] - origin.offset[d], box.size[d]);
  }
  return out;
}

/// Checks one rank's shards before anything is written; "" when they are well formed.
std::string malformed_shard(const std::vector<TensorShard>& shards) {
  std::set<std::pair<std::string, std::string>> seen;
  for (const TensorShard& s : shards) {
    const std::string who = str("shard of '", s.name, "'");
    if (s.name.empty()) return "a shard has an empty name";
    if (!s.value.defined()) return str(who, ": expected a value, got an undefined tensor");
    std::string why;
    const Shape global(s.global_shape);
    if (!s.box.fits(global, &why)) return str(who, ": ", why);
    if (s.value.shape() != s.box.shape()) {
      return str(who, ": expected a value of shape ", s.box.shape().to_string(), " (its box ",
                 s.box.to_string(), "), got ", s.value.shape().to_string());
    }
    if (s.padding < 0) return str(who, ": expected padding >= 0, got ", s.padding);
    if (!seen.insert({s.name, s.box.to_string()}).second) {
      return str(who, ": the box ", s.box.to_string(), " twice on one rank");
    }
  }
  return "";
}

ShardMeta meta_of(const TensorShard& s) {
  return ShardMeta{s.name,         s.param_id,   static_cast<std::uint8_t>(s.value.dtype()),
                   s.global_shape, s.box.offset, s.box.size,
                   s.box.flat,     s.padding};
}

/// Every tensor's shards agree on dtype, global shape and ParamId; "" when they do.
std::string disagreement(const std::vector<RankEntry>& ranks) {
  std::map<std::string, std::pair<int, const ShardMeta*>> first;
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    for (const ShardMeta& m : ranks[r].shards) {
      const auto [it, fresh] = first.try_emplace(m.name, static_cast<int>(r), &m);
      const ShardMeta& f = *it->second.second;
      if (fresh) continue;
      if (f.dtype != m.dtype || f.global_shape != m.global_shape || f.param_id != m.param_id) {
        return str("'", m.name, "': rank ", it->second.first, " saves it as ",
                   static_cast<DType>(f.dtype), " ", Shape(f.global_shape).to_string(),
                   " (ParamId ", f.param_id, "), rank ", r, " as ", static_cast<DType>(m.dtype),
                   " ", Shape(m.global_shape).to_string(), " (ParamId ", m.param_id, ")");
      }
    }
  }
  return "";
}

/// Throws on every rank when any rank's `failure` is not empty: its own reason there, elsewhere
/// "rank R ...: <what>" for the lowest failing rank R.
void fail_together(Communicator& comm, const std::string& failure, const char* what,
                   const char* label) {
  const auto ok = all_gather_words(comm, {failure.empty() ? 1 : 0}, label);
  for (int r = 0; r < comm.world_size(); ++r) {
    if (ok[static_cast<std::size_t>(r)][0] == 1) continue;
    if (!failure.empty()) throw CheckpointError(failure);
    throw CheckpointError(str("rank ", r, " ", what, "; no rank goes on"));
  }
}

std::uint64_t random_save_id() {
  std::random_device device;
  return (static_cast<std::uint64_t>(device()) << 32) ^ device();
}

}  // namespace

struct ShardedCheckpoint::State {
  std::filesystem::path dir;
  int world = 0;
  std::vector<RankEntry> ranks;
  std::map<std::string, ShardedTensorInfo> tensors;
  // The shards of each rank file read so far (index = rank), in the manifest's order.
  mutable std::mutex mutex;
  mutable std::map<int, std::vector<TensorBlob>> loaded;

  const std::vector<TensorBlob>& rank_blobs(int rank, const std::string& tensor) const;
};

const std::vector<TensorBlob>& ShardedCheckpoint::State::rank_blobs(
    int rank, const std::string& tensor) const {
  std::lock_guard<std::mutex> lock(mutex);
  if (const auto it = loaded.find(rank); it != loaded.end()) return it->second;
  const RankEntry& entry = ranks[static_cast<std::size_t>(rank)];
  const std::filesystem::path path = dir / entry.file;
  const std::string context = str("sharded checkpoint ", dir, ": rank ", rank, "'s shards (of '",
                                  tensor, "' and others) in ", path);
  std::string payload;
  try {
    payload = read_record_file(path);
  } catch (const CheckpointError& e) {
    throw CheckpointError(str(context, ": ", e.what()));
  }
  if (crc32_of(payload) != entry.crc) {
    throw CheckpointError(str(context,
                              ": not the file the manifest names (its CRC-32 differs: "
                              "a file of another save, or changed since)"));
  }
  std::int64_t file_rank = -1, file_world = -1;
  std::string save_id;
  std::vector<ShardMeta> metas;
  std::vector<TensorBlob> blobs;
  from_payload(payload, context, kRankKind, file_rank, file_world, save_id, metas, blobs);
  if (file_rank != rank || file_world != world || metas != entry.shards ||
      blobs.size() != metas.size()) {
    throw CheckpointError(str(context, ": written as rank ", file_rank, " of ", file_world,
                              " with ", metas.size(), " shard(s); the manifest expects rank ", rank,
                              " of ", world, " with ", entry.shards.size()));
  }
  for (std::size_t i = 0; i < blobs.size(); ++i) {
    try {
      blobs[i].validate();
      if (blobs[i].dtype != metas[i].dtype ||
          blobs[i].shape != metas[i].box().shape().to_vector()) {
        throw CheckpointError(str("expected ", static_cast<DType>(metas[i].dtype), " ",
                                  metas[i].box().shape().to_string()));
      }
    } catch (const std::exception& e) {
      throw CheckpointError(str(context, ": the shard ", metas[i].box().to_string(), " of '",
                                metas[i].name, "': ", e.what()));
    }
  }
  return loaded.emplace(rank, std::move(blobs)).first->second;
}

ShardedCheckpoint::ShardedCheckpoint(std::unique_ptr<State> state) : state_(std::move(state)) {}
ShardedCheckpoint::~ShardedCheckpoint() = default;
ShardedCheckpoint::ShardedCheckpoint(ShardedCheckpoint&&) noexcept = default;
ShardedCheckpoint& ShardedCheckpoint::operator=(ShardedCheckpoint&&) noexcept = default;

void ShardedCheckpoint::save(Communicator& comm, const std::filesystem::path& dir,
                             const std::vector<TensorShard>& shards) {
  constexpr const char* kLabel = "ShardedCheckpoint::save";
  const int rank = comm.rank();
  const int world = comm.world_size();
  std::string failure = malformed_shard(shards);
  if (!failure.empty()) failure = str("ShardedCheckpoint::save on rank ", rank, ": ", failure);
  // One id for this save's files, rank 0's, learned with the check above.
  const auto words = all_gather_words(
      comm, {failure.empty() ? 1 : 0, static_cast<std::int64_t>(rank == 0 ? random_save_id() : 0)},
      kLabel);
  for (int r = 0; r < world; ++r) {
    if (words[static_cast<std::size_t>(r)][0] == 1) continue;
    if (!failure.empty()) throw CheckpointError(failure);
    throw CheckpointError(str("rank ", r,
                              " passed malformed shards to ShardedCheckpoint::save; "
                              "nothing was written"));
  }
  char id[17];
  std::snprintf(id, sizeof id, "%016llx", static_cast<unsigned long long>(words[0][1]));
  RankEntry mine{str("rank-", rank, "-of-", world, "-", id, ".shards"), 0, {}};
  std::vector<TensorBlob> blobs;
  for (const TensorShard& s : shards) {
    mine.shards.push_back(meta_of(s));
    blobs.push_back(TensorBlob::from_tensor(s.value));
  }
  const std::filesystem::path my_file = dir / mine.file;
  try {
    std::filesystem::create_directories(dir);
    // The save's id inside too: two saves of equal tensors still differ in every file's CRC.
    const std::string payload =
        to_payload(std::string(kRankKind), std::int64_t{rank}, std::int64_t{world}, std::string(id),
                   mine.shards, blobs);
    mine.crc = crc32_of(payload);
    write_record_file(my_file, payload);
  } catch (const std::exception& e) {
    failure = str("ShardedCheckpoint::save on rank ", rank, ": ", e.what());
  }
  // Every rank's entry to every rank: all check the tensors agree, rank 0 writes the manifest.
  const std::vector<std::string> entries =
      all_gather_strings(comm, to_payload(std::string(kRankKind), mine), kLabel);
  std::vector<RankEntry> ranks(static_cast<std::size_t>(world));
  for (int r = 0; r < world; ++r) {
    from_payload(entries[static_cast<std::size_t>(r)], str("rank ", r, "'s entry"), kRankKind,
                 ranks[static_cast<std::size_t>(r)]);
  }
  if (failure.empty()) {
    if (const std::string d = disagreement(ranks); !d.empty()) {
      failure = str("ShardedCheckpoint::save: the ranks disagree on ", d);
    }
  }
  const auto drop_mine = [&] {
    std::error_code ignored;
    std::filesystem::remove(my_file, ignored);
  };
  try {
    fail_together(comm, failure, "could not write its shards", kLabel);
  } catch (...) {
    drop_mine();
    throw;
  }
  // The commit: rank 0's manifest. The old checkpoint's files go once it has landed.
  if (rank == 0) {
    std::vector<std::string> old_files;
    try {
      const ShardedCheckpoint old = open(dir);
      for (const RankEntry& e : old.state_->ranks) old_files.push_back(e.file);
    } catch (const std::exception&) {  // none, or unreadable: nothing to remove
    }
    try {
      write_record_file(dir / kManifestName, to_payload(std::string(kManifestKind), kShardedVersion,
                                                        std::int64_t{world}, ranks));
      for (const std::string& f : old_files) {
        if (std::none_of(ranks.begin(), ranks.end(),
                         [&](const RankEntry& e) { return e.file == f; })) {
          std::error_code ignored;
          std::filesystem::remove(dir / f, ignored);
        }
      }
    } catch (const std::exception& e) {
      failure = str("ShardedCheckpoint::save on rank 0: the manifest: ", e.what());
    }
  }
  try {
    fail_together(comm, failure, "could not write the manifest", kLabel);
  } catch (...) {
    drop_mine();
    throw;
  }
}

ShardedCheckpoint ShardedCheckpoint::open(const std::filesystem::path& dir) {
  auto state = std::make_unique<State>();
  state->dir = dir;
  const std::string origin = str("sharded checkpoint ", dir);
  std::string payload;
  try {
    payload = read_record_file(dir / kManifestName);
  } catch (const CheckpointError& e) {
    throw CheckpointError(str(origin, ": its manifest: ", e.what()));
  }
  std::uint32_t version = 0;
  std::int64_t world = 0;
  from_payload(payload, origin + "'s manifest", kManifestKind, version, world, state->ranks);
  if (version != kShardedVersion || world < 1 ||
      static_cast<std::size_t>(world) != state->ranks.size()) {
    throw CheckpointError(str(origin, ": expected a version ", kShardedVersion,
                              " manifest of W rank files, got version ", version, " of world ",
                              world, " with ", state->ranks.size(), " rank file(s)"));
  }
  state->world = static_cast<int>(world);
  for (int r = 0; r < state->world; ++r) {
    for (const ShardMeta& m : state->ranks[static_cast<std::size_t>(r)].shards) {
      std::string why;
      const bool known_dtype = m.dtype <= static_cast<std::uint8_t>(DType::Bool);
      if (m.global_shape.size() > static_cast<std::size_t>(Shape::kMaxDims) ||
          std::any_of(m.global_shape.begin(), m.global_shape.end(),
                      [](std::int64_t d) { return d < 0; }) ||
          !known_dtype || !m.box().fits(Shape(m.global_shape), &why)) {
        throw CheckpointError(str(origin, ": rank ", r, "'s shard of '", m.name, "': ",
                                  !known_dtype  ? "an unknown dtype"
                                  : why.empty() ? "a malformed global shape"
                                                : why));
      }
      ShardedTensorInfo& info = state->tensors[m.name];
      info.param_id = m.param_id;
      info.global_shape = Shape(m.global_shape);
      info.dtype = static_cast<DType>(m.dtype);
      info.pieces.push_back({r, m.box(), m.padding});
    }
  }
  if (const std::string d = disagreement(state->ranks); !d.empty()) {
    throw CheckpointError(str(origin, ": its manifest disagrees on ", d));
  }
  return ShardedCheckpoint(std::move(state));
}

ShardedCheckpoint ShardedCheckpoint::open_on_every_rank(Communicator& comm,
                                                        const std::filesystem::path& dir) {
  std::optional<ShardedCheckpoint> ckpt;
  std::string failure;
  try {
    ckpt.emplace(open(dir));
  } catch (const CheckpointError& e) {
    failure = e.what();
  }
  fail_together(comm, failure, "could not open the sharded checkpoint", "ShardedCheckpoint::open");
  return std::move(*ckpt);
}

int ShardedCheckpoint::world_size() const { return state_->world; }

std::vector<std::string> ShardedCheckpoint::names() const {
  std::vector<std::string> out;
  for (const auto& [name, info] : state_->tensors) out.push_back(name);
  return out;
}

const ShardedTensorInfo& ShardedCheckpoint::info(const std::string& name) const {
  const auto it = state_->tensors.find(name);
  if (it != state_->tensors.end()) return it->second;
  std::string held;
  for (const auto& [n, i] : state_->tensors) held += (held.empty() ? "'" : ", '") + n + "'";
  throw CheckpointError(str("sharded checkpoint ", state_->dir, ": no tensor '", name,
                            "' (it holds ", held.empty() ? "none" : held, ")"));
}

Tensor ShardedCheckpoint::read(const std::string& name, const ShardBox& box) const {
  const ShardedTensorInfo& t = info(name);
  std::string why;
  if (!box.fits(t.global_shape, &why)) {
    throw CheckpointError(str("sharded checkpoint ", state_->dir, ": reading ", box.to_string(),
                              " of '", name, "' ", t.global_shape.to_string(), ": ", why));
  }
  // Pieces of the other kind (flat against box) meet the request through the whole tensor.
  const bool mixed = std::any_of(t.pieces.begin(), t.pieces.end(),
                                 [&](const auto& p) { return p.box.flat != box.flat; });
  const ShardBox target = mixed ? ShardBox::whole(t.global_shape) : box;
  Tensor out = Tensor::zeros(target.shape(), t.dtype);
  Tensor covered = Tensor::zeros(target.shape(), DType::I32);  // 1 where a shard landed
  for (const ShardedTensorInfo::Piece& p : t.pieces) {
    // A flat piece lands in the whole tensor's flat view; a box piece in its box.
    const bool flat_into_whole = mixed && p.box.flat;
    const ShardBox into =
        flat_into_whole ? ShardBox::flat_range(0, t.global_shape.numel()) : target;
    const ShardBox meet = intersect(p.box, into);
    if (meet.numel() == 0) continue;
    const std::vector<TensorBlob>& blobs = state_->rank_blobs(p.rank, name);
    const std::vector<ShardMeta>& metas = state_->ranks[static_cast<std::size_t>(p.rank)].shards;
    std::size_t index = 0;
    while (!(metas[index].name == name && metas[index].box() == p.box)) ++index;
    const Tensor value = blobs[index].to_tensor();
    const Tensor dst = flat_into_whole ? out.view({out.numel()}) : out;
    const Tensor mask = flat_into_whole ? covered.view({covered.numel()}) : covered;
    sub(dst, meet, into).copy_(sub(value, meet, p.box));
    sub(mask, meet, into).fill_(1);
  }
  // The requested elements, cut from the whole tensor when it was assembled whole.
  const auto cut = [&](const Tensor& whole) {
    if (!mixed) return whole;
    return box.flat ? whole.view({whole.numel()}).narrow(0, box.offset[0], box.size[0]).contiguous()
                    : sub(whole, box, target).contiguous();
  };
  const Tensor requested = cut(covered);
  const std::int64_t missing = requested.numel() - requested.sum().item<std::int64_t>();
  if (missing != 0) {
    throw CheckpointError(str("sharded checkpoint ", state_->dir, ": ", missing, " element(s) of ",
                              box.to_string(), " of '", name, "' ", t.global_shape.to_string(),
                              " are in no rank's shard (it has ", t.pieces.size(),
                              " shard(s) from ", state_->world, " rank(s))"));
  }
  return cut(out);
}

Tensor ShardedCheckpoint::read_whole(const std::string& name) const {
  return read(name, ShardBox::whole(info(name).global_shape));
}

std::map<std::string, Tensor> ShardedCheckpoint::consolidate() const {
  std::map<std::string, Tensor> out;
  for (const auto& [name, info] : state_->tensors) out.emplace(name, read_whole(name));
  return out;
}

}  // namespace ruccl::optim
