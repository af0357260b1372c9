// The .npy codec behind hetero_tensor_read_file / hetero_tensor_write_npy:
// round trips, the files NumPy writes, and malformed files, which must fail
// with a status and a message, never crash or allocate what the header claims.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "capi/npy.h"
#include "core/error.h"

using namespace hetero;
using hetero::capi::npy_decode;
using hetero::capi::npy_encode;
using hetero::core::DType;
using hetero::core::Tensor;

namespace {

using Bytes = std::vector<uint8_t>;

// A .npy file as NumPy lays it out: magic, version, header length, the dict
// padded with spaces to a 64-byte boundary, a newline, then `data`.
Bytes npy_file(const std::string& dict, const Bytes& data, uint8_t major = 1) {
  const size_t preamble = major == 1 ? 10 : 12;
  std::string header = dict;
  while ((preamble + header.size() + 1) % 64) header += ' ';
  header += '\n';
  Bytes out = {0x93, 'N', 'U', 'M', 'P', 'Y', major, 0};
  for (size_t i = 0; i < preamble - 8; ++i) out.push_back(static_cast<uint8_t>(header.size() >> (8 * i)));
  out.insert(out.end(), header.begin(), header.end());
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

Bytes float_bytes(std::vector<float> v) {
  Bytes b(v.size() * sizeof(float));
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

// Decoding `bytes` fails with `status` and a message containing `needle`.
void expect_error(const Bytes& bytes, hetero_status status, const std::string& needle) {
  try {
    npy_decode(bytes, "in.npy");
    ADD_FAILURE() << "accepted a file that should fail with '" << needle << "'";
  } catch (const Failure& e) {
    EXPECT_EQ(e.status(), status) << e.what();
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("in.npy"), std::string::npos) << "message does not name the file: " << e.what();
  }
}

const char* const kPlain = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";

}  // namespace

TEST(Npy, ReadsWhatNumPyWrites) {
  const Tensor t = npy_decode(npy_file(kPlain, float_bytes({0, 1, 2, 3, 4, 5.5f})), "in.npy");
  EXPECT_EQ(t.dtype(), DType::F32);
  EXPECT_EQ(t.shape(), (core::Shape{2, 3}));
  EXPECT_EQ(t.data<float>()[5], 5.5f);
}

TEST(Npy, AcceptsVersions2And3AndOldSpellings) {
  EXPECT_EQ(npy_decode(npy_file(kPlain, float_bytes({0, 1, 2, 3, 4, 5}), 2), "v2").numel(), 6u);
  EXPECT_EQ(npy_decode(npy_file(kPlain, float_bytes({0, 1, 2, 3, 4, 5}), 3), "v3").numel(), 6u);
  // Double quotes, no trailing comma, keys in another order, Python 2's 3L.
  const Tensor t = npy_decode(
      npy_file("{\"shape\": (3L,), \"fortran_order\": False, \"descr\": \"|u1\"}", {7, 8, 9}), "in.npy");
  EXPECT_EQ(t.dtype(), DType::U8);
  EXPECT_EQ(t.shape(), (core::Shape{3}));
}

TEST(Npy, ScalarAndEmptyArrays) {
  const Tensor s = npy_decode(npy_file("{'descr': '<i8', 'fortran_order': False, 'shape': (), }",
                                       {42, 0, 0, 0, 0, 0, 0, 0}),
                              "in.npy");
  EXPECT_EQ(s.rank(), 0u);
  EXPECT_EQ(s.data<int64_t>()[0], 42);
  const Tensor e = npy_decode(npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (0, 5), }", {}), "in.npy");
  EXPECT_EQ(e.numel(), 0u);
  EXPECT_EQ(e.shape(), (core::Shape{0, 5}));
}

TEST(Npy, RoundTripsEveryDType) {
  for (DType d : {DType::F32, DType::F64, DType::F16, DType::I8, DType::I16, DType::I32, DType::I64, DType::U8,
                  DType::U16, DType::U32, DType::U64, DType::Bool}) {
    for (const core::Shape& shape : {core::Shape{}, core::Shape{5}, core::Shape{2, 3, 4}}) {
      Tensor t = Tensor::allocate(d, shape);
      auto* p = static_cast<uint8_t*>(t.raw());
      for (size_t i = 0; i < t.nbytes(); ++i) p[i] = d == DType::Bool ? (i & 1) : static_cast<uint8_t>(i * 7 + 1);
      const Bytes file = npy_encode(t);
      // NumPy's layout: the data starts on a 64-byte boundary after a newline.
      ASSERT_EQ(file.size() - t.nbytes(), 128u) << core::dtype_name(d);
      EXPECT_EQ(file[127], '\n');
      const Tensor back = npy_decode(file, "rt.npy");
      EXPECT_EQ(back.dtype(), d);
      EXPECT_EQ(back.shape(), shape);
      EXPECT_EQ(std::memcmp(back.raw(), t.raw(), t.nbytes()), 0) << core::dtype_name(d);
    }
  }
}

TEST(Npy, EncodesHeaderAsNumPyDoes) {
  const Bytes file = npy_encode(Tensor::allocate(DType::F32, {3}));
  const std::string header(file.begin() + 10, file.begin() + 128);
  EXPECT_EQ(header.rfind("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", 0), 0u) << header;
  EXPECT_EQ(file[6], 1);
}

TEST(Npy, RefusesTypesWithoutNumPyForm) {
  try {
    npy_encode(Tensor::allocate(DType::BF16, {2}));
    ADD_FAILURE() << "bfloat16 encoded";
  } catch (const Failure& e) {
    EXPECT_EQ(e.status(), HETERO_NOT_SUPPORTED);
  }
}

TEST(Npy, MalformedPreamble) {
  expect_error({}, HETERO_INVALID_ARGUMENT, "\\x93NUMPY");
  expect_error({0x93, 'N', 'U', 'M'}, HETERO_INVALID_ARGUMENT, "\\x93NUMPY");
  expect_error({'P', 'K', 3, 4, 0, 0, 0, 0, 0, 0}, HETERO_INVALID_ARGUMENT, "\\x93NUMPY");
  expect_error({0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, 10}, HETERO_INVALID_ARGUMENT, "truncated");
  expect_error({0x93, 'N', 'U', 'M', 'P', 'Y', 2, 0, 10, 0}, HETERO_INVALID_ARGUMENT, "truncated");
  Bytes v4 = npy_file(kPlain, float_bytes({0, 1, 2, 3, 4, 5}));
  v4[6] = 4;
  expect_error(v4, HETERO_NOT_SUPPORTED, "version 4.0");
  Bytes minor = npy_file(kPlain, float_bytes({0, 1, 2, 3, 4, 5}));
  minor[7] = 1;
  expect_error(minor, HETERO_NOT_SUPPORTED, "version 1.1");
}

TEST(Npy, HeaderLengthsAreChecked) {
  Bytes longer = npy_file(kPlain, {});
  longer[8] = 0xff, longer[9] = 0x7f;  // 32767 bytes claimed, 118 there
  expect_error(longer, HETERO_INVALID_ARGUMENT, "header claims 32767 bytes");
  Bytes huge = npy_file(kPlain, {}, 2);
  huge[8] = huge[9] = huge[10] = huge[11] = 0xff;  // 4 GiB claimed
  expect_error(huge, HETERO_INVALID_ARGUMENT, "at most");
}

TEST(Npy, MalformedHeaderDict) {
  const Bytes six = float_bytes({0, 1, 2, 3, 4, 5});
  expect_error(npy_file("'descr': '<f4'", six), HETERO_INVALID_ARGUMENT, "expected '{'");
  expect_error(npy_file("{'descr': '<f4', 'shape': (2, 3), }", six), HETERO_INVALID_ARGUMENT, "'fortran_order' is missing");
  expect_error(npy_file("{'descr': '<f4', 'fortran_order': False, }", six), HETERO_INVALID_ARGUMENT, "'shape' is missing");
  expect_error(npy_file("{'fortran_order': False, 'shape': (2, 3), }", six), HETERO_INVALID_ARGUMENT, "'descr' is missing");
  expect_error(npy_file("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", six),
               HETERO_INVALID_ARGUMENT, "appears twice");
  expect_error(npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), 'extra': 1, }", six),
               HETERO_INVALID_ARGUMENT, "unexpected key 'extra'");
  expect_error(npy_file("{'descr': '<f4', 'fortran_order': Maybe, 'shape': (2, 3), }", six), HETERO_INVALID_ARGUMENT,
               "True or False");
  expect_error(npy_file("{'descr': <f4, 'fortran_order': False, 'shape': (2, 3), }", six), HETERO_INVALID_ARGUMENT,
               "quoted string");
  expect_error(npy_file("{'descr' '<f4', 'fortran_order': False, 'shape': (2, 3), }", six), HETERO_INVALID_ARGUMENT,
               "expected ':'");
  expect_error(npy_file("{'descr': '<\\f4', 'fortran_order': False, 'shape': (2, 3), }", six),
               HETERO_INVALID_ARGUMENT, "escape");
  expect_error(npy_file("{'descr': '<f4' 'fortran_order': False, 'shape': (2, 3)}", six), HETERO_INVALID_ARGUMENT,
               "',' or '}'");
  expect_error(npy_file(std::string(kPlain) + " trailing", six), HETERO_INVALID_ARGUMENT, "final newline");
  expect_error(npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), 'x", six), HETERO_INVALID_ARGUMENT,
               "unterminated string");
  std::string with_nul = kPlain;
  with_nul[3] = '\0';
  expect_error(npy_file(with_nul, six), HETERO_INVALID_ARGUMENT, "control character");

  // A header without its final newline (the length stops short of it).
  Bytes no_newline = npy_file(kPlain, six);
  no_newline[8] = static_cast<uint8_t>(no_newline[8] - 1);
  expect_error(no_newline, HETERO_INVALID_ARGUMENT, "final newline");
}

