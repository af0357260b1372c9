// Framing of heterod's wire protocol (PROTOCOL.md): every message travels as
// an 8-byte header and a protobuf payload,
//
//   u32 payload length (little-endian) | u8 fd count | u8 0 | u16 0 | payload
//
// and the fd count says how many descriptors were passed (SCM_RIGHTS) with the
// frame's first byte. The decoder is incremental: bytes and descriptors go in
// as they arrive from the socket, whole frames come out. Limits are checked on
// the header, before anything is allocated for the payload.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "protocol/unique_fd.h"

namespace google::protobuf {
class MessageLite;
}

namespace hetero::wire {

// The protocol versions this build speaks.
inline constexpr uint32_t kProtocolVersion = 1;

// How the daemon's last words on a connection it closes for being idle
// (limits.idle_timeout_ms; a TIMEOUT with id 0) begin. None of the client's
// requests was read then, so a client may connect again and send them anew
// (capi/remote/remote_connection.h).
inline constexpr std::string_view kIdleCloseMessage = "idle for limits.idle_timeout_ms";

inline constexpr size_t kFrameHeaderSize = 8;
// At most this many descriptors ride on one frame.
inline constexpr size_t kMaxFdsPerFrame = 16;

struct Frame {
  std::vector<uint8_t> payload;
  std::vector<UniqueFd> fds;
};

// Header and serialized `message`, ready for the socket. Fails with
// PROTOCOL_ERROR if the message does not fit a frame.
std::vector<uint8_t> encode_frame(const google::protobuf::MessageLite& message, size_t fd_count = 0);

class FrameDecoder {
 public:
  explicit FrameDecoder(size_t max_payload_bytes);

  // A new limit for frames whose header has not arrived yet: the daemon lets
  // a client send large frames only once it has said Hello.
  void set_max_payload(size_t bytes) noexcept { max_payload_bytes_ = bytes; }

  // Descriptors received together with the bytes passed to the next feed().
  // Fails with PROTOCOL_ERROR past kMaxFdsPerFrame unclaimed descriptors.
  void add_fds(std::vector<UniqueFd> fds);
  // Consumes received bytes; completed frames queue up for next(). Fails with
  // PROTOCOL_ERROR naming the field for a header over the limits, a frame
  // announcing descriptors that did not come with it, or descriptors that no
  // frame claims. The decoder is unusable after a failure.
  void feed(std::span<const uint8_t> bytes);
  // The oldest completed frame, if any.
  std::optional<Frame> next();

  // Bytes of a frame received so far but not yet complete (0 between frames).
  size_t partial_bytes() const noexcept { return header_fill_ + payload_fill_; }
  // The payload received so far of the frame not yet complete (empty between
  // frames and within a header): a receiver may refuse what it holds already.
  std::span<const uint8_t> partial_payload() const noexcept {
    return in_payload_ ? std::span<const uint8_t>(current_.payload) : std::span<const uint8_t>();
  }
  // The whole size (header and payload) of the frame being received, once
  // its header is in; 0 between frames and within a header.
  size_t announced_bytes() const noexcept { return in_payload_ ? kFrameHeaderSize + payload_length_ : 0; }

 private:
  void start_payload();

  size_t max_payload_bytes_;
  uint8_t header_[kFrameHeaderSize] = {};
  size_t header_fill_ = 0;
  bool in_payload_ = false;
  Frame current_;
  size_t payload_length_ = 0;  // announced by current_'s header
  size_t payload_fill_ = 0;
  std::deque<UniqueFd> unclaimed_fds_;
  std::deque<Frame> ready_;
};

}  // namespace hetero::wire

namespace hetero::wire {

// A frame ready to send: header and payload, and the descriptors that go with
// its first byte.
struct EncodedFrame {
  std::vector<uint8_t> bytes;
  std::vector<UniqueFd> fds;
};

}  // namespace hetero::wire
