// UTF-8 for the strings the protocols carry. Protobuf's `string` fields
// must hold valid UTF-8: a client's parser rejects a message with anything
// else, so one bad model name in a listing would break every listing.
#pragma once

#include <string>
#include <string_view>

namespace hetero::wire {

// Whether `text` is well-formed UTF-8 (no overlong forms, no surrogates,
// nothing above U+10FFFF), as protobuf checks it.
bool is_valid_utf8(std::string_view text);
// `text` with each byte that is not part of well-formed UTF-8 written as
// \xNN: safe to send, and still says which bytes were there.
std::string escape_invalid_utf8(std::string_view text);

}  // namespace hetero::wire
