#include "collective/protocol/agreement.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <sstream>
#include <vector>

#include "collective/common/reduce_operation.h"
#include "collective/protocol/call_options.h"
#include "tensor/core/dtype.h"

namespace ruccl {

namespace {

enum class ShapeRule { None, Equal, FromRoot, Trailing, Sender };

ShapeRule shape_rule(OpKind kind) {
  switch (kind) {
    case OpKind::Barrier:
      return ShapeRule::None;
    case OpKind::Broadcast:
    case OpKind::Scatter:
      return ShapeRule::FromRoot;
    case OpKind::BroadcastFromSender:
      return ShapeRule::Sender;
    case OpKind::AllToAllV:
      return ShapeRule::Trailing;
    default:
      return ShapeRule::Equal;
  }
}

bool uses_root(OpKind kind) {
  return kind == OpKind::Broadcast || kind == OpKind::Reduce || kind == OpKind::Gather ||
         kind == OpKind::Scatter;
}

bool uses_reduce_op(OpKind kind) {
  return kind == OpKind::AllReduce || kind == OpKind::Reduce || kind == OpKind::ReduceScatter;
}

std::string shape_text(const CallRecord& r, bool trailing) {
  if (r.ndim < 0) return "no tensor";
  Shape s = r.shape();
  if (trailing) {
    std::ostringstream out;
    out << "[*";
    for (int d = 1; d < r.ndim; ++d) out << ", " << r.dims[d];
    out << ']';
    return out.str();
  }
  return s.to_string();
}

std::string dtype_text(const CallRecord& r) {
  return r.dtype == CallRecord::kNone ? "no tensor"
                                      : std::string(dtype_name(static_cast<DType>(r.dtype)));
}

// Builds "what mismatch: rank 0 has X, rank 2 has Y" over the ranks in `who` (those that take
// part in the comparison), against reference rank `ref`. Returns nullopt when all equal.
std::optional<CollectiveError> compare(
    std::span<const CallRecord> all, const RankNames& names, const std::string& prefix,
    CollectiveErrorKind kind, const char* what, int ref,
    const std::function<bool(const CallRecord&)>& takes_part,
    const std::function<bool(const CallRecord&, const CallRecord&)>& same,
    const std::function<std::string(const CallRecord&)>& text) {
  std::vector<int> differing;
  for (int r = 0; r < static_cast<int>(all.size()); ++r) {
    if (r == ref || !takes_part(all[static_cast<std::size_t>(r)])) continue;
    if (!same(all[static_cast<std::size_t>(ref)], all[static_cast<std::size_t>(r)])) {
      differing.push_back(r);
    }
  }
  if (differing.empty()) return std::nullopt;
  std::ostringstream out;
  out << prefix << what << " mismatch: " << names.name(ref) << " has "
      << text(all[static_cast<std::size_t>(ref)]);
  for (int r : differing)
    out << ", " << names.name(r) << " has " << text(all[static_cast<std::size_t>(r)]);
  std::vector<int> ranks = differing;
  ranks.push_back(ref);
  std::sort(ranks.begin(), ranks.end());
  return CollectiveError(kind, out.str(), ranks);
}

bool same_shape(const CallRecord& a, const CallRecord& b, int from_dim) {
  if (a.ndim != b.ndim) return false;
  for (int d = from_dim; d < a.ndim; ++d) {
    if (a.dims[d] != b.dims[d]) return false;
  }
  return true;
}

// The common case, without building any message: every record agrees with every other.
bool all_agree(std::span<const CallRecord> all) {
  const CallRecord& first = all[0];
  const ShapeRule rule = shape_rule(first.kind);
  int senders = 0;
  for (const CallRecord& r : all) {
    if (r.kind != first.kind || r.error_kind != CallRecord::kNone || r.root != first.root ||
        r.reduce_op != first.reduce_op || r.algorithm != first.algorithm ||
        r.tree_arity != first.tree_arity || r.num_words != first.num_words ||
        std::strncmp(r.engine, first.engine, sizeof(first.engine)) != 0) {
      return false;
    }
    for (int w = 0; w < r.num_words; ++w) {
      if (r.words[w] != first.words[w]) return false;
    }
    senders += r.has_tensor;
  }
  switch (rule) {
    case ShapeRule::None:
      return true;
    case ShapeRule::Sender:
      return senders == 1;
    case ShapeRule::Equal:
    case ShapeRule::Trailing:
      for (const CallRecord& r : all) {
        if (r.dtype != first.dtype || !same_shape(r, first, rule == ShapeRule::Trailing ? 1 : 0)) {
          return false;
        }
      }
      return true;
    case ShapeRule::FromRoot: {
      if (first.root < 0 || first.root >= static_cast<int>(all.size())) return false;
      const CallRecord& root = all[static_cast<std::size_t>(first.root)];
      for (const CallRecord& r : all) {
        if (r.has_tensor && (r.dtype != root.dtype || !same_shape(r, root, 0))) return false;
      }
      return true;
    }
  }
  return false;
}

}  // namespace

void set_local_error(CallRecord& record, CollectiveErrorKind kind, const std::string& message) {
  if (record.error_kind != CallRecord::kNone) return;
  record.error_kind = static_cast<std::uint8_t>(kind);
  const std::size_t n = std::min(message.size(), sizeof(record.error_message) - 1);
  std::memcpy(record.error_message, message.data(), n);
  record.error_message[n] = '\0';
}

std::optional<CollectiveError> check_agreement(std::span<const CallRecord> all,
                                               const RankNames& names) {
  if (all_agree(all)) return std::nullopt;
  const CallRecord& first = all[0];
  bool same_label = true;
  for (const CallRecord& r : all) {
    same_label = same_label && std::strncmp(r.label, first.label, sizeof(first.label)) == 0;
  }
  const std::string prefix =
      same_label ? str(first.label, " (call #", first.seq, "): ") : str("call #", first.seq, ": ");
  auto everyone = [](const CallRecord&) { return true; };

  // 1. The same collective everywhere.
  if (auto e = compare(
          all, names, prefix, CollectiveErrorKind::CollectiveKindMismatch, "collective kind", 0,
          everyone, [](const CallRecord& a, const CallRecord& b) { return a.kind == b.kind; },
          [](const CallRecord& r) { return str("called ", op_kind_name(r.kind)); })) {
    return e;
  }
  const OpKind kind = first.kind;

  // 1b. The same engine everywhere (a CPU rank and a CUDA rank, or RUCCL_ENGINE set differently,
  // would exchange messages neither side can read).
  if (auto e = compare(
          all, names, prefix, CollectiveErrorKind::InvalidConfig, "engine", 0, everyone,
          [](const CallRecord& a, const CallRecord& b) {
            return std::strncmp(a.engine, b.engine, sizeof(a.engine)) == 0;
          },
          [](const CallRecord& r) { return str("engine '", r.engine, "'"); })) {
    e = CollectiveError(e->kind(),
                        str(e->what(),
                            ": every rank of a group must run the same engine (the same device "
                            "type, RUCCL_ENGINE and build)"),
                        e->ranks());
    return e;
  }

  // 2. A rank whose own arguments were invalid: everyone raises its error.
  std::vector<int> failed;
  for (int r = 0; r < static_cast<int>(all.size()); ++r) {
    if (all[static_cast<std::size_t>(r)].error_kind != CallRecord::kNone) failed.push_back(r);
  }
  if (!failed.empty()) {
    const CallRecord& f = all[static_cast<std::size_t>(failed[0])];
    return CollectiveError(static_cast<CollectiveErrorKind>(f.error_kind),
                           str(prefix, f.error_message), failed);
  }

  // 3. Root and reduce operation.
  if (uses_root(kind)) {
    if (auto e = compare(
            all, names, prefix, CollectiveErrorKind::RootMismatch, "root", 0, everyone,
            [](const CallRecord& a, const CallRecord& b) { return a.root == b.root; },
            [](const CallRecord& r) { return std::to_string(r.root); })) {
      return e;
    }
  }
  if (uses_reduce_op(kind)) {
    if (auto e = compare(
            all, names, prefix, CollectiveErrorKind::ReduceOperationMismatch, "reduce operation", 0,
            everyone,
            [](const CallRecord& a, const CallRecord& b) { return a.reduce_op == b.reduce_op; },
            [](const CallRecord& r) {
              return std::string(reduce_operation_name(static_cast<ReduceOperation>(r.reduce_op)));
            })) {
      return e;
    }
  }

  // 4. Who holds a tensor, dtype and shape.
  const ShapeRule rule = shape_rule(kind);
  int ref = 0;
  auto has_tensor = [](const CallRecord& r) { return r.has_tensor != 0; };
  if (rule == ShapeRule::Sender) {
    std::vector<int> senders;
    for (int r = 0; r < static_cast<int>(all.size()); ++r) {
      if (has_tensor(all[static_cast<std::size_t>(r)])) senders.push_back(r);
    }
    if (senders.empty()) {
      return CollectiveError(CollectiveErrorKind::NoBroadcastSender,
                             str(prefix,
                                 "no rank passed a tensor to broadcast (expected exactly one "
                                 "sender, got 0)"));
    }
    if (senders.size() > 1) {
      std::ostringstream out;
      out << prefix
          << "several ranks passed a tensor to broadcast (expected exactly one sender, got "
          << senders.size() << ": " << names.list(senders) << ')';
      return CollectiveError(CollectiveErrorKind::SeveralBroadcastSenders, out.str(), senders);
    }
    return std::nullopt;
  }
  if (rule != ShapeRule::None) {
    ref = rule == ShapeRule::FromRoot ? first.root : 0;
    auto takes_part = rule == ShapeRule::FromRoot
                          ? std::function<bool(const CallRecord&)>(has_tensor)
                          : std::function<bool(const CallRecord&)>(everyone);
    if (auto e = compare(
            all, names, prefix, CollectiveErrorKind::DTypeMismatch, "dtype", ref, takes_part,
            [](const CallRecord& a, const CallRecord& b) { return a.dtype == b.dtype; },
            dtype_text)) {
      return e;
    }
    const bool trailing = rule == ShapeRule::Trailing;
    if (auto e = compare(
            all, names, prefix, CollectiveErrorKind::ShapeMismatch, "shape", ref, takes_part,
            [trailing](const CallRecord& a, const CallRecord& b) {
              if (a.ndim != b.ndim) return false;
              for (int d = trailing ? 1 : 0; d < a.ndim; ++d) {
                if (a.dims[d] != b.dims[d]) return false;
              }
              return true;
            },
            [trailing](const CallRecord& r) { return shape_text(r, trailing); })) {
      return e;
    }
  }

  // 5. The algorithm (per-call choices must agree), then higher layers' words.
  if (auto e = compare(
          all, names, prefix, CollectiveErrorKind::ArgumentMismatch, "algorithm", 0, everyone,
          [](const CallRecord& a, const CallRecord& b) {
            return a.algorithm == b.algorithm && a.tree_arity == b.tree_arity;
          },
          [](const CallRecord& r) {
            const char* name = algorithm_name(static_cast<Algorithm>(r.algorithm));
            return r.algorithm == static_cast<std::uint8_t>(Algorithm::Tree)
                       ? str("tree(", r.tree_arity, ")")
                       : std::string(name != nullptr ? name : "?");
          })) {
    return e;
  }
  if (auto e = compare(
          all, names, prefix, CollectiveErrorKind::ArgumentMismatch, "argument count", 0, everyone,
          [](const CallRecord& a, const CallRecord& b) { return a.num_words == b.num_words; },
          [](const CallRecord& r) { return str(r.num_words, " words"); })) {
    return e;
  }
  for (int w = 0; w < first.num_words; ++w) {
    const std::string what = str("argument '", first.word_names[w], "'");
    if (auto e = compare(
            all, names, prefix, CollectiveErrorKind::ArgumentMismatch, what.c_str(), 0, everyone,
            [w](const CallRecord& a, const CallRecord& b) { return a.words[w] == b.words[w]; },
            [w](const CallRecord& r) { return std::to_string(r.words[w]); })) {
      return e;
    }
  }
  return std::nullopt;
}

}  // namespace ruccl
