// Who is on the other end of a connection (SO_PEERCRED, SO_PEERGROUPS), and
// whether the config lets them in.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "daemon/config.h"

namespace hetero::daemon {

struct PeerCredentials {
  pid_t pid = 0;
  uid_t uid = 0;
  gid_t gid = 0;
  std::vector<gid_t> groups;  // supplementary groups, where the kernel tells them

  std::string describe() const;  // "pid 123 uid 1000 gid 1000"
};

// Fails with IO_ERROR when the kernel does not say.
PeerCredentials peer_credentials(int socket);

// Root and the daemon's own uid: they may reload the daemon and unload any
// client's model.
bool is_admin(uid_t uid);

// Lets in the daemon's own uid and root always; others when access lists are
// empty or name their uid, their gid or one of their groups.
bool peer_allowed(const PeerCredentials& peer, const Config& config);

}  // namespace hetero::daemon
