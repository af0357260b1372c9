// What heterod tells systemd and takes from it: readiness, reload and stop
// notifications with a STATUS= line, watchdog keep-alives, and the socket
// handed over by heterod.socket. Each is a no-op outside systemd, and in a
// build without libsystemd (systemd_notify_stub.cpp).
#pragma once

#include <cstdint>
#include <string>

namespace hetero::daemon::systemd {

void notify_ready(const std::string& status);
void notify_reloading();
void notify_stopping(const std::string& status);
void notify_status(const std::string& status);
void notify_watchdog();

// The watchdog interval systemd expects keep-alives within (WatchdogSec=), in
// microseconds; 0 when there is none.
uint64_t watchdog_interval_us();

// The listening socket passed by socket activation (LISTEN_FDS), or -1 when
// none was. Fails with INVALID_ARGUMENT when systemd passed more than one
// descriptor or one that is not a listening Unix stream socket.
int activated_socket();

}  // namespace hetero::daemon::systemd
