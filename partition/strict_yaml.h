// YAML as heterod reads it (affinity policies, the daemon's config): a
// syntax error, or a key given twice in one mapping, is an error naming
// the file and line. yaml-cpp itself keeps a repeated key silently, and
// which of the two a lookup then finds depends on how it looks; a second
// `limits:` pasted below the first must not quietly win or lose.
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>

namespace hetero::partition {

// Parses `text`; fails with INVALID_ARGUMENT "SOURCE:LINE: ..." (what the
// parser says, or "'KEY' is given twice (first at line N)").
YAML::Node load_strict_yaml(const std::string& text, const std::string& source);

}  // namespace hetero::partition
