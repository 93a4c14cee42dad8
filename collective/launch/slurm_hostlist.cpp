// Slurm host lists and tasks-per-node lists. Both are parsed into a small description first
// (ranges, run lengths) so that counting never expands and expanding stops at the cap.
#include "collective/launch/slurm_hostlist.h"

#include <cstdint>
#include <limits>
#include <optional>

#include "collective/common/collective_error.h"
#include "collective/common/env.h"

namespace ruccl {
namespace {

constexpr std::size_t kSaturated = std::numeric_limits<std::size_t>::max();

std::size_t saturating_add(std::size_t a, std::size_t b) {
  return a > kSaturated - b ? kSaturated : a + b;
}
std::size_t saturating_mul(std::size_t a, std::size_t b) {
  return (a != 0 && b > kSaturated / a) ? kSaturated : a * b;
}

struct NumberRange {
  std::uint64_t lo = 0, hi = 0;
  std::size_t width = 0;  // zero padding: the digits of the low bound
};

// One host pattern: literals[0] group[0] literals[1] group[1] ... literals[n].
struct HostPattern {
  std::vector<std::string> literals;
  std::vector<std::vector<NumberRange>> groups;
};

[[noreturn]] void bad_hostlist(std::string_view list, const std::string& detail) {
  throw CollectiveError(CollectiveErrorKind::InvalidConfig,
                        str("expected a Slurm host list like \"node[01-03,7],gpu5\", got ",
                            quote_env_value(list), " (", detail, ")"));
}

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '.' || c == '_';
}

std::vector<NumberRange> parse_group(std::string_view list, std::string_view body,
                                     std::size_t offset) {
  std::vector<NumberRange> ranges;
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = body.find(',', start);
    const std::string_view item =
        body.substr(start, comma == std::string_view::npos ? body.npos : comma - start);
    const std::size_t dash = item.find('-');
    const std::string_view lo_text = item.substr(0, dash);
    const std::string_view hi_text =
        dash == std::string_view::npos ? lo_text : item.substr(dash + 1);
    const std::optional<std::uint64_t> lo = parse_decimal(lo_text);
    const std::optional<std::uint64_t> hi = parse_decimal(hi_text);
    if (!lo || !hi) {
      bad_hostlist(list, str("expected a number or a range lo-hi at offset ", offset + start,
                             ", got ", quote_env_value(item)));
    }
    if (*hi < *lo) {
      bad_hostlist(list, str("the range ", quote_env_value(item), " at offset ", offset + start,
                             " runs backwards"));
    }
    ranges.push_back(NumberRange{*lo, *hi, lo_text.size()});
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return ranges;
}

std::vector<HostPattern> parse_hostlist(std::string_view list) {
  std::vector<HostPattern> patterns;
  if (list.empty()) bad_hostlist(list, "it is empty");
  std::size_t i = 0;
  while (true) {
    HostPattern pattern;
    pattern.literals.emplace_back();
    const std::size_t element_start = i;
    while (i < list.size() && list[i] != ',') {
      const char c = list[i];
      if (c == '[') {
        const std::size_t close = list.find(']', i);
        const std::size_t nested = list.find('[', i + 1);
        if (close == std::string_view::npos ||
            (nested != std::string_view::npos && nested < close)) {
          bad_hostlist(list, str("the '[' at offset ", i, " is not closed"));
        }
        pattern.groups.push_back(parse_group(list, list.substr(i + 1, close - i - 1), i + 1));
        pattern.literals.emplace_back();
        i = close + 1;
      } else if (is_name_char(c)) {
        pattern.literals.back() += c;
        ++i;
      } else {
        bad_hostlist(list, str("unexpected ", quote_env_value(std::string_view(&list[i], 1)),
                               " at offset ", i));
      }
    }
    if (i == element_start) bad_hostlist(list, str("empty host name at offset ", i));
    patterns.push_back(std::move(pattern));
    if (i == list.size()) break;
    ++i;  // the ','
    if (i == list.size()) bad_hostlist(list, str("empty host name at offset ", i));
  }
  return patterns;
}

std::size_t count_of(const HostPattern& pattern) {
  std::size_t count = 1;
  for (const auto& group : pattern.groups) {
    std::size_t in_group = 0;
    for (const NumberRange& range : group) {
      const std::uint64_t n = range.hi - range.lo + 1;  // hi < 10^18: no overflow
      in_group =
          saturating_add(in_group, n > kSaturated ? kSaturated : static_cast<std::size_t>(n));
    }
    count = saturating_mul(count, in_group);
  }
  return count;
}

std::string padded(std::uint64_t value, std::size_t width) {
  std::string digits = std::to_string(value);
  if (digits.size() < width) digits.insert(0, width - digits.size(), '0');
  return digits;
}

// Appends every host of `pattern` from group `g` on, after `prefix`, stopping at `max_hosts`.
void expand_pattern(const HostPattern& pattern, std::size_t g, const std::string& prefix,
                    std::vector<std::string>& out, std::size_t max_hosts, std::string_view list) {
  const std::string head = prefix + pattern.literals[g];
  if (g == pattern.groups.size()) {
    if (out.size() >= max_hosts) bad_hostlist(list, str("more than ", max_hosts, " hosts"));
    out.push_back(head);
    return;
  }
  for (const NumberRange& range : pattern.groups[g]) {
    for (std::uint64_t v = range.lo;; ++v) {
      expand_pattern(pattern, g + 1, head + padded(v, range.width), out, max_hosts, list);
      if (v == range.hi) break;
    }
  }
}

}  // namespace