TEST(Npy, MalformedShapes) {
  auto with_shape = [](const std::string& shape) {
    return npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': " + shape + ", }", {});
  };
  expect_error(with_shape("(-1,)"), HETERO_INVALID_ARGUMENT, "non-negative dimension");
  expect_error(with_shape("(3)"), HETERO_INVALID_ARGUMENT, "trailing comma");
  expect_error(with_shape("(1 2)"), HETERO_INVALID_ARGUMENT, "',' or ')'");
  expect_error(with_shape("[1, 2]"), HETERO_INVALID_ARGUMENT, "'('");
  expect_error(with_shape("(99999999999999999999,)"), HETERO_INVALID_ARGUMENT, "too large");
  expect_error(with_shape("(4294967296, 4294967296)"), HETERO_INVALID_ARGUMENT, "too large");
  std::string deep = "(";
  for (int i = 0; i < 70; ++i) deep += "1, ";
  expect_error(with_shape(deep + ")"), HETERO_INVALID_ARGUMENT, "more than 64 dimensions");
}

TEST(Npy, UnsupportedButValidFiles) {
  const Bytes six = float_bytes({0, 1, 2, 3, 4, 5});
  expect_error(npy_file("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }", six), HETERO_NOT_SUPPORTED,
               "Fortran order");
  expect_error(npy_file("{'descr': '>f4', 'fortran_order': False, 'shape': (2, 3), }", six), HETERO_NOT_SUPPORTED,
               "big-endian");
  expect_error(npy_file("{'descr': '|f4', 'fortran_order': False, 'shape': (2, 3), }", six), HETERO_NOT_SUPPORTED,
               "one-byte");
  expect_error(npy_file("{'descr': '<c8', 'fortran_order': False, 'shape': (3,), }", six), HETERO_NOT_SUPPORTED,
               "'<c8'");
  expect_error(npy_file("{'descr': '|O', 'fortran_order': False, 'shape': (3,), }", six), HETERO_NOT_SUPPORTED,
               "'|O'");
  expect_error(npy_file("{'descr': '<U4', 'fortran_order': False, 'shape': (1,), }", Bytes(16)),
               HETERO_NOT_SUPPORTED, "'<U4'");
  expect_error(npy_file("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (6,), }", six),
               HETERO_NOT_SUPPORTED, "structured");
}

