#include "capi/npy.h"

#include <bit>
#include <cstring>
#include <limits>
#include <optional>
#include <string_view>

#include "core/error.h"

namespace hetero::capi {

namespace {

static_assert(std::endian::native == std::endian::little,
              "the .npy reader maps '<' (and '=') types directly onto memory");

constexpr char kMagic[6] = {'\x93', 'N', 'U', 'M', 'P', 'Y'};
// NumPy itself refuses headers above 10000 bytes unless told otherwise; a
// plain array's header is under 200. Anything longer is not a file we want.
constexpr size_t kMaxHeaderLen = 65536;
// NumPy's own limit on the number of dimensions.
constexpr size_t kMaxRank = 64;

// One table from (kind, size) to dtype, also used for writing.
struct NpyType {
  char kind;
  size_t size;
  core::DType dtype;
};
constexpr NpyType kTypes[] = {
    {'f', 2, core::DType::F16}, {'f', 4, core::DType::F32}, {'f', 8, core::DType::F64},
    {'i', 1, core::DType::I8},  {'i', 2, core::DType::I16}, {'i', 4, core::DType::I32},
    {'i', 8, core::DType::I64}, {'u', 1, core::DType::U8},  {'u', 2, core::DType::U16},
    {'u', 4, core::DType::U32}, {'u', 8, core::DType::U64}, {'b', 1, core::DType::Bool},
};

// A recursive-descent reader of the header, which is a Python dict literal
// such as {'descr': '<f4', 'fortran_order': False, 'shape': (1, 3), }.
// Every error names the file and the byte offset inside the header.
class HeaderParser {
 public:
  HeaderParser(std::string_view text, const std::string& name) : text_(text), name_(name) {}

  [[noreturn]] void error(const std::string& what) const {
    fail(HETERO_INVALID_ARGUMENT,
         name_ + ": malformed .npy header at offset " + std::to_string(pos_) + ": " + what);
  }

  void skip_space() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t')) ++pos_;
  }
  bool at_end() const { return pos_ >= text_.size(); }
  size_t remaining() const { return text_.size() - pos_; }
  char peek() const { return at_end() ? '\0' : text_[pos_]; }
  bool accept(char c) {
    skip_space();
    if (peek() != c) return false;
    ++pos_;
    return true;
  }
  void expect(char c, const char* what) {
    if (!accept(c)) error(std::string("expected ") + what);
  }

  // 'text' or "text", without escapes (NumPy never writes any).
  std::string string_literal() {
    skip_space();
    const char quote = peek();
    if (quote != '\'' && quote != '"') error("expected a quoted string");
    ++pos_;
    const size_t start = pos_;
    while (!at_end() && text_[pos_] != quote && text_[pos_] != '\n') {
      if (text_[pos_] == '\\') error("escape sequences are not supported in header strings");
      ++pos_;
    }
    if (peek() != quote) error("unterminated string");
    return std::string(text_.substr(start, pos_++ - start));
  }

  bool boolean() {
    skip_space();
    for (const auto& [word, value] : {std::pair{std::string_view("True"), true}, {"False", false}}) {
      if (text_.substr(pos_, word.size()) == word) {
        pos_ += word.size();
        return value;
      }
    }
    error("expected True or False");
  }

  // (), (3,), (1, 3) — non-negative integers, Python 2's 'L' suffix allowed.
  core::Shape shape_tuple() {
    expect('(', "'(' opening the shape");
    core::Shape shape;
    for (;;) {
      if (accept(')')) return shape;
      skip_space();
      if (peek() < '0' || peek() > '9') error("expected a non-negative dimension");
      uint64_t v = 0;
      while (peek() >= '0' && peek() <= '9') {
        const uint64_t digit = static_cast<uint64_t>(peek() - '0');
        if (v > (static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) - digit) / 10)
          error("dimension is too large");
        v = v * 10 + digit;
        ++pos_;
      }
      if (peek() == 'L') ++pos_;
      if (shape.size() == kMaxRank) error("more than " + std::to_string(kMaxRank) + " dimensions");
      shape.push_back(static_cast<int64_t>(v));
      if (accept(')')) {
        if (shape.size() == 1) error("a one-element shape tuple needs a trailing comma");
        return shape;
      }
      expect(',', "',' or ')' in the shape");
    }
  }