std::vector<std::string> expand_slurm_hostlist(std::string_view list, std::size_t max_hosts) {
  const std::vector<HostPattern> patterns = parse_hostlist(list);
  std::vector<std::string> hosts;
  for (const HostPattern& pattern : patterns)
    expand_pattern(pattern, 0, "", hosts, max_hosts, list);
  return hosts;
}

std::size_t count_slurm_hosts(std::string_view list) {
  std::size_t count = 0;
  for (const HostPattern& pattern : parse_hostlist(list))
    count = saturating_add(count, count_of(pattern));
  return count;
}

std::string first_slurm_host(std::string_view list) {
  const std::vector<HostPattern> patterns = parse_hostlist(list);
  const HostPattern& first = patterns.front();
  std::string host = first.literals[0];
  for (std::size_t g = 0; g < first.groups.size(); ++g) {
    host += padded(first.groups[g].front().lo, first.groups[g].front().width);
    host += first.literals[g + 1];
  }
  return host;
}

std::vector<int> expand_slurm_tasks_per_node(std::string_view text, std::size_t max_nodes) {
  const auto bad = [&](const std::string& detail) -> void {
    throw CollectiveError(CollectiveErrorKind::InvalidConfig,
                          str("expected a Slurm tasks-per-node list like \"2(x3),1\", got ",
                              quote_env_value(text), " (", detail, ")"));
  };
  std::vector<int> counts;
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = text.find(',', start);
    const std::string_view item =
        text.substr(start, comma == std::string_view::npos ? text.npos : comma - start);
    std::string_view count_text = item;
    std::uint64_t repeat = 1;
    if (const std::size_t open = item.find('('); open != std::string_view::npos) {
      count_text = item.substr(0, open);
      const std::string_view tail = item.substr(open);  // "(xM)"
      const std::optional<std::uint64_t> m =
          tail.size() > 3 && tail.substr(0, 2) == "(x" && tail.back() == ')'
              ? parse_decimal(tail.substr(2, tail.size() - 3))
              : std::nullopt;
      if (!m || *m == 0)
        bad(str("expected \"(xM)\" with M >= 1 after the count at offset ", start, ", got ",
                quote_env_value(tail)));
      repeat = *m;
    }
    const std::optional<std::uint64_t> count = parse_decimal(count_text);
    if (!count || *count == 0 ||
        *count > static_cast<std::uint64_t>(std::numeric_limits<int>::max())) {
      bad(str("expected a task count in [1, 2^31) at offset ", start, ", got ",
              quote_env_value(count_text)));
    }
    if (repeat > max_nodes - counts.size()) bad(str("more than ", max_nodes, " nodes"));
    counts.insert(counts.end(), static_cast<std::size_t>(repeat), static_cast<int>(*count));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return counts;
}

}  // namespace ruccl
