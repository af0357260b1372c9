#include "daemon/kserve/front_end.h"

#include <grpc/support/log.h>
#include <grpcpp/generic/async_generic_service.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/resource_quota.h>
#include <grpcpp/server_posix.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "core/error.h"
#include "core/log.h"
#include "core/regular_file.h"
#include "daemon/kserve/call.h"
#include "daemon/kserve/service.h"
#include "daemon/listener.h"
#include "daemon/peer_credentials.h"
#include "daemon/model_registry.h"
#include "daemon/uv_status.h"

namespace hetero::daemon::kserve {

namespace {

void warn(const std::string& message) { core::log(core::LogLevel::Warning, "v2: " + message); }

// gRPC's own complaints go to the daemon's log, errors only.
void grpc_log(gpr_log_func_args* args) {
  core::log(core::LogLevel::Warning, std::string("v2: gRPC: ") + args->message);
}

// A PEM file of the config (a certificate chain, a key, a CA bundle): a
// regular file of at most 16 MiB, or an error naming it (a FIFO put there
// would block the start-up, a device would be read without end).
std::string read_pem(const std::string& path) {
  constexpr uint64_t kMaxPemBytes = uint64_t{16} << 20;
  return core::read_regular_file(path, kMaxPemBytes, "a PEM file");
}

// A call on a connection whose peer the access lists refuse.
class Refusal final : public grpc::ServerGenericBidiReactor {
 public:
  explicit Refusal(const std::string& message) { Finish(grpc::Status(grpc::StatusCode::PERMISSION_DENIED, message)); }
  void OnDone() override { delete this; }
};

class RefusingService final : public grpc::CallbackGenericService {
 public:
  explicit RefusingService(std::string message) : message_(std::move(message)) {}
  grpc::ServerGenericBidiReactor* CreateReactor(grpc::GenericCallbackServerContext*) override {
    return new Refusal(message_);
  }

 private:
  const std::string message_;
};

// A connection handed to gRPC, which owns its descriptor from then on: it
// is still open while that descriptor is still this socket.
struct HandedOver {
  int fd;
  dev_t dev;
  ino_t ino;
  uid_t uid;  // the peer's

  bool open() const {
    struct stat st {};
    return ::fstat(fd, &st) == 0 && st.st_dev == dev && st.st_ino == ino;
  }
};

// The memory gRPC's transport may take for the requests it receives:
// limits.max_frame_bytes_in_flight, as for the native protocol's large
// frames, and at least two messages of the largest size let in.
size_t transport_quota_bytes(const Limits& limits, const KServeConfig& config) {
  return static_cast<size_t>(std::max<uint64_t>(limits.max_frame_bytes_in_flight, 2 * uint64_t{config.max_message_bytes}));
}

// Connections refused by the access lists get this long to read their answer.
constexpr int kRefusedConnectionMs = 2000;
// ...and a refused uid this many such connections at once: reconnecting in a
// loop, it holds no more of the slots.
constexpr size_t kRefusedConnectionsPerUid = 4;
// Threads that read calls, check them and hand them to the loop. One: a
// second doubled the CPU time gRPC spends per call (its pollers wake each
// other), and the loop it hands to is one thread anyway.
constexpr int kQueueThreads = 1;
// After accept() fails for want of descriptors, this long before it is tried again.
constexpr uint64_t kAcceptBackoffMs = 250;

class KServeFrontEnd final : public FrontEnd {
 public:
  explicit KServeFrontEnd(ModelRegistry& registry);
  ~KServeFrontEnd() override;
  // Accepts on the Unix socket from the loop. Throws Failure.
  void start_polling(uv_loop_t* loop);
  void stop_accepting() override;
  void shutdown() override;

 private:
  void build_servers();
  void accept_clients();
  void hand_over(int fd, uid_t uid, grpc::Server& to);
  // Service::RequesterOf: the uid of a connection handed over ("fd:N").
  int64_t requester_of(const std::string& peer) const;

