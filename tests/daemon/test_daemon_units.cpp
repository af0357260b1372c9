// The daemon's parts that need no running daemon: its config file and the
// protocol's framing and tensor checks. In the unit suite, so they run under
// ASan+UBSan too.
#include <google/protobuf/descriptor.pb.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <utility>

#include "core/error.h"
#include "daemon/config.h"
#include "daemon/log_sink.h"
#include "protocol/decoded_size.h"
#include "protocol/frame.h"
#include "protocol/socket_io.h"
#include "protocol/tensor_codec.h"
#include "protocol/utf8.h"
#include "tests/daemon/daemon_process.h"

namespace hetero::test {
namespace {

// ---- Config ------------------------------------------------------------------

class ConfigFile : public ::testing::Test {
 protected:
  daemon::Config read(const std::string& text) {
    std::ofstream(path()) << text;
    return daemon::read_config(path());
  }
  // The error reading `text` gives.
  std::string error_of(const std::string& text) {
    try {
      read(text);
    } catch (const Failure& e) {
      return e.what();
    }
    return "(no error)";
  }
  std::string path() const { return dir_.path() + "/heterod.yaml"; }
  TempDir dir_;
};

TEST_F(ConfigFile, FullConfigIsRead) {
  const daemon::Config c = read(R"(
socket:
  path: run/h.sock
  mode: "0600"
access:
  allowed_uids: [0, 1000]
  allowed_gids: [27]
driver_path: [drivers]
driver_config: {CPU.num_threads: "2"}
cache_dir: cache
cache_max_mb: 64
model_dirs: [models]
limits:
  max_frame_bytes: 65536
  max_in_flight_per_client: 8
  request_timeout_ms: 500
  max_client_priority: normal
  max_reply_bytes_queued: 1048576
models:
  - name: a
    path: models/a.onnx
    device: HETERO:CPU.1,CPU
    policy: policy.yaml
    config: {"CPU.1:ops": Conv}
    shapes: {x: [1, 3, 8, 8]}
    parallel: 4
    queue: 0
)");
  EXPECT_EQ(c.socket_path, dir_.path() + "/run/h.sock");
  EXPECT_EQ(c.socket_mode, 0600u);
  EXPECT_EQ(c.allowed_uids, (std::vector<uid_t>{0, 1000}));
  EXPECT_EQ(c.allowed_gids, (std::vector<gid_t>{27}));
  EXPECT_EQ(c.driver_path, dir_.path() + "/drivers");
  EXPECT_EQ(c.driver_config.at("CPU.num_threads"), "2");
  EXPECT_EQ(c.cache_dir, dir_.path() + "/cache");
  EXPECT_EQ(c.limits.max_frame_bytes, 65536u);
  EXPECT_EQ(c.limits.request_timeout_ms, 500u);
  EXPECT_EQ(c.limits.max_client_priority, core::Priority::Normal);
  EXPECT_EQ(c.limits.max_reply_bytes_queued, 1u << 20);
  ASSERT_EQ(c.models.size(), 1u);
  const daemon::ModelSpec& m = c.models[0];
  EXPECT_EQ(m.path, dir_.path() + "/models/a.onnx");
  EXPECT_EQ(m.device, "HETERO:CPU.1,CPU");
  EXPECT_EQ(m.policy, dir_.path() + "/policy.yaml");
  EXPECT_EQ(m.config.at("CPU.1:ops"), "Conv");
  EXPECT_EQ(m.shapes.at("x"), (std::vector<int64_t>{1, 3, 8, 8}));
  EXPECT_EQ(m.parallel, 4u);
  EXPECT_EQ(m.queue, 0u);
}

TEST_F(ConfigFile, EmptyConfigTakesSystemdDirectories) {
  setenv("RUNTIME_DIRECTORY", "/run/heterod", 1);
  setenv("CACHE_DIRECTORY", "/var/cache/heterod", 1);
  const daemon::Config c = read("{}\n");  // every default, on purpose (an empty file is an error)
  unsetenv("RUNTIME_DIRECTORY");
  unsetenv("CACHE_DIRECTORY");
  EXPECT_EQ(c.socket_path, "/run/heterod/heterod.sock");
  EXPECT_EQ(c.cache_dir, "/var/cache/heterod");
  EXPECT_TRUE(c.models.empty());
}

TEST_F(ConfigFile, ErrorsNameFileLineAndKey) {
  const std::string file = path();
  struct Case {
    const char* text;
    const char* expected;
  } cases[] = {
      {"sockets: {}\n", ":1: unknown key 'sockets'"},
      {"socket:\n  mode: rw\n", ":2: 'socket.mode' must be octal"},
      {"limits:\n  max_frame_bytes: 12\n", ":2: 'limits.max_frame_bytes' must be a whole number from 4096"},
      {"limits:\n  request_timeout_ms: -1\n", ":2: 'limits.request_timeout_ms'"},
      {"limits:\n  max_reply_bytes_queued: 100\n", ":2: 'limits.max_reply_bytes_queued' must be a whole number from 4096"},
      {"limits:\n  max_client_priority: urgent\n",
       ":2: 'limits.max_client_priority' must be realtime, normal or background"},
      {"limits:\n  max_frame_bytes: 65536\n  max_frame_bytes_in_flight: 4096\n",
       ":2: limits.max_frame_bytes_in_flight (4096) must be at least limits.max_frame_bytes (65536)"},
      {"models:\n  - path: a.onnx\n", ":2: model has no 'name'"},
      {"models:\n  - name: a\n", ":2: model 'a' has no 'path'"},
      {"models:\n  - name: a b\n    path: x\n", ":2: model name 'a b'"},
      {"models:\n  - {name: a, path: x}\n  - {name: a, path: y}\n", ":3: model 'a' is listed twice"},
      {"models:\n  - name: a\n    path: x\n    parallel: 0\n", ":4: 'parallel' must be a whole number from 1"},
      {"models:\n  - name: a\n    path: x\n    shapes: {x: [1, -3]}\n", ":4: 'shapes.x'"},
      {"access:\n  allowed_uids: root\n", ":2: 'access.allowed_uids' must be a list"},
      {"models: [\n", ":2: "},
      {"limits:\n  max_connections: 8\nmodels: []\nlimits:\n  max_connections: 512\n",
       ":4: 'limits' is given twice (first at line 1)"},
      {"models:\n  - name: a\n    path: x\n    name: b\n", ":4: 'name' is given twice (first at line 2)"},
      {"models:\n  - name: a\n    path: x\n    state: [stateN]\n", ":4: 'state' must be a mapping"},
      {"models:\n  - name: a\n    path: x\n    defaults: {sr: fast}\n", ":4: 'defaults.sr' must be a number"},
      {"models:\n  - name: a\n    path: x\n    defaults: {sr: {a: 1}}\n",
       ":4: 'defaults.sr' must be a number or a list of numbers"},
      {"limits:\n  sequence_idle_ms: 5\n", ":2: 'limits.sequence_idle_ms' must be a whole number from 100"},
  };
  for (const Case& c : cases) {
    const std::string error = error_of(c.text);
    EXPECT_EQ(error.rfind(file, 0), 0u) << c.text << " -> " << error;
    EXPECT_NE(error.find(c.expected), std::string::npos) << c.text << " -> " << error;
  }
  try {
    daemon::read_config(dir_.path() + "/missing.yaml");
    ADD_FAILURE() << "a missing file was read";
  } catch (const Failure& e) {
    EXPECT_EQ(e.status(), HETERO_NOT_FOUND);
  }
}

// Nothing but comments or "null" is a truncated file, not "every default":
// read as such at a reload it would drop every model.
TEST_F(ConfigFile, EmptyFileIsAnError) {
  for (const char* text : {"", "\n\n", "# socket:\n#   path: x\n", "null\n", "~\n"}) {
    EXPECT_EQ(error_of(text), path() + ": the file is empty (it sets nothing; write {} for every default)")
        << "'" << text << "'";
  }
}

// Something other than a file at the config's path fails at once, naming
// it and what it is.
TEST_F(ConfigFile, NonFilesAreRefusedAtOnce) {
  auto error_of_path = [](const std::string& p) -> std::pair<hetero_status, std::string> {
    try {
      daemon::read_config(p);
    } catch (const Failure& e) {
      return {e.status(), e.what()};
    }
    return {HETERO_OK, "(no error)"};
  };
  const std::string dir = dir_.path() + "/conf.d";
  ASSERT_EQ(::mkdir(dir.c_str(), 0700), 0);
  EXPECT_EQ(error_of_path(dir), std::make_pair(HETERO_IO_ERROR, dir + " is a directory, not a regular file"));
  const std::string fifo = dir_.path() + "/fifo.yaml";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_EQ(error_of_path(fifo), std::make_pair(HETERO_IO_ERROR, fifo + " is a FIFO, not a regular file"));
  EXPECT_EQ(error_of_path("/dev/zero"),
            std::make_pair(HETERO_IO_ERROR, std::string("/dev/zero is a character device, not a regular file")));
}

// check_files: what --check reports beyond the YAML, each problem with the
// file, the line and the path at fault; only the cache directory is fatal.
TEST_F(ConfigFile, CheckFilesNamesEachProblem) {
  const std::string d = dir_.path();
  std::ofstream(d + "/model.onnx") << "not looked into";
  std::ofstream(d + "/cache-file") << "a file, not a directory";
  ASSERT_EQ(::mkfifo((d + "/fifo-policy.yaml").c_str(), 0600), 0);
  std::ofstream(d + "/policy.yaml") << "devices: [CPU]\nrules: 3\n";
  const daemon::Config ok = read("cache_dir: cache\nmodels:\n  - {name: a, path: model.onnx}\n");
  EXPECT_TRUE(daemon::check_files(ok).empty());
  EXPECT_FALSE(std::filesystem::exists(d + "/cache")) << "--check created the cache directory";

  const daemon::Config bad = read(R"(cache_dir: cache-file
models:
  - {name: present, path: model.onnx}
  - {name: missing, path: missing.onnx}
  - {name: fifo, path: model.onnx, device: "HETERO:CPU", policy: fifo-policy.yaml}
  - {name: typo, path: model.onnx, device: "HETERO:CPU", policy: policy.yaml}
)");
  const std::vector<daemon::FileProblem> problems = daemon::check_files(bad);
  ASSERT_EQ(problems.size(), 4u);
  const std::string file = path();
  EXPECT_EQ(problems[0].message, file + ":1: cache_dir: " + d + "/cache-file is a regular file, not a directory");
  EXPECT_TRUE(problems[0].fatal);
  EXPECT_EQ(problems[1].message, file + ":4: model 'missing': " + d + "/missing.onnx: No such file or directory");
  EXPECT_EQ(problems[2].message,
            file + ":5: model 'fifo': policy " + d + "/fifo-policy.yaml is a FIFO, not a regular file");
  EXPECT_NE(problems[3].message.find(file + ":6: model 'typo': policy " + d + "/policy.yaml:2: 'rules' must be a list"),
            std::string::npos)
      << problems[3].message;
  for (size_t k = 1; k < problems.size(); ++k) EXPECT_FALSE(problems[k].fatal) << problems[k].message;

  // A cache directory that can be created is fine; one whose parent is
  // missing cannot be.
  EXPECT_TRUE(daemon::check_files(read("cache_dir: new-cache\n")).empty());
  const auto deep = daemon::check_files(read("cache_dir: no/such/cache\n"));
  ASSERT_EQ(deep.size(), 1u);
  EXPECT_EQ(deep[0].message, file + ":1: cache_dir: " + d + "/no/such/cache does not exist and cannot be created: " +
                                 d + "/no/such: No such file or directory");
}

TEST_F(ConfigFile, SameModelSpotsChanges) {
  const daemon::Config a = read("models:\n  - {name: m, path: x.onnx}\n");
  const daemon::Config b = read("models:\n  - {name: m, path: x.onnx, parallel: 2}\n");
  EXPECT_TRUE(a.models[0].same_model(a.models[0]));
  EXPECT_FALSE(a.models[0].same_model(b.models[0]));
  // What a sequence carries and what the config gives inputs are the model's too.
  const daemon::Config c = read("models:\n  - {name: m, path: x.onnx, state: {hN: h}}\n");
  const daemon::Config d = read("models:\n  - {name: m, path: x.onnx, defaults: {sr: 16000}}\n");
  const daemon::Config e = read("models:\n  - {name: m, path: x.onnx, defaults: {sr: [16000, 8000]}}\n");
  EXPECT_FALSE(a.models[0].same_model(c.models[0]));
  EXPECT_FALSE(a.models[0].same_model(d.models[0]));
  EXPECT_FALSE(d.models[0].same_model(e.models[0]));
  EXPECT_EQ(c.models[0].state.at("hN"), "h");
  EXPECT_EQ(e.models[0].defaults.at("sr").values, (std::vector<double>{16000, 8000}));
  EXPECT_FALSE(e.models[0].defaults.at("sr").scalar);
}

// ---- Frames --------------------------------------------------------------------

wire::Request hello_request() {
  wire::Request r;
  r.set_id(42);
  r.mutable_hello()->set_min_version(1);
  r.mutable_hello()->set_max_version(1);
  return r;
}

// What a client writes into the log stays on its line: a gRPC header value
// or a model name with a newline cannot forge "heterod: error:" lines.
TEST(LogSink, ControlCharactersAreEscaped) {
  EXPECT_EQ(daemon::escape_log_text("a\nheterod: error: forged\r\x1b[2J\x7f\tb"),
            "a\\nheterod: error: forged\\r\\x1b[2J\\x7f\tb");
  EXPECT_EQ(daemon::escape_log_text(std::string("nul\0byte", 8)), "nul\\x00byte");
}

// A connect storm cannot fill the disk: a burst, then a steady rate; the
// dropped lines are counted with the next one let through.
TEST(LogSink, LinesAreRateLimited) {
  daemon::LogRateLimit limit(20, 200);
  auto now = daemon::LogRateLimit::Clock::now();
  uint64_t dropped = 0;
  int written = 0;
  for (int k = 0; k < 100000; ++k) written += limit.admit(now, dropped);
  EXPECT_EQ(written, 200);
  now += std::chrono::seconds(1);  // 20 more
  for (int k = 0; k < 1000; ++k) {
    uint64_t d = 0;
    if (limit.admit(now, d)) {
      ++written;
      dropped += d;
    }
  }
  EXPECT_EQ(written, 220);
  EXPECT_EQ(dropped, 100000u - 200u);
}

// The parsed size of a request, read off its wire bytes: close to what the
// parse allocates for an ordinary request, and, for a request of a million
// empty entries (2 bytes each on the wire), the hundreds of megabytes the
// parse would allocate, counted without allocating them.
TEST(DecodedSize, EstimatesWhatTheParseWouldAllocate) {
  namespace pb = google::protobuf;
  // A message of protobuf's own (the full runtime, with descriptors).
  pb::FileDescriptorProto ordinary;
  ordinary.set_name("ordinary.proto");
  for (int k = 0; k < 3; ++k) {
    pb::DescriptorProto& m = *ordinary.add_message_type();
    m.set_name("Message" + std::to_string(k) + std::string(4096, 'x'));
    for (int f = 0; f < 4; ++f) m.add_field()->set_number(f + 1);
  }
  ordinary.add_public_dependency(1);
  ordinary.add_public_dependency(2);
  const std::string bytes = ordinary.SerializeAsString();
  const wire::DecodedSize unlimited{UINT64_MAX, UINT64_MAX};
  wire::DecodedSize size;
  ASSERT_TRUE(wire::estimate_decoded_size({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()},
                                          *pb::FileDescriptorProto::descriptor(), unlimited, size));
  EXPECT_FALSE(size.over_limit);
  pb::FileDescriptorProto parsed;
  ASSERT_TRUE(parsed.ParseFromString(bytes));
  const double actual = static_cast<double>(parsed.SpaceUsedLong());
  EXPECT_GT(static_cast<double>(size.bytes), 0.5 * actual) << size.bytes << " vs " << actual;
  EXPECT_LT(static_cast<double>(size.bytes), 2.0 * actual) << size.bytes << " vs " << actual;
  EXPECT_EQ(size.messages, 15u);  // three messages of four fields each

  // 1M empty message_type entries (field 4): 2 bytes each on the wire.
  std::string bomb;
  for (int k = 0; k < (1 << 20); ++k) bomb += std::string("\x22\x00", 2);
  wire::DecodedSize bomb_size;
  ASSERT_TRUE(wire::estimate_decoded_size({reinterpret_cast<const uint8_t*>(bomb.data()), bomb.size()},
                                          *pb::FileDescriptorProto::descriptor(), unlimited, bomb_size));
  EXPECT_EQ(bomb_size.messages, 1u << 20);
  EXPECT_GT(bomb_size.bytes, 50 * bomb.size()) << "2 MiB on the wire";
  // With a limit, the walk stops at it rather than counting the rest.
  wire::DecodedSize stopped;
  ASSERT_TRUE(wire::estimate_decoded_size({reinterpret_cast<const uint8_t*>(bomb.data()), bomb.size()},
                                          *pb::FileDescriptorProto::descriptor(), {UINT64_MAX, 1000}, stopped));
  EXPECT_TRUE(stopped.over_limit);
  EXPECT_EQ(stopped.messages, 1001u);

  // Not a message: a truncated field, a zero tag.
  const std::string cut = bytes.substr(0, bytes.size() - 10);
  wire::DecodedSize ignored;
  EXPECT_FALSE(wire::estimate_decoded_size({reinterpret_cast<const uint8_t*>(cut.data()), cut.size()},
                                           *pb::FileDescriptorProto::descriptor(), unlimited, ignored));
  const uint8_t zero_tag[] = {0x00, 0x01};
  EXPECT_FALSE(wire::estimate_decoded_size(zero_tag, *pb::FileDescriptorProto::descriptor(), unlimited, ignored));
}

TEST(Frames, ByteByByteAndBatched) {
  std::vector<uint8_t> stream;
  for (int k = 0; k < 3; ++k) {
    const std::vector<uint8_t> f = wire::encode_frame(hello_request());
    stream.insert(stream.end(), f.begin(), f.end());
  }
  for (size_t step : {size_t{1}, size_t{3}, size_t{8}, stream.size()}) {
    wire::FrameDecoder decoder(1024);
    int frames = 0;
    for (size_t at = 0; at < stream.size(); at += step) {
      decoder.feed(std::span<const uint8_t>(stream).subspan(at, std::min(step, stream.size() - at)));
      while (auto frame = decoder.next()) {
        wire::Request r;
        ASSERT_TRUE(r.ParseFromArray(frame->payload.data(), static_cast<int>(frame->payload.size())));
        EXPECT_EQ(r.id(), 42u);
        ++frames;
      }
    }
    EXPECT_EQ(frames, 3) << "step " << step;
    EXPECT_EQ(decoder.partial_bytes(), 0u);
  }
}

TEST(Frames, HeaderLimitsAreCheckedBeforeAllocating) {
  wire::FrameDecoder decoder(1000);
  const uint8_t huge[] = {0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0};
  try {
    decoder.feed(huge);
    ADD_FAILURE() << "a 4 GiB frame was accepted";
  } catch (const Failure& e) {
    EXPECT_EQ(e.status(), HETERO_PROTOCOL_ERROR);
    EXPECT_NE(std::string(e.what()).find("exceeds the limit of 1000 bytes"), std::string::npos) << e.what();
  }
  wire::FrameDecoder fds(1000);
  const uint8_t announces[] = {0, 0, 0, 0, 2, 0, 0, 0};
  EXPECT_THROW(fds.feed(announces), Failure);
}

// A header announces; only bytes that arrive are buffered, and a frame may be
// as large as the limit in force when its header came.
TEST(Frames, BuffersGrowWithTheBytesNotTheHeader) {
  wire::FrameDecoder decoder(64);
  std::vector<uint8_t> padded(8 + 100000, 0);
  padded[0] = 0xa0, padded[1] = 0x86, padded[2] = 0x01;  // 100000, little-endian
  EXPECT_THROW(decoder.feed(std::span<const uint8_t>(padded).first(8)), Failure);
  wire::FrameDecoder raised(64);
  raised.set_max_payload(1 << 20);
  EXPECT_EQ(raised.announced_bytes(), 0u);
  raised.feed(std::span<const uint8_t>(padded).first(8 + 10));
  EXPECT_EQ(raised.partial_bytes(), 18u);
  EXPECT_EQ(raised.announced_bytes(), 8u + 100000u);
  raised.feed(std::span<const uint8_t>(padded).subspan(18));
  auto frame = raised.next();
  ASSERT_TRUE(frame);
  EXPECT_EQ(frame->payload.size(), 100000u);
  EXPECT_EQ(raised.announced_bytes(), 0u);
}

TEST(Utf8, ValidTextPassesAndBadBytesAreEscaped) {
  EXPECT_TRUE(wire::is_valid_utf8("input_1"));
  EXPECT_TRUE(wire::is_valid_utf8("\xc3\xa9t\xc3\xa9 \xe6\x97\xa5 \xf0\x9f\x99\x82"));  // été 日 🙂
  for (const char* bad : {"\xff", "a\xc3", "\xc0\x80", "\xed\xa0\x80", "\xf4\x90\x80\x80", "\xe0\x80\x80"}) {
    SCOPED_TRACE(wire::escape_invalid_utf8(bad));
    EXPECT_FALSE(wire::is_valid_utf8(bad));
    EXPECT_TRUE(wire::is_valid_utf8(wire::escape_invalid_utf8(bad)));
  }
  EXPECT_EQ(wire::escape_invalid_utf8("in\xffput \xc3\xa9"), "in\\xFFput \xc3\xa9");
}

TEST(Frames, DescriptorsGoWithTheirFrame) {
  wire::FrameDecoder decoder(1024);
  wire::UniqueFd a(::memfd_create("a", MFD_CLOEXEC)), b(::memfd_create("b", MFD_CLOEXEC));
  const int a_fd = a.get();
  std::vector<wire::UniqueFd> fds;
  fds.push_back(std::move(a));
  decoder.add_fds(std::move(fds));
  const std::vector<uint8_t> with = wire::encode_frame(hello_request(), 1);
  decoder.feed(with);
  auto frame = decoder.next();
  ASSERT_TRUE(frame);
  ASSERT_EQ(frame->fds.size(), 1u);
  EXPECT_EQ(frame->fds[0].get(), a_fd);
  // A descriptor that no frame claims is an error.
  std::vector<wire::UniqueFd> stray;
  stray.push_back(std::move(b));
  decoder.add_fds(std::move(stray));
  EXPECT_THROW(decoder.feed(wire::encode_frame(hello_request())), Failure);
}

// ---- Tensors -------------------------------------------------------------------

TEST(Tensors, InlineDataMustMatchShape) {
  wire::Tensor t;
  t.set_name("x");
  t.set_dtype(1);
  t.add_dims(2);
  t.add_dims(3);
  t.set_inline_data(std::string(24, '\0'));
  wire::TensorMappings maps;
  const wire::TensorView v = wire::decode_tensor(t, {}, maps, "input 'x'");
  EXPECT_EQ(v.bytes, 24u);
  EXPECT_EQ(v.dims, (std::vector<int64_t>{2, 3}));
  t.set_inline_data(std::string(23, '\0'));
  try {
    wire::decode_tensor(t, {}, maps, "input 'x'");
    ADD_FAILURE();
  } catch (const Failure& e) {
    EXPECT_NE(std::string(e.what()).find("input 'x': inline_data holds 23 bytes"), std::string::npos) << e.what();
  }
}

TEST(Tensors, SealedMemfdIsMappedUnsealedRefused) {
  const std::vector<float> values = {1, 2, 3, 4};
  wire::UniqueFd sealed = wire::make_sealed_memfd(
      "t", 4096 + 16, [](void* dst, void* ctx) { std::memcpy(static_cast<char*>(dst) + 4096, ctx, 16); },
      const_cast<float*>(values.data()));
  wire::Tensor t;
  t.set_name("x");
  t.set_dtype(1);
  t.add_dims(4);
  t.mutable_memfd()->set_offset(4096);
  t.mutable_memfd()->set_size(16);
  std::vector<wire::UniqueFd> fds;
  fds.push_back(std::move(sealed));
  wire::TensorMappings maps;
  const wire::TensorView v = wire::decode_tensor(t, fds, maps, "x");
  EXPECT_EQ(std::memcmp(v.data, values.data(), 16), 0);
  // Past the end of the file.
  t.mutable_memfd()->set_offset(4097);
  EXPECT_THROW(wire::decode_tensor(t, fds, maps, "x"), Failure);
  // A plain memfd the sender could still shrink or write.
  t.mutable_memfd()->set_offset(0);
  wire::UniqueFd open_fd(::memfd_create("u", MFD_CLOEXEC));
  ASSERT_EQ(::ftruncate(open_fd.get(), 16), 0);
  fds[0] = std::move(open_fd);
  EXPECT_THROW(wire::decode_tensor(t, fds, maps, "x"), Failure);
}

}  // namespace
}  // namespace hetero::test
