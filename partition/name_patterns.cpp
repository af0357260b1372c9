#include "partition/name_patterns.h"

#include <fnmatch.h>

#include <algorithm>

namespace hetero::partition {

namespace {

constexpr std::string_view kMetacharacters("*?[\\\0", 5);

bool has_metacharacter(std::string_view s) { return s.find_first_of(kMetacharacters) != std::string_view::npos; }

}  // namespace

NamePatterns::NamePatterns(std::vector<std::string> listed, Globs globs) : listed_(std::move(listed)) {
  exact_.reserve(listed_.size());
  for (const std::string& name : listed_) {
    exact_.insert(name);
    if (globs == Globs::None || !has_metacharacter(name)) continue;
    const std::string_view head = std::string_view(name).substr(0, name.size() - 1);
    if (name.back() == '*' && !has_metacharacter(head)) {
      prefixes_.emplace(head);
      prefix_sizes_.push_back(head.size());
    } else {
      globs_.push_back(name);
    }
  }
  std::sort(prefix_sizes_.begin(), prefix_sizes_.end());
  prefix_sizes_.erase(std::unique(prefix_sizes_.begin(), prefix_sizes_.end()), prefix_sizes_.end());
}

bool NamePatterns::matches(std::string_view name) const {
  if (exact_.find(name) != exact_.end()) return true;
  for (const size_t size : prefix_sizes_) {
    if (size > name.size()) break;
    if (prefixes_.find(name.substr(0, size)) != prefixes_.end()) return true;
  }
  if (globs_.empty()) return false;
  // fnmatch(3) wants a terminated string.
  const std::string terminated(name);
  return std::any_of(globs_.begin(), globs_.end(),
                     [&](const std::string& glob) { return fnmatch(glob.c_str(), terminated.c_str(), 0) == 0; });
}

}  // namespace hetero::partition
