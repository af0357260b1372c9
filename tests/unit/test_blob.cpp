// Compiled blobs: SHA-256 against FIPS 180-4's examples, the container's
// round trip, every header field refused with its own reason, and random
// damage refused or harmless, never a crash (the unit suite also runs under
// ASan+UBSan).
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "core/blob_container.h"
#include "core/crc32c.h"
#include "core/error.h"
#include "core/runtime.h"
#include "hetero_build_config.h"
#include "tests/unit/model_text.h"

using namespace hetero;
using namespace hetero::core;

namespace {

std::string hex_of(const std::string& text) {
  return to_hex(sha256({reinterpret_cast<const uint8_t*>(text.data()), text.size()}));
}

// RFC 3720's CRC-32C check values, through whichever path this CPU takes.
TEST(Crc32c, KnownValues) {
  const std::vector<uint8_t> zeros(32, 0), ones(32, 0xff), digits{'1', '2', '3', '4', '5', '6', '7', '8', '9'};
  EXPECT_EQ(crc32c(zeros), 0x8a9136aau);
  EXPECT_EQ(crc32c(ones), 0x62a8ab43u);
  EXPECT_EQ(crc32c(digits), 0xe3069283u);
  std::vector<uint8_t> odd(1001);
  for (size_t i = 0; i < odd.size(); ++i) odd[i] = static_cast<uint8_t>(i * 7);
  for (const std::vector<uint8_t>* v : {&zeros, &ones, &digits, static_cast<const std::vector<uint8_t>*>(&odd)})
    EXPECT_EQ(crc32c_portable(*v), crc32c(*v));
}

TEST(Sha256, FipsExamples) {
  EXPECT_EQ(hex_of(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(hex_of("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(hex_of("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  // A million 'a's, fed in uneven pieces: streaming must not change the digest.
  Sha256 h;
  const std::string chunk(997, 'a');
  size_t left = 1000000;
  while (left) {
    const size_t n = std::min(left, chunk.size());
    h.update({reinterpret_cast<const uint8_t*>(chunk.data()), n});
    left -= n;
  }
  EXPECT_EQ(to_hex(h.finish()), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

constexpr const char* kNet = R"ONNX(
<ir_version: 8, opset_import: ["" : 13]>
net (float[1, 4] x) => (float[1, 4] y) {
  w = Constant <value = float[4, 4] {1,0,0,0, 0,2,0,0, 0,0,3,0, 0,0,0,4}> ()
  m = MatMul (x, w)
  y = Relu (m)
}
)ONNX";

Runtime& runtime() {
  static Runtime rt;
  return rt;
}

struct Fixture {
  std::unique_ptr<Model> model = test::model_from_text(kNet);
  BlobOrigin origin{{{"optimize", "true"}}, model->source_sha256};
  std::vector<uint8_t> blob = runtime().export_blob(*runtime().compile(*model, "CPU", origin.config), origin);
};

std::vector<float> infer(driver::CompiledModel& compiled) {
  auto req = compiled.create_infer_request();
  req->set_input(0, Tensor::from_vector(std::vector<float>{1, -2, 3, 0.5f}, {1, 4}));
  req->infer();
  const Tensor y = req->output(0);
  return {y.values<float>().begin(), y.values<float>().end()};
}

std::string import_error(std::span<const uint8_t> blob, hetero_status expected, const driver::Config& config = {}) {
  try {
    runtime().import_blob(blob, config);
  } catch (const Failure& e) {
    EXPECT_EQ(e.status(), expected) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "the blob was accepted";
  return "";
}

TEST(Blob, ContainerRoundTripKeepsEveryField) {
  BlobHeader h;
  h.driver = "CPU";
  h.driver_version = "7";
  h.device = "CPU.1";
  h.config = {{"b", "2"}, {"a", "1"}};
  h.model_sha256[0] = 0xab;
  const std::vector<uint8_t> one = {1, 2, 3}, two(100, 7);
  const BlobSection sections[] = {{"plan", "", one}, {"part0", "CPU.1", two}};
  const std::vector<uint8_t> blob = write_blob(h, sections);
  const BlobView v = read_blob(blob);
  EXPECT_EQ(v.header.library_version, HETERO_VERSION);
  EXPECT_EQ(v.header.device, "CPU.1");
  EXPECT_EQ(v.header.config, (std::vector<std::pair<std::string, std::string>>{{"a", "1"}, {"b", "2"}}));
  EXPECT_EQ(v.header.model_sha256, h.model_sha256);
  ASSERT_EQ(v.sections.size(), 2u);
  EXPECT_EQ(v.section("part0").device, "CPU.1");
  EXPECT_EQ(std::vector<uint8_t>(v.section("part0").bytes.begin(), v.section("part0").bytes.end()), two);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(v.section("part0").bytes.data()) % 64,
            reinterpret_cast<uintptr_t>(blob.data()) % 64);  // aligned as the blob is
  EXPECT_THROW(v.section("part1"), Failure);
  // Every truncation and every single-byte change is refused.
  for (size_t n = 0; n < blob.size(); ++n) EXPECT_THROW(read_blob(std::span(blob).first(n)), Failure) << n;
  for (size_t i = 0; i < blob.size(); ++i) {
    auto bad = blob;
    bad[i] ^= 0x10;
    EXPECT_THROW(read_blob(bad), Failure) << i;
  }
}

TEST(Blob, ImportRoundTripIsBitIdenticalAndDeterministic) {
  Fixture f;
  EXPECT_EQ(f.blob, runtime().export_blob(*runtime().compile(*f.model, "CPU", f.origin.config), f.origin));
  BlobOrigin origin;
  auto imported = runtime().import_blob(f.blob, {}, &origin);
  auto compiled = runtime().compile(*f.model, "CPU", f.origin.config);
  EXPECT_EQ(infer(*imported), infer(*compiled));
  // Re-exporting the import gives the very same blob.
  EXPECT_EQ(runtime().export_blob(*imported, origin), f.blob);
}

// Each header field changed in turn is refused, saying which field.
TEST(Blob, EachForeignFieldIsRefusedByName) {
  Fixture f;
  const BlobView v = read_blob(f.blob);
  auto with = [&](auto change) {
    BlobHeader h = v.header;
    change(h);
    return write_blob(h, v.sections);
  };
  auto bad_format = f.blob;
  bad_format[8] = 9;
  EXPECT_NE(import_error(bad_format, HETERO_BLOB_MISMATCH).find("format_version is 9"), std::string::npos);
  // write_blob stamps this library's version: change it in place and fix the checksum.
  {
    auto blob = f.blob;
    const std::string ours = HETERO_VERSION;
    auto at = std::search(blob.begin(), blob.end(), ours.begin(), ours.end());
    ASSERT_NE(at, blob.end());
    *(at + static_cast<ptrdiff_t>(ours.size()) - 1) ^= 1;  // 0.1.0 -> 0.1.1
    const uint32_t header_size = blob[12] | blob[13] << 8 | blob[14] << 16 | uint32_t(blob[15]) << 24;
    const uint32_t crc = crc32c(std::span(blob).first(16 + header_size));
    for (int i = 0; i < 4; ++i) blob[16 + header_size + i] = static_cast<uint8_t>(crc >> (8 * i));
    EXPECT_NE(import_error(blob, HETERO_BLOB_MISMATCH).find("library_version"), std::string::npos);
  }
  EXPECT_NE(import_error(with([](BlobHeader& h) { h.driver_version += "-old"; }), HETERO_BLOB_MISMATCH)
                .find("driver_version"),
            std::string::npos);
  EXPECT_NE(import_error(with([](BlobHeader& h) { h.driver = "OPENCL"; }), HETERO_BLOB_MISMATCH).find("driver is OPENCL"),
            std::string::npos);
  EXPECT_NE(import_error(with([](BlobHeader& h) { h.device = "CPU.3"; }), HETERO_NOT_FOUND).find("CPU.3"),
            std::string::npos);
  EXPECT_NE(import_error(f.blob, HETERO_BLOB_MISMATCH, {{"optimize", "false"}}).find("blob config optimize is true"),
            std::string::npos);
  EXPECT_NO_THROW(runtime().import_blob(f.blob, {{"optimize", "true"}, {"num_threads", "1"}}));
  auto corrupt = f.blob;
  corrupt[corrupt.size() - 3] ^= 4;
  EXPECT_NE(import_error(corrupt, HETERO_BLOB_CORRUPT).find("section 'driver' checksum"), std::string::npos);
}

// 10,000 random truncations, flips, overwrites and splices: each blob is
// refused with an error or, if it gets through, computes what the original
// does. Never a crash or an out-of-bounds read (ASan run).
TEST(Blob, RandomDamageIsRefusedOrHarmless) {
  Fixture f;
  const std::vector<float> expected = infer(*runtime().import_blob(f.blob));
  std::mt19937_64 rng(2026);
  size_t refused = 0, accepted = 0;
  for (int i = 0; i < 10000; ++i) {
    std::vector<uint8_t> bad = f.blob;
    switch (i % 4) {
      case 0: bad.resize(rng() % bad.size()); break;
      case 1: bad[rng() % bad.size()] ^= static_cast<uint8_t>(1u << (rng() % 8)); break;
      case 2:
        for (int k = 0; k < 4; ++k) bad[rng() % bad.size()] = static_cast<uint8_t>(rng());
        break;
      default: {
        const size_t at = rng() % bad.size(), len = 1 + rng() % 16;
        bad.insert(bad.begin() + static_cast<ptrdiff_t>(at), len, static_cast<uint8_t>(rng()));
      }
    }
    try {
      auto compiled = runtime().import_blob(bad);
      ++accepted;
      EXPECT_EQ(infer(*compiled), expected) << "damage " << i << " was accepted and changed the outputs";
    } catch (const Failure&) {
      ++refused;
    }
  }
  EXPECT_EQ(refused + accepted, 10000u);
  EXPECT_GT(refused, 9900u);
}

}  // namespace
