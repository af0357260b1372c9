#include "core/json.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "core/error.h"

namespace hetero::core::json {

namespace {

Value checked(json_t* value) {
  if (!value) fail(HETERO_OUT_OF_MEMORY, "out of memory while writing JSON");
  return Value(value);
}

// Length of the UTF-8 sequence at the start of `s`, as jansson judges UTF-8
// (its shortest valid prefix), or 0 when the first byte starts none.
size_t utf8_sequence(std::string_view s) {
  for (size_t n = 1; n <= std::min<size_t>(4, s.size()); ++n) {
    if (json_t* probe = json_stringn(s.data(), n)) {
      json_decref(probe);
      return n;
    }
  }
  return 0;
}

}  // namespace

Value object() { return checked(json_object()); }
Value array() { return checked(json_array()); }
Value integer(int64_t value) { return checked(json_integer(static_cast<json_int_t>(value))); }

Value number(double value, int decimals) {
  const double scale = std::pow(10.0, decimals);
  return checked(json_real(std::isfinite(value) ? std::round(value * scale) / scale : 0.0));
}

Value string(std::string_view text) {
  if (json_t* valid = json_stringn(text.data(), text.size())) return Value(valid);
  std::string repaired;
  while (!text.empty()) {
    const size_t n = utf8_sequence(text);
    repaired.append(n ? text.substr(0, n) : std::string_view("\xEF\xBF\xBD"));  // U+FFFD
    text.remove_prefix(n ? n : 1);
  }
  return checked(json_stringn(repaired.data(), repaired.size()));
}

void set(json_t* object, const char* key, Value value) {
  // json_object_set_new takes the reference even when it fails.
  if (json_object_set_new(object, key, value.release()) != 0)
    fail(HETERO_OUT_OF_MEMORY, std::string("out of memory while writing JSON key '") + key + "'");
}

void append(json_t* array, Value value) {
  if (json_array_append_new(array, value.release()) != 0) fail(HETERO_OUT_OF_MEMORY, "out of memory while writing JSON");
}

std::string dump(const json_t* document) {
  // 15 significant digits: rounded figures print as rounded (0.1, not
  // 0.10000000000000001).
  char* text = json_dumps(document, JSON_REAL_PRECISION(15));
  if (!text) fail(HETERO_OUT_OF_MEMORY, "out of memory while writing JSON");
  std::string out(text);
  std::free(text);
  return out + "\n";
}

}  // namespace hetero::core::json
