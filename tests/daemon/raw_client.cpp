#include "tests/daemon/raw_client.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>

#include "protocol/socket_io.h"

namespace hetero::test {

RawClient::RawClient(const std::string& socket) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, socket.c_str(), sizeof addr.sun_path - 1);
  fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (::connect(fd_, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) close();
}

RawClient::~RawClient() { close(); }

void RawClient::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

bool RawClient::send_bytes(std::span<const uint8_t> bytes, std::span<const int> fds) {
  while (!bytes.empty() && fd_ >= 0) {
    const ssize_t n = wire::send(fd_, bytes, fds);
    if (n <= 0) return false;  // the daemon may already have hung up
    bytes = bytes.subspan(static_cast<size_t>(n));
    fds = {};
  }
  return bytes.empty();
}

bool RawClient::send(const wire::Request& request, std::span<const int> fds) {
  return send_bytes(wire::encode_frame(request, fds.size()), fds);
}

void RawClient::set_send_timeout(std::chrono::milliseconds timeout) {
  const timeval tv{static_cast<time_t>(timeout.count() / 1000), static_cast<suseconds_t>(timeout.count() % 1000 * 1000)};
  ::setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
}

bool RawClient::hello() {
  wire::Request r;
  r.set_id(1);
  r.mutable_hello()->set_min_version(1);
  r.mutable_hello()->set_max_version(1);
  send(r);
  auto reply = receive();
  return reply && reply->status() == 0 && reply->has_hello();
}

std::optional<wire::Response> RawClient::receive(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (auto frame = decoder_.next()) {
      wire::Response response;
      if (!response.ParseFromArray(frame->payload.data(), static_cast<int>(frame->payload.size()))) return std::nullopt;
      return response;
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    pollfd p{fd_, POLLIN, 0};
    if (fd_ < 0 || left.count() <= 0 || ::poll(&p, 1, static_cast<int>(left.count())) <= 0) return std::nullopt;
    uint8_t buffer[65536];
    std::vector<wire::UniqueFd> fds;
    const ssize_t n = wire::receive(fd_, buffer, fds);
    if (n <= 0) return std::nullopt;
    decoder_.add_fds(std::move(fds));
    decoder_.feed({buffer, static_cast<size_t>(n)});
  }
}

bool RawClient::closed_by_peer(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (fd_ >= 0) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    pollfd p{fd_, POLLIN, 0};
    if (left.count() <= 0 || ::poll(&p, 1, static_cast<int>(left.count())) <= 0) return false;
    uint8_t buffer[65536];
    std::vector<wire::UniqueFd> fds;
    const ssize_t n = wire::receive(fd_, buffer, fds);
    if (n == 0 || n == -ECONNRESET) return true;
    if (n < 0) return false;
  }
  return true;
}

}  // namespace hetero::test
