// Requests the daemon tests send by hand (tests/daemon/raw_client.h), built
// once here for every test file that needs them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "protocol/heterod.pb.h"

namespace hetero::test {

// An Infer request of `model` with one float input inline.
wire::Request infer_request(const std::string& model, const std::string& input, const std::vector<int64_t>& dims,
                            const std::vector<float>& values);

// An Infer of the spin fixture (tests/daemon/make_daemon_models.cpp) under
// the name `model`: a Loop of `iterations`, endless at kEndless; `timeout_ms`
// 0 leaves the daemon's request_timeout_ms alone.
wire::Request spin_request(uint64_t id, int64_t iterations, uint32_t timeout_ms = 0, const std::string& model = "spin");
constexpr int64_t kEndless = int64_t{1} << 62;

// LoadModel of the model file at `path` under `name`, and UnloadModel.
wire::Request load_path_request(const std::string& name, const std::string& path, uint64_t id = 0);
wire::Request unload_request(const std::string& name, uint64_t id = 0);

// A frame header announcing `length` payload bytes.
std::vector<uint8_t> header_of(uint32_t length);

}  // namespace hetero::test