  ModelRegistry& registry_;
  const KServeConfig config_;
  std::shared_ptr<CallRegister> calls_ = std::make_shared<CallRegister>();
  Service service_;
  RefusingService refusing_;
  std::unique_ptr<grpc::Server> grpc_, refusal_server_;
  std::unique_ptr<grpc::ServerCompletionQueue> queue_;
  std::vector<std::thread> queue_threads_;
  std::unique_ptr<Listener> listener_;
  uv_poll_t poll_{};
  uv_timer_t backoff_{};
  bool polling_ = false;
  std::vector<HandedOver> handed_over_;
  bool shut_down_ = false;
};

KServeFrontEnd::KServeFrontEnd(ModelRegistry& registry)
    : registry_(registry),
      config_(registry.config().kserve),
      service_(registry, calls_, [this](const std::string& peer) { return requester_of(peer); }),
      refusing_("this user is not allowed by " + registry.config().file + " (access.allowed_uids / allowed_gids)") {
  gpr_set_log_function(&grpc_log);
  gpr_set_log_verbosity(GPR_LOG_SEVERITY_ERROR);
  if (!config_.socket_path.empty())
    listener_ = std::make_unique<Listener>(config_.socket_path, config_.socket_mode, config_.socket_group,
                                           registry.config().file);
  build_servers();
}

KServeFrontEnd::~KServeFrontEnd() { shutdown(); }

void KServeFrontEnd::build_servers() {
  const Limits& limits = registry_.config().limits;
  grpc::ServerBuilder builder;
  builder.RegisterAsyncGenericService(service_.generic_service());
  queue_ = builder.AddCompletionQueue();
  // What gRPC's transport may hold of requests being received, all
  // connections together: past it gRPC shrinks the clients' HTTP/2 windows
  // and then cancels calls to free their buffers, instead of reading more.
  grpc::ResourceQuota quota("heterod v2");
  quota.Resize(transport_quota_bytes(limits, config_));
  builder.SetResourceQuota(quota);
  // A message larger than this is refused (RESOURCE_EXHAUSTED) before the
  // service sees it: its tensors travel inside it.
  builder.SetMaxReceiveMessageSize(static_cast<int>(config_.max_message_bytes));
  // A connection with no call this long is closed; calls in flight per
  // connection are capped as the native protocol caps them per client.
  builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_IDLE_MS, static_cast<int>(config_.idle_timeout_ms));
  builder.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS, static_cast<int>(limits.max_in_flight_per_client));
  // A peer that vanished with calls open is noticed by keepalive pings.
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, 60000);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 20000);
  // A second daemon on the same port is an error, not a silent share.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  int tcp_port = 0;
  if (!config_.tcp_address.empty()) {
    std::shared_ptr<grpc::ServerCredentials> credentials;
    if (config_.tls_cert.empty()) {
      credentials = grpc::InsecureServerCredentials();
    } else {
      grpc::SslServerCredentialsOptions tls(config_.tls_client_ca.empty()
                                                ? GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE
                                                : GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
      if (!config_.tls_client_ca.empty()) tls.pem_root_certs = read_pem(config_.tls_client_ca);
      tls.pem_key_cert_pairs.push_back({read_pem(config_.tls_key), read_pem(config_.tls_cert)});
      credentials = grpc::SslServerCredentials(tls);
    }
    builder.AddListeningPort(config_.tcp_address, credentials, &tcp_port);
  }
  grpc_ = builder.BuildAndStart();
  if (!grpc_ || (!config_.tcp_address.empty() && tcp_port == 0))
    fail(HETERO_IO_ERROR, "v2: cannot serve gRPC" +
                              (config_.tcp_address.empty() ? std::string() : " on kserve.tcp " + config_.tcp_address +
                                                                                 " (in use, or not an address here?)"));
  const std::chrono::milliseconds frame_timeout(limits.frame_timeout_ms);
  service_.listen(queue_.get(),
                  std::make_shared<ReplyBudget>(connection_reply_bytes(config_.max_message_bytes), limits.max_reply_bytes_queued),
                  frame_timeout, frame_timeout);
  for (int k = 0; k < kQueueThreads; ++k) queue_threads_.emplace_back([this] { run_completion_queue(*queue_); });
  if (listener_) core::log(core::LogLevel::Info, "v2 (KServe gRPC) listening on unix:" + listener_->path());
  if (tcp_port) {
    const std::string host = config_.tcp_address.substr(0, config_.tcp_address.rfind(':'));
    const std::string security = config_.tls_cert.empty()             ? "WITHOUT TLS (allow_insecure_tcp)"
                                 : config_.tls_client_ca.empty() ? "TLS"
                                                                 : "TLS, client certificates required";
    core::log(core::LogLevel::Info,
              "v2 (KServe gRPC) listening on tcp " + host + ":" + std::to_string(tcp_port) + " (" + security + ")");
  }

  // Refused peers: answered, then gone.
  grpc::ServerBuilder refusal;
  refusal.RegisterCallbackGenericService(&refusing_);
  refusal.SetMaxReceiveMessageSize(4096);
  refusal.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_IDLE_MS, kRefusedConnectionMs);
  refusal.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_AGE_MS, kRefusedConnectionMs);
  refusal.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_AGE_GRACE_MS, kRefusedConnectionMs);
  refusal_server_ = refusal.BuildAndStart();
  if (!refusal_server_) fail(HETERO_INTERNAL, "v2: cannot start gRPC");
}

void KServeFrontEnd::start_polling(uv_loop_t* loop) {
  if (!listener_) return;
  uv_check(uv_timer_init(loop, &backoff_), "uv_timer_init (v2 accept back-off)");
  backoff_.data = this;
  uv_check(uv_poll_init(loop, &poll_, listener_->fd()), "uv_poll_init on " + listener_->path());
  poll_.data = this;
  uv_check(uv_poll_start(&poll_, UV_READABLE,
                         [](uv_poll_t* h, int, int) { static_cast<KServeFrontEnd*>(h->data)->accept_clients(); }),
           "uv_poll_start on " + listener_->path());
  polling_ = true;
}

