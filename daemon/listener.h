// The listening Unix socket: inherited from systemd (heterod.socket) or bound
// by the daemon itself, with the config's mode and group.
#pragma once

#include <sys/types.h>

#include <string>

#include "daemon/config.h"
#include "protocol/unique_fd.h"

namespace hetero::daemon {

class Listener {
 public:
  // Takes the activated socket when there is one; otherwise binds
  // config.socket_path. A socket file already there is removed only when no
  // daemon answers on it (a stale one from a crash); a live one is an error.
  explicit Listener(const Config& config);
  // A socket the daemon binds itself, never an activated one (the v2
  // protocol's, daemon/kserve/). `file` is the config, for errors.
  Listener(const std::string& path, mode_t mode, const std::string& group, const std::string& file);
  Listener(const Listener&) = delete;
  Listener& operator=(const Listener&) = delete;
  // Removes the socket file when this daemon created it.
  ~Listener();

  int fd() const noexcept { return fd_.get(); }
  const std::string& path() const noexcept { return path_; }
  bool activated() const noexcept { return !owns_path_; }
  // Stops listening: new connections are refused from now on.
  void close();

 private:
  void bind_path(mode_t mode, const std::string& group, const std::string& file);

  wire::UniqueFd fd_;
  std::string path_;
  bool owns_path_ = false;
};

}  // namespace hetero::daemon