TEST(Npy, DataSizeMustMatchShape) {
  expect_error(npy_file(kPlain, float_bytes({0, 1, 2, 3, 4})), HETERO_INVALID_ARGUMENT, "needs 24 bytes of data, the file has 20");
  expect_error(npy_file(kPlain, float_bytes({0, 1, 2, 3, 4, 5, 6})), HETERO_INVALID_ARGUMENT, "the file has 28");
  expect_error(npy_file("{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }", {0, 1, 2}),
               HETERO_INVALID_ARGUMENT, "bool element 2 is 2");
}

// Every prefix of a valid file and every single-byte change in its header
// either decodes or fails with hetero::Failure: nothing else escapes, nothing
// crashes (the ASan/UBSan build checks the rest).
TEST(Npy, TruncationsAndByteFlipsNeverCrash) {
  const Bytes good = npy_file(kPlain, float_bytes({0, 1, 2, 3, 4, 5}));
  for (size_t n = 0; n < good.size(); ++n) {
    const Bytes cut(good.begin(), good.begin() + static_cast<ptrdiff_t>(n));
    EXPECT_THROW(npy_decode(cut, "cut.npy"), Failure) << "prefix of " << n << " bytes";
  }
  for (size_t pos = 0; pos < 128; ++pos) {
    for (uint8_t value : {uint8_t{0}, uint8_t{'('}, uint8_t{'\''}, uint8_t{'9'}, uint8_t{0xff}}) {
      Bytes flipped = good;
      flipped[pos] = value;
      try {
        npy_decode(flipped, "flip.npy");
      } catch (const Failure&) {
      }
    }
  }
}
