#include "daemon/peer_credentials.h"

#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "core/error.h"

namespace hetero::daemon {

std::string PeerCredentials::describe() const {
  return "pid " + std::to_string(pid) + " uid " + std::to_string(uid) + " gid " + std::to_string(gid);
}

PeerCredentials peer_credentials(int socket) {
  ucred cred{};
  socklen_t size = sizeof cred;
  if (::getsockopt(socket, SOL_SOCKET, SO_PEERCRED, &cred, &size) != 0)
    fail(HETERO_IO_ERROR, std::string("SO_PEERCRED: ") + std::strerror(errno));
  PeerCredentials peer{cred.pid, cred.uid, cred.gid, {}};
  std::vector<gid_t> groups(64);
  socklen_t bytes = static_cast<socklen_t>(groups.size() * sizeof(gid_t));
  if (::getsockopt(socket, SOL_SOCKET, SO_PEERGROUPS, groups.data(), &bytes) == 0) {
    groups.resize(bytes / sizeof(gid_t));
    peer.groups = std::move(groups);
  }
  return peer;
}

bool is_admin(uid_t uid) { return uid == 0 || uid == ::geteuid(); }

bool peer_allowed(const PeerCredentials& peer, const Config& config) {
  if (is_admin(peer.uid)) return true;
  if (config.allowed_uids.empty() && config.allowed_gids.empty()) return true;
  auto has = [](const auto& list, auto id) { return std::find(list.begin(), list.end(), id) != list.end(); };
  if (has(config.allowed_uids, peer.uid) || has(config.allowed_gids, peer.gid)) return true;
  return std::any_of(peer.groups.begin(), peer.groups.end(),
                     [&](gid_t g) { return has(config.allowed_gids, g); });
}

}  // namespace hetero::daemon
