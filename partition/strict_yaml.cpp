#include "partition/strict_yaml.h"

#include <map>
#include <vector>

#include "core/error.h"

namespace hetero::partition {

YAML::Node load_strict_yaml(const std::string& text, const std::string& source) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    fail(HETERO_INVALID_ARGUMENT, source + ":" + std::to_string(e.mark.line + 1) + ": malformed YAML: " + e.msg);
  }
  // Every mapping, with a stack of our own: the document's nesting is the
  // file's to choose, this thread's stack is not.
  std::vector<YAML::Node> pending{root};
  while (!pending.empty()) {
    const YAML::Node node = pending.back();
    pending.pop_back();
    if (node.IsSequence()) {
      for (const YAML::Node& item : node) pending.push_back(item);
    } else if (node.IsMap()) {
      std::map<std::string, int> first_line;
      for (const auto& kv : node) {
        if (kv.first.IsScalar()) {
          const int line = kv.first.Mark().line + 1;
          const auto [seen, added] = first_line.emplace(kv.first.Scalar(), line);
          if (!added)
            fail(HETERO_INVALID_ARGUMENT, source + ":" + std::to_string(line) + ": '" + kv.first.Scalar() +
                                              "' is given twice (first at line " + std::to_string(seen->second) +
                                              ")");
        }
        pending.push_back(kv.second);
      }
    }
  }
  return root;
}

}  // namespace hetero::partition
