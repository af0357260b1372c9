// systemd_notify.h for a heterod built without libsystemd (-Dsystemd=disabled):
// it then behaves as it does outside systemd, where every notification is a
// no-op, there is no watchdog, and no socket is passed. The systemd units are
// not installed with such a build (their Type=notify would wait for READY=1).
#include "daemon/systemd_notify.h"

namespace hetero::daemon::systemd {

void notify_ready(const std::string&) {}
void notify_reloading() {}
void notify_stopping(const std::string&) {}
void notify_status(const std::string&) {}
void notify_watchdog() {}
uint64_t watchdog_interval_us() { return 0; }
int activated_socket() { return -1; }

}  // namespace hetero::daemon::systemd