 private:
  std::string_view text_;
  const std::string& name_;
  size_t pos_ = 0;
};

struct Header {
  core::DType dtype = core::DType::Undefined;
  core::Shape shape;
};

core::DType dtype_from_descr(const std::string& descr, const std::string& name) {
  auto unsupported = [&](const std::string& why) {
    fail(HETERO_NOT_SUPPORTED, name + ": .npy dtype '" + descr + "' is not supported (" + why + ")");
  };
  if (descr.size() < 3) unsupported("not a plain numeric or bool type");
  const char order = descr[0], kind = descr[1];
  size_t size = 0;
  for (size_t i = 2; i < descr.size(); ++i) {
    if (descr[i] < '0' || descr[i] > '9' || size > 1000) unsupported("not a plain numeric or bool type");
    size = size * 10 + static_cast<size_t>(descr[i] - '0');
  }
  const NpyType* type = nullptr;
  for (const NpyType& t : kTypes)
    if (t.kind == kind && t.size == size) type = &t;
  if (!type) unsupported("heterod tensors are numeric or bool");
  if (size > 1 && order == '>') unsupported("big-endian data; convert with arr.astype(arr.dtype.newbyteorder('<'))");
  if (size > 1 && order == '|') unsupported("'|' (no byte order) is only valid for one-byte types");
  if (order != '<' && order != '>' && order != '|' && order != '=') unsupported("unknown byte order");
  return type->dtype;
}

Header parse_header(std::string_view text, const std::string& name) {
  HeaderParser p(text, name);
  std::optional<std::string> descr;
  std::optional<bool> fortran_order;
  std::optional<core::Shape> shape;
  p.expect('{', "'{' opening the header dict");
  while (!p.accept('}')) {
    const std::string key = p.string_literal();
    p.expect(':', "':' after a key");
    if (key == "descr") {
      if (descr) p.error("key 'descr' appears twice");
      p.skip_space();
      if (p.peek() == '[') fail(HETERO_NOT_SUPPORTED, name + ": .npy files of structured dtypes are not supported");
      descr = p.string_literal();
    } else if (key == "fortran_order") {
      if (fortran_order) p.error("key 'fortran_order' appears twice");
      fortran_order = p.boolean();
    } else if (key == "shape") {
      if (shape) p.error("key 'shape' appears twice");
      shape = p.shape_tuple();
    } else {
      p.error("unexpected key '" + key + "'");
    }
    if (!p.accept(',')) {
      p.expect('}', "',' or '}' after a value");
      break;
    }
  }
  // The rest is padding: spaces, then the newline that ends the header.
  p.skip_space();
  if (p.peek() != '\n' || p.remaining() != 1) p.error("expected only spaces and a final newline after the dict");
  if (!descr) p.error("key 'descr' is missing");
  if (!fortran_order) p.error("key 'fortran_order' is missing");
  if (!shape) p.error("key 'shape' is missing");
  if (*fortran_order)
    fail(HETERO_NOT_SUPPORTED, name + ": .npy data in Fortran order is not supported; save with "
                                      "np.ascontiguousarray(arr)");
  return {dtype_from_descr(*descr, name), std::move(*shape)};
}

const NpyType& npy_type_of(core::DType dtype) {
  for (const NpyType& t : kTypes)
    if (t.dtype == dtype) return t;
  fail(HETERO_NOT_SUPPORTED, std::string("tensors of type ") + core::dtype_name(dtype) + " have no .npy form");
}

}  // namespace

bool npy_has_magic(std::span<const uint8_t> bytes) noexcept {
  return bytes.size() >= sizeof kMagic && std::memcmp(bytes.data(), kMagic, sizeof kMagic) == 0;
}

