#include "daemon/systemd_notify.h"

#include <systemd/sd-daemon.h>
#include <time.h>

#include "core/error.h"

namespace hetero::daemon::systemd {

namespace {

// STATUS= ends at a newline; keep one line.
std::string status_line(const std::string& status) {
  std::string s = status;
  for (char& ch : s)
    if (ch == '\n') ch = ' ';
  return "STATUS=" + s;
}

uint64_t monotonic_us() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000u + static_cast<uint64_t>(ts.tv_nsec) / 1000u;
}

}  // namespace

void notify_ready(const std::string& status) { sd_notify(0, ("READY=1\n" + status_line(status)).c_str()); }

void notify_reloading() {
  // MONOTONIC_USEC lets a systemd with Type=notify-reload (253+) match the
  // reload to its request; older ones ignore it.
  sd_notify(0, ("RELOADING=1\nMONOTONIC_USEC=" + std::to_string(monotonic_us()) + "\nSTATUS=reloading").c_str());
}

void notify_stopping(const std::string& status) { sd_notify(0, ("STOPPING=1\n" + status_line(status)).c_str()); }

void notify_status(const std::string& status) { sd_notify(0, status_line(status).c_str()); }

void notify_watchdog() { sd_notify(0, "WATCHDOG=1"); }

uint64_t watchdog_interval_us() {
  uint64_t usec = 0;
  return sd_watchdog_enabled(0, &usec) > 0 ? usec : 0;
}

int activated_socket() {
  // unset_environment=1: children (none today) must not think they were activated.
  const int count = sd_listen_fds(1);
  if (count <= 0) return -1;
  if (count > 1)
    fail(HETERO_INVALID_ARGUMENT, "socket activation passed " + std::to_string(count) +
                                      " descriptors; heterod.socket must have exactly one ListenStream=");
  const int fd = SD_LISTEN_FDS_START;
  if (sd_is_socket_unix(fd, SOCK_STREAM, 1, nullptr, 0) <= 0)
    fail(HETERO_INVALID_ARGUMENT, "socket activation passed a descriptor that is not a listening Unix stream socket");
  return fd;
}

}  // namespace hetero::daemon::systemd
