// The names a policy rule lists (node names or op types), compiled once when
// the policy is read, so that matching a node costs a few hash lookups
// however many names the rule lists. A policy may name tens of thousands of
// nodes one by one; testing each of them against every node was quadratic
// (93 s for a 100k-node model naming half of its nodes).
//
// A listed name matches a node name equal to it. With globs allowed (node
// names), a name with fnmatch(3) metacharacters (* ? [ \) also matches as a
// pattern (flags 0: '*' crosses '/'); such a pattern that is a plain prefix
// followed by one '*' ("head/*") is looked up by prefix instead of scanned.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

namespace hetero::partition {

class NamePatterns {
 public:
  enum class Globs { Allowed, None };

  NamePatterns() = default;
  NamePatterns(std::vector<std::string> listed, Globs globs);

  // The names as the policy lists them.
  const std::vector<std::string>& listed() const noexcept { return listed_; }
  bool empty() const noexcept { return listed_.empty(); }
  bool matches(std::string_view name) const;

 private:
  // Lookups by std::string_view, without building a std::string per probe.
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
  };
  using Set = std::unordered_set<std::string, Hash, std::equal_to<>>;

  std::vector<std::string> listed_;
  Set exact_;                         // every listed name, matched literally
  Set prefixes_;                      // "head/*" as "head/"
  std::vector<size_t> prefix_sizes_;  // the distinct sizes in prefixes_, ascending
  std::vector<std::string> globs_;    // other patterns, through fnmatch(3)
};

}  // namespace hetero::partition