core::Tensor npy_decode(std::span<const uint8_t> bytes, const std::string& name) {
  auto bad = [&](const std::string& what) { fail(HETERO_INVALID_ARGUMENT, name + ": not a valid .npy file: " + what); };
  if (!npy_has_magic(bytes)) bad("it does not start with \\x93NUMPY");
  if (bytes.size() < 10) bad("it is truncated inside the preamble");
  const uint8_t major = bytes[6], minor = bytes[7];
  if (major < 1 || major > 3 || minor != 0)
    fail(HETERO_NOT_SUPPORTED,
         name + ": .npy format version " + std::to_string(major) + "." + std::to_string(minor) + " is not supported");
  size_t preamble = 10, header_len = bytes[8] | static_cast<size_t>(bytes[9]) << 8;
  if (major >= 2) {
    if (bytes.size() < 12) bad("it is truncated inside the preamble");
    preamble = 12;
    header_len |= static_cast<size_t>(bytes[10]) << 16 | static_cast<size_t>(bytes[11]) << 24;
  }
  if (header_len > kMaxHeaderLen)
    bad("the header claims " + std::to_string(header_len) + " bytes (at most " + std::to_string(kMaxHeaderLen) +
        " accepted)");
  if (header_len > bytes.size() - preamble)
    bad("the header claims " + std::to_string(header_len) + " bytes, the file has " +
        std::to_string(bytes.size() - preamble) + " after the preamble");
  const std::string_view text(reinterpret_cast<const char*>(bytes.data() + preamble), header_len);
  // A NUL or other control byte means a binary file, not a dict literal.
  for (char c : text)
    if (static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\t') bad("the header holds a control character");
  const Header header = parse_header(text, name);

  size_t numel = 0;
  try {
    // Bounded by core's tensor size limit, so numel * elem cannot overflow.
    numel = core::shape_numel(header.shape);
  } catch (const Failure& e) {
    bad(e.what());
  }
  const size_t elem = core::dtype_size(header.dtype);
  const size_t data_size = bytes.size() - preamble - header_len;
  if (numel * elem != data_size)
    bad("shape " + core::shape_to_string(header.shape) + " of " + core::dtype_name(header.dtype) + " needs " +
        std::to_string(numel * elem) + " bytes of data, the file has " + std::to_string(data_size));
  const uint8_t* data = bytes.data() + preamble + header_len;
  if (header.dtype == core::DType::Bool)
    for (size_t i = 0; i < numel; ++i)
      if (data[i] > 1) bad("bool element " + std::to_string(i) + " is " + std::to_string(data[i]) + ", not 0 or 1");

  core::Tensor t = core::Tensor::allocate(header.dtype, header.shape, false);
  if (data_size) std::memcpy(t.raw(), data, data_size);
  return t;
}

std::vector<uint8_t> npy_encode(const core::Tensor& tensor) {
  const NpyType& type = npy_type_of(tensor.dtype());
  std::string dict = "{'descr': '";
  dict += type.size == 1 ? '|' : '<';
  dict += type.kind + std::to_string(type.size) + "', 'fortran_order': False, 'shape': (";
  for (size_t i = 0; i < tensor.rank(); ++i) dict += (i ? ", " : "") + std::to_string(tensor.dim(i));
  dict += tensor.rank() == 1 ? ",), }" : "), }";
  // NumPy pads the header with spaces so that the data starts on a 64-byte
  // boundary, and ends it with a newline.
  const bool v2 = 10 + dict.size() + 1 > 65535;
  const size_t preamble = v2 ? 12 : 10;
  const size_t total = (preamble + dict.size() + 1 + 63) / 64 * 64;
  dict.append(total - preamble - dict.size() - 1, ' ');
  dict += '\n';

  std::vector<uint8_t> out(kMagic, kMagic + sizeof kMagic);
  out.push_back(v2 ? 2 : 1);
  out.push_back(0);
  for (size_t i = 0; i < preamble - 8; ++i) out.push_back(static_cast<uint8_t>(dict.size() >> (8 * i)));
  out.insert(out.end(), dict.begin(), dict.end());
  const auto* data = static_cast<const uint8_t*>(tensor.raw());
  if (tensor.nbytes()) out.insert(out.end(), data, data + tensor.nbytes());
  return out;
}

}  // namespace hetero::capi