void KServeFrontEnd::accept_clients() {
  for (;;) {
    const int fd = ::accept4(listener_->fd(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EMFILE || errno == ENFILE) {
        // Readable until accepted: pause rather than spin, and say so once.
        warn(std::string("accept: ") + std::strerror(errno) + "; pausing new connections");
        uv_ok(uv_poll_stop(&poll_), "uv_poll_stop on " + listener_->path());
        uv_ok(uv_timer_start(&backoff_,
                             [](uv_timer_t* h) {
                               auto* self = static_cast<KServeFrontEnd*>(h->data);
                               if (self->polling_)
                                 uv_ok(uv_poll_start(&self->poll_, UV_READABLE,
                                                     [](uv_poll_t* p, int, int) {
                                                       static_cast<KServeFrontEnd*>(p->data)->accept_clients();
                                                     }),
                                       "uv_poll_start on " + self->listener_->path());
                             },
                             kAcceptBackoffMs, 0),
              "uv_timer_start (v2 accept back-off)");
      } else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR && errno != ECONNABORTED) {
        warn(std::string("accept: ") + std::strerror(errno));
      }
      return;
    }
    PeerCredentials peer;
    try {
      peer = peer_credentials(fd);
    } catch (const Failure& e) {
      warn(e.what());
      ::close(fd);
      continue;
    }
    std::erase_if(handed_over_, [](const HandedOver& h) { return !h.open(); });
    const uint32_t limit = registry_.config().limits.max_connections;
    if (handed_over_.size() >= limit) {
      warn("client " + peer.describe() + ": too many connections (limits.max_connections = " + std::to_string(limit) +
           "); disconnecting it");
      ::close(fd);
      continue;
    }
    const bool allowed = peer_allowed(peer, registry_.config());
    const size_t per_uid = allowed ? registry_.config().limits.max_connections_per_uid : kRefusedConnectionsPerUid;
    const auto held = static_cast<size_t>(std::count_if(handed_over_.begin(), handed_over_.end(),
                                                        [&](const HandedOver& h) { return h.uid == peer.uid; }));
    if (!is_admin(peer.uid) && held >= per_uid) {
      warn("client " + peer.describe() + ": uid " + std::to_string(peer.uid) + " has " + std::to_string(held) +
           " connections open" +
           (allowed ? " (limits.max_connections_per_uid = " + std::to_string(per_uid) + ")" : " and is not allowed") +
           "; disconnecting it");
      ::close(fd);
      continue;
    }
    if (allowed) {
      hand_over(fd, peer.uid, *grpc_);
    } else {
      warn("client " + peer.describe() + ": uid " + std::to_string(peer.uid) + " is not allowed by " +
           registry_.config().file + " (access.allowed_uids / allowed_gids); answering PERMISSION_DENIED");
      hand_over(fd, peer.uid, *refusal_server_);
    }
  }
}

void KServeFrontEnd::hand_over(int fd, uid_t uid, grpc::Server& to) {
  struct stat st {};
  ::fstat(fd, &st);
  handed_over_.push_back({fd, st.st_dev, st.st_ino, uid});
  grpc::AddInsecureChannelFromFd(&to, fd);
}

int64_t KServeFrontEnd::requester_of(const std::string& peer) const {
  // gRPC names a connection it was handed "fd:N" (N: the descriptor), one
  // it accepted itself by its address.
  if (peer.rfind("ipv4:", 0) == 0 || peer.rfind("ipv6:", 0) == 0) return kOwnedByTcpClients;
  if (peer.rfind("fd:", 0) != 0) return kUnknownRequester;
  const int fd = std::atoi(peer.c_str() + 3);
  for (const HandedOver& h : handed_over_)
    if (h.fd == fd && h.open()) return h.uid;
  return kUnknownRequester;
}

void KServeFrontEnd::stop_accepting() {
  service_.stop();
  if (!polling_) return;
  polling_ = false;
  uv_ok(uv_poll_stop(&poll_), "uv_poll_stop on " + listener_->path());
  uv_ok(uv_timer_stop(&backoff_), "uv_timer_stop (v2 accept back-off)");
  listener_->close();
}

void KServeFrontEnd::shutdown() {
  if (shut_down_) return;
  shut_down_ = true;
  service_.stop();
  // Calls whose answer was never going to come (a hard stop stranded their
  // jobs) are answered now: gRPC's shutdown waits for every call to end.
  calls_->finish_all(grpc::Status(grpc::StatusCode::UNAVAILABLE, "heterod is stopping"));
  const auto now = std::chrono::system_clock::now();
  if (grpc_) grpc_->Shutdown(now + std::chrono::milliseconds(100));
  if (refusal_server_) refusal_server_->Shutdown(now);
  // After the server's shutdown, as gRPC requires; the threads end once the
  // queue is drained.
  if (queue_) queue_->Shutdown();
  for (std::thread& t : queue_threads_) t.join();
  queue_threads_.clear();
  listener_.reset();
}

}  // namespace

void start_front_end(ModelRegistry& registry, uv_loop_t* loop, std::vector<std::unique_ptr<FrontEnd>>& into) {
  auto front_end = std::make_unique<KServeFrontEnd>(registry);
  KServeFrontEnd& started = *front_end;
  into.push_back(std::move(front_end));
  started.start_polling(loop);
}

}  // namespace hetero::daemon::kserve
