#include "protocol/frame.h"

#include <google/protobuf/message_lite.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "core/error.h"

namespace hetero::wire {

namespace {

// What a frame's buffer starts with; it doubles as bytes arrive.
constexpr size_t kInitialPayloadReserve = 64 * 1024;

uint32_t read_u32le(const uint8_t* p) {
  return uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24;
}

}  // namespace

std::vector<uint8_t> encode_frame(const google::protobuf::MessageLite& message, size_t fd_count) {
  const size_t size = message.ByteSizeLong();
  if (size > UINT32_MAX) fail(HETERO_PROTOCOL_ERROR, "message of " + std::to_string(size) + " bytes is too large for a frame");
  if (fd_count > kMaxFdsPerFrame)
    fail(HETERO_PROTOCOL_ERROR, "a frame carries at most " + std::to_string(kMaxFdsPerFrame) + " descriptors");
  std::vector<uint8_t> out(kFrameHeaderSize + size);
  for (int k = 0; k < 4; ++k) out[k] = static_cast<uint8_t>(size >> (8 * k));
  out[4] = static_cast<uint8_t>(fd_count);
  if (!message.SerializeToArray(out.data() + kFrameHeaderSize, static_cast<int>(size)))
    fail(HETERO_INTERNAL, "cannot serialize a protocol message");
  return out;
}

FrameDecoder::FrameDecoder(size_t max_payload_bytes) : max_payload_bytes_(max_payload_bytes) {}

void FrameDecoder::add_fds(std::vector<UniqueFd> fds) {
  for (UniqueFd& fd : fds) unclaimed_fds_.push_back(std::move(fd));
  if (unclaimed_fds_.size() > kMaxFdsPerFrame)
    fail(HETERO_PROTOCOL_ERROR, std::to_string(unclaimed_fds_.size()) + " descriptors received at once; at most " +
                                    std::to_string(kMaxFdsPerFrame) + " per frame");
}

void FrameDecoder::start_payload() {
  const uint32_t length = read_u32le(header_);
  const size_t fd_count = header_[4];
  if (header_[5] != 0 || header_[6] != 0 || header_[7] != 0)
    fail(HETERO_PROTOCOL_ERROR, "frame header: reserved bytes are not zero");
  if (length > max_payload_bytes_)
    fail(HETERO_PROTOCOL_ERROR, "frame header: length " + std::to_string(length) + " exceeds the limit of " +
                                    std::to_string(max_payload_bytes_) + " bytes");
  if (fd_count > kMaxFdsPerFrame)
    fail(HETERO_PROTOCOL_ERROR, "frame header: fd count " + std::to_string(fd_count) + " exceeds " +
                                    std::to_string(kMaxFdsPerFrame));
  // The descriptors arrive with the frame's first byte, so they are here by now.
  if (unclaimed_fds_.size() < fd_count)
    fail(HETERO_PROTOCOL_ERROR, "frame header: announces " + std::to_string(fd_count) + " descriptors, " +
                                    std::to_string(unclaimed_fds_.size()) + " came with it");
  current_ = Frame{};
  // The buffer grows with the bytes that arrive, not with what the header
  // announces: a header alone costs the daemon nothing.
  payload_length_ = length;
  current_.payload.reserve(std::min<size_t>(length, kInitialPayloadReserve));
  for (size_t k = 0; k < fd_count; ++k) {
    current_.fds.push_back(std::move(unclaimed_fds_.front()));
    unclaimed_fds_.pop_front();
  }
  in_payload_ = true;
  payload_fill_ = 0;
}

void FrameDecoder::feed(std::span<const uint8_t> bytes) {
  while (!bytes.empty() || (in_payload_ && payload_fill_ == payload_length_)) {
    if (!in_payload_) {
      const size_t n = std::min(bytes.size(), kFrameHeaderSize - header_fill_);
      std::memcpy(header_ + header_fill_, bytes.data(), n);
      header_fill_ += n;
      bytes = bytes.subspan(n);
      if (header_fill_ < kFrameHeaderSize) break;
      start_payload();
    }
    const size_t n = std::min(bytes.size(), payload_length_ - payload_fill_);
    current_.payload.insert(current_.payload.end(), bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(n));
    payload_fill_ += n;
    bytes = bytes.subspan(n);
    if (payload_fill_ < payload_length_) break;
    ready_.push_back(std::move(current_));
    in_payload_ = false;
    header_fill_ = 0;
    payload_fill_ = 0;
  }
  if (!in_payload_ && header_fill_ == 0 && !unclaimed_fds_.empty())
    fail(HETERO_PROTOCOL_ERROR, std::to_string(unclaimed_fds_.size()) + " descriptors came with no frame to claim them");
}

std::optional<Frame> FrameDecoder::next() {
  if (ready_.empty()) return std::nullopt;
  Frame frame = std::move(ready_.front());
  ready_.pop_front();
  return frame;
}

}  // namespace hetero::wire
