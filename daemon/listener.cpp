#include "daemon/listener.h"

#include <fcntl.h>
#include <grp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/error.h"
#include "core/log.h"
#include "daemon/systemd_notify.h"

namespace hetero::daemon {

namespace {

sockaddr_un address_of(const std::string& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);  // length checked by read_config
  return addr;
}

std::string errno_text() { return std::strerror(errno); }

// A socket file left at `path`: removed when nothing answers on it.
void remove_stale_socket(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return;
  if (!S_ISSOCK(st.st_mode)) fail(HETERO_IO_ERROR, path + " exists and is not a socket; not touching it");
  wire::UniqueFd probe(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  const sockaddr_un addr = address_of(path);
  if (probe && ::connect(probe.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0)
    fail(HETERO_BUSY, "another daemon is answering on " + path);
  if (errno != ECONNREFUSED && errno != ENOENT)
    fail(HETERO_IO_ERROR, "cannot tell whether " + path + " is in use: " + errno_text());
  core::log(core::LogLevel::Info, "removing stale socket " + path);
  ::unlink(path.c_str());
}

}  // namespace

Listener::Listener(const Config& config) : path_(config.socket_path) {
  const int inherited = systemd::activated_socket();
  if (inherited >= 0) {
    fd_.reset(inherited);
    ::fcntl(inherited, F_SETFD, FD_CLOEXEC);
    ::fcntl(inherited, F_SETFL, ::fcntl(inherited, F_GETFL) | O_NONBLOCK);
    path_ = "(socket activation)";
    return;
  }
  bind_path(config.socket_mode, config.socket_group, config.file);
}

Listener::Listener(const std::string& path, mode_t mode, const std::string& group, const std::string& file)
    : path_(path) {
  bind_path(mode, group, file);
}

void Listener::bind_path(mode_t mode, const std::string& group, const std::string& file) {
  remove_stale_socket(path_);
  fd_.reset(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd_) fail(HETERO_IO_ERROR, "socket: " + errno_text());
  const sockaddr_un addr = address_of(path_);
  // Bind under a umask that leaves no window in which the socket is wider open
  // than its configured mode.
  const mode_t old_mask = ::umask(0777 & ~mode);
  const int bound = ::bind(fd_.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr);
  const int bind_errno = errno;
  ::umask(old_mask);
  if (bound != 0) fail(HETERO_IO_ERROR, "cannot bind " + path_ + ": " + std::strerror(bind_errno));
  owns_path_ = true;
  try {
    if (::chmod(path_.c_str(), mode) != 0) fail(HETERO_IO_ERROR, "chmod " + path_ + ": " + errno_text());
    if (!group.empty()) {
      const struct group* g = ::getgrnam(group.c_str());
      if (!g) fail(HETERO_INVALID_ARGUMENT, file + ": the socket group '" + group + "' of " + path_ + " does not exist");
      if (::chown(path_.c_str(), static_cast<uid_t>(-1), g->gr_gid) != 0)
        fail(HETERO_IO_ERROR, "chown " + path_ + " to group " + group + ": " + errno_text());
    }
    if (::listen(fd_.get(), SOMAXCONN) != 0) fail(HETERO_IO_ERROR, "listen on " + path_ + ": " + errno_text());
  } catch (...) {
    close();  // the destructor does not run for a constructor that throws
    throw;
  }
}

void Listener::close() {
  fd_.reset();
  if (owns_path_) ::unlink(path_.c_str());
  owns_path_ = false;
}

Listener::~Listener() { close(); }

}  // namespace hetero::daemon
