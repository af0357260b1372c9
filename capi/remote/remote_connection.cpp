#include "capi/remote/remote_connection.h"

#include <sys/socket.h>
#include <sys/un.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <future>

#include "core/error.h"
#include "protocol/socket_io.h"

namespace hetero::capi {

namespace {

// Replies can be large (outputs inline); the daemon's own limit is in its
// HelloReply, this only guards against a daemon gone mad.
constexpr size_t kMaxReplyBytes = size_t{1} << 31;
constexpr int kHelloTimeoutSeconds = 30;

void write_all(int fd, std::span<const uint8_t> bytes, std::span<const int> fds, const std::string& path) {
  while (!bytes.empty()) {
    const ssize_t n = wire::send(fd, bytes, fds);
    if (n < 0) fail(HETERO_CONNECTION_ERROR, "writing to " + path + ": " + std::strerror(static_cast<int>(-n)));
    bytes = bytes.subspan(static_cast<size_t>(n));
    fds = {};  // they went with the first byte
  }
}

}  // namespace

// The highest status this library knows (include/hetero/status.h); a newer
// daemon's other codes arrive as INTERNAL.
#define HETERO_STATUS_VALUE_(name, value, message) value,
constexpr int32_t kLastStatus = std::max({HETERO_STATUS_MAP(HETERO_STATUS_VALUE_)});
#undef HETERO_STATUS_VALUE_

hetero_status reply_status(const wire::Response& response) {
  const int32_t status = response.status();
  return status >= 0 && status <= kLastStatus ? static_cast<hetero_status>(status) : HETERO_INTERNAL;
}

void throw_reply_error(const wire::Response& response) {
  fail(reply_status(response), response.message().empty() ? "the daemon refused the request" : response.message());
}

RemoteConnection::RemoteConnection(const std::string& socket_path) : path_(socket_path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (socket_path.empty() || socket_path.size() >= sizeof addr.sun_path)
    fail(HETERO_INVALID_ARGUMENT, "socket path '" + socket_path + "' is empty or too long");
  std::memcpy(addr.sun_path, socket_path.c_str(), socket_path.size() + 1);
  fd_.reset(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd_) fail(HETERO_CONNECTION_ERROR, std::string("socket: ") + std::strerror(errno));
  if (::connect(fd_.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
    const int e = errno;
    fail(e == EACCES ? HETERO_PERMISSION_DENIED : HETERO_CONNECTION_ERROR,
         "cannot connect to heterod at " + socket_path + ": " + std::strerror(e));
  }
  completions_ = std::make_unique<core::WorkerThread>();
  reader_ = std::thread([this] { read_replies(); });
  try {
    wire::Request request;
    wire::Hello* hello = request.mutable_hello();
    hello->set_min_version(wire::kProtocolVersion);
    hello->set_max_version(wire::kProtocolVersion);
    hello->set_client("libhetero");
    // A daemon that accepts but never answers (stopped, or something else on
    // the socket) must not hang the caller.
    const timeval timeout{kHelloTimeoutSeconds, 0};
    ::setsockopt(fd_.get(), SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
    hello_ = call(request).response.hello();
    greeted_ = true;  // from now on the reader waits as long as it takes
  } catch (...) {
    // The daemon may have refused this client (an error frame, then close)
    // before the Hello was even written: wait for the reader to see it.
    ::shutdown(fd_.get(), SHUT_WR);
    reader_.join();
    if (refusal_status_ != HETERO_OK) fail(refusal_status_, refusal_);
    throw;
  }
}

RemoteConnection::~RemoteConnection() {
  // Wakes the reader with end-of-stream; it fails whatever is still pending.
  ::shutdown(fd_.get(), SHUT_RDWR);
  reader_.join();
  completions_.reset();
}

uint64_t RemoteConnection::new_id() {
  std::lock_guard<std::mutex> lock(pending_mutex_);
  return next_id_++;
}

void RemoteConnection::send(wire::Request& request, std::span<const int> fds, Deliver deliver) {
  uint64_t id;
  {
    std::lock_guard<std::mutex> lock(pending_mutex_);
    if (!broken_.empty()) fail(HETERO_CONNECTION_ERROR, broken_);
    id = request.id() ? request.id() : next_id_++;
    pending_[id] = std::move(deliver);
  }
  request.set_id(id);
  try {
    const std::vector<uint8_t> frame = wire::encode_frame(request, fds.size());
    std::lock_guard<std::mutex> lock(write_mutex_);
    write_all(fd_.get(), frame, fds, path_);
  } catch (...) {
    std::lock_guard<std::mutex> lock(pending_mutex_);
    pending_.erase(id);
    throw;
  }
}

Reply RemoteConnection::call(wire::Request& request, std::span<const int> fds) {
  std::promise<std::unique_ptr<Reply>> promise;
  std::future<std::unique_ptr<Reply>> future = promise.get_future();
  send(request, fds, [&promise](std::unique_ptr<Reply> reply, std::exception_ptr error) {
    if (error)
      promise.set_exception(error);
    else
      promise.set_value(std::move(reply));
  });
  std::unique_ptr<Reply> reply = future.get();
  if (reply->response.status() != HETERO_OK) throw_reply_error(reply->response);
  return std::move(*reply);
}

void RemoteConnection::call_async(wire::Request& request, std::span<const int> fds, Done done) {
  auto shared_done = std::make_shared<Done>(std::move(done));
  send(request, fds, [this, shared_done](std::unique_ptr<Reply> reply, std::exception_ptr error) {
    std::shared_ptr<Reply> shared_reply(std::move(reply));
    completions_->post([shared_done, shared_reply, error] { (*shared_done)(shared_reply.get(), error); });
  });
}

void RemoteConnection::fail_pending(hetero_status status, const std::string& why) {
  std::map<uint64_t, Deliver> pending;
  {
    std::lock_guard<std::mutex> lock(pending_mutex_);
    if (broken_.empty()) broken_ = why;
    pending.swap(pending_);
  }
  const auto error = std::make_exception_ptr(Error(status, why));
  for (auto& [id, deliver] : pending) deliver(nullptr, error);
}

void RemoteConnection::read_replies() {
  wire::FrameDecoder decoder(kMaxReplyBytes);
  std::vector<uint8_t> buffer(64 * 1024);
  for (;;) {
    std::vector<wire::UniqueFd> fds;
    const ssize_t n = wire::receive(fd_.get(), buffer, fds);
    if (n == -EINTR) continue;
    if (n == -EAGAIN || n == -EWOULDBLOCK) {  // the receive timeout
      if (greeted_) continue;
      fail_pending(HETERO_CONNECTION_ERROR, "heterod at " + path_ + " did not answer within " +
                                                std::to_string(kHelloTimeoutSeconds) + " s");
      return;
    }
    if (n <= 0) {
      if (refusal_status_ != HETERO_OK)
        fail_pending(refusal_status_, refusal_);
      else
        fail_pending(HETERO_CONNECTION_ERROR, n == 0 ? "heterod closed the connection (" + path_ + ")"
                                                     : "reading from " + path_ + ": " + std::strerror(static_cast<int>(-n)));
      return;
    }
    try {
      decoder.add_fds(std::move(fds));
      decoder.feed({buffer.data(), static_cast<size_t>(n)});
      while (std::optional<wire::Frame> frame = decoder.next()) {
        auto reply = std::make_unique<Reply>();
        if (!reply->response.ParseFromArray(frame->payload.data(), static_cast<int>(frame->payload.size())))
          fail(HETERO_PROTOCOL_ERROR, "heterod sent a frame that is not a Response");
        reply->fds = std::move(frame->fds);
        Deliver deliver;
        {
          std::lock_guard<std::mutex> lock(pending_mutex_);
          auto it = pending_.find(reply->response.id());
          if (it != pending_.end()) {
            deliver = std::move(it->second);
            pending_.erase(it);
          }
        }
        if (deliver)
          deliver(std::move(reply), nullptr);
        else if (reply->response.status() != HETERO_OK) {  // id 0: about the connection itself
          refusal_status_ = reply_status(reply->response);
          refusal_ = reply->response.message();
        }
      }
    } catch (const Error& e) {
      fail_pending(e.status(), e.what());
      ::shutdown(fd_.get(), SHUT_RDWR);
      return;
    }
  }
}

}  // namespace hetero::capi
