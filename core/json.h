// The JSON the library writes (statistics, HETERO plans, blob descriptions),
// built as jansson documents: every string is escaped by the library, whatever
// a model, file or device name holds.
#pragma once

#include <jansson.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace hetero::core::json {

struct Release {
  void operator()(json_t* value) const noexcept { json_decref(value); }
};
// An owned reference to a JSON value.
using Value = std::unique_ptr<json_t, Release>;

Value object();
Value array();
// `text` as a JSON string; bytes that are not UTF-8 become U+FFFD, so that
// names from files (which promise nothing) still make a valid document.
Value string(std::string_view text);
Value integer(int64_t value);
// `value` rounded to `decimals` places (latencies, rates).
Value number(double value, int decimals);

// Adds to an object (keys keep their order) or to an array. Fail with
// HETERO_OUT_OF_MEMORY when jansson cannot.
void set(json_t* object, const char* key, Value value);
void append(json_t* array, Value value);

// The document on one line, ending in a newline.
std::string dump(const json_t* document);

}  // namespace hetero::core::json
