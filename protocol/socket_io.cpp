#include "protocol/socket_io.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "core/error.h"
#include "protocol/frame.h"

namespace hetero::wire {

ssize_t receive(int socket, std::span<uint8_t> buffer, std::vector<UniqueFd>& fds, int flags) {
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxFdsPerFrame)];
  iovec iov{buffer.data(), buffer.size()};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  ssize_t n;
  do {
    n = ::recvmsg(socket, &msg, MSG_CMSG_CLOEXEC | flags);
  } while (n < 0 && errno == EINTR);
  if (n < 0) return -errno;
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    const size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t k = 0; k < count; ++k) {
      int fd;
      std::memcpy(&fd, CMSG_DATA(c) + k * sizeof(int), sizeof fd);
      fds.emplace_back(fd);
    }
  }
  if (msg.msg_flags & MSG_CTRUNC) return -EPROTO;
  return n;
}

ssize_t send(int socket, std::span<const uint8_t> bytes, std::span<const int> fds) {
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxFdsPerFrame)];
  iovec iov{const_cast<uint8_t*>(bytes.data()), bytes.size()};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  if (!fds.empty()) {
    if (fds.size() > kMaxFdsPerFrame) return -E2BIG;
    msg.msg_control = control;
    msg.msg_controllen = CMSG_SPACE(sizeof(int) * fds.size());
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
    std::memcpy(CMSG_DATA(c), fds.data(), sizeof(int) * fds.size());
  }
  ssize_t n;
  do {
    n = ::sendmsg(socket, &msg, MSG_NOSIGNAL);
  } while (n < 0 && errno == EINTR);
  return n < 0 ? -errno : n;
}

UniqueFd make_sealed_memfd(const char* name, size_t size, void (*fill)(void* dst, void* context), void* context) {
  UniqueFd fd(::memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING));
  if (!fd) fail(HETERO_IO_ERROR, std::string("memfd_create: ") + std::strerror(errno));
  if (::ftruncate(fd.get(), static_cast<off_t>(size)) != 0)
    fail(HETERO_OUT_OF_MEMORY, "memfd of " + std::to_string(size) + " bytes: " + std::strerror(errno));
  if (size > 0) {
    void* map = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd.get(), 0);
    if (map == MAP_FAILED) fail(HETERO_OUT_OF_MEMORY, std::string("mmap of a memfd: ") + std::strerror(errno));
    fill(map, context);
    ::munmap(map, size);
  }
  // No writable mapping may exist when F_SEAL_WRITE is added: it was unmapped.
  if (::fcntl(fd.get(), F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) != 0)
    fail(HETERO_IO_ERROR, std::string("sealing a memfd: ") + std::strerror(errno));
  return fd;
}

MappedMemfd::MappedMemfd(int fd, uint64_t offset, uint64_t size, const char* what) {
  const int seals = ::fcntl(fd, F_GET_SEALS);
  // Without these seals the peer could shrink the file under our mapping
  // (SIGBUS on read) or change the tensor while it is being used.
  if (seals < 0 || (seals & (F_SEAL_SHRINK | F_SEAL_WRITE)) != (F_SEAL_SHRINK | F_SEAL_WRITE))
    fail(HETERO_PROTOCOL_ERROR, std::string(what) + ": the descriptor is not a memfd sealed against writes and shrinking");
  struct stat st {};
  if (::fstat(fd, &st) != 0) fail(HETERO_PROTOCOL_ERROR, std::string(what) + ": cannot stat the memfd");
  const uint64_t file_size = static_cast<uint64_t>(st.st_size);
  if (offset > file_size || size > file_size - offset)
    fail(HETERO_PROTOCOL_ERROR, std::string(what) + ": " + std::to_string(size) + " bytes at offset " +
                                    std::to_string(offset) + " do not fit its memfd of " +
                                    std::to_string(file_size) + " bytes");
  size_ = static_cast<size_t>(size);
  if (size_ == 0) return;
  // mmap offsets must be page aligned: map from the page holding `offset`.
  const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  const uint64_t start = offset / page * page;
  map_size_ = static_cast<size_t>(offset - start + size);
  map_ = ::mmap(nullptr, map_size_, PROT_READ, MAP_SHARED, fd, static_cast<off_t>(start));
  if (map_ == MAP_FAILED) {
    map_ = nullptr;
    fail(HETERO_OUT_OF_MEMORY, std::string(what) + ": cannot map its memfd: " + std::strerror(errno));
  }
  data_ = static_cast<const uint8_t*>(map_) + (offset - start);
}

MappedMemfd::~MappedMemfd() {
  if (map_) ::munmap(map_, map_size_);
}

}  // namespace hetero::wire
