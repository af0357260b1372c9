// A client that speaks the wire protocol by hand, for the tests that send
// what libhetero never would: broken frames, lies about sizes, descriptors.
#pragma once

#include <chrono>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "protocol/frame.h"
#include "protocol/heterod.pb.h"

namespace hetero::test {

class RawClient {
 public:
  explicit RawClient(const std::string& socket);
  ~RawClient();
  bool connected() const { return fd_ >= 0; }

  // False when not all of it went: the daemon hung up, or (with a send
  // timeout) stopped reading.
  bool send_bytes(std::span<const uint8_t> bytes, std::span<const int> fds = {});
  bool send(const wire::Request& request, std::span<const int> fds = {});
  // Sends give up after `timeout` without progress (SO_SNDTIMEO), for a
  // client that writes to a daemon that may have stopped reading it.
  void set_send_timeout(std::chrono::milliseconds timeout);
  // Hello with version 1; true when the daemon accepts it.
  bool hello();
  // The next response, or nothing when the connection ends or `timeout` passes.
  std::optional<wire::Response> receive(std::chrono::milliseconds timeout = std::chrono::seconds(20));
  // True when the daemon closes the connection within `timeout`.
  bool closed_by_peer(std::chrono::milliseconds timeout = std::chrono::seconds(20));
  void close();

 private:
  int fd_ = -1;
  wire::FrameDecoder decoder_{size_t{1} << 30};
  std::vector<wire::UniqueFd> fds_;
};

}  // namespace hetero::test
