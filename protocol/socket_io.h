// The socket calls both ends of the protocol share: sendmsg/recvmsg with
// descriptors (SCM_RIGHTS), which libuv's streams cannot pass for arbitrary
// fds, and the sealed memfds large tensors travel in.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "protocol/unique_fd.h"

namespace hetero::wire {

// recvmsg() into `buffer`, appending received descriptors (close-on-exec) to
// `fds`. Returns bytes read, 0 at end of stream, or -errno. -EPROTO when the
// kernel had to drop descriptors (more than kMaxFdsPerFrame at once).
// `flags` are recvmsg's (MSG_DONTWAIT to poll).
ssize_t receive(int socket, std::span<uint8_t> buffer, std::vector<UniqueFd>& fds, int flags = 0);

// sendmsg() of `bytes`, with `fds` attached to the first byte when not empty.
// Returns bytes written (possibly fewer) or -errno; MSG_NOSIGNAL.
ssize_t send(int socket, std::span<const uint8_t> bytes, std::span<const int> fds);

// A new memfd holding `size` bytes written by `fill`, sealed against writes
// and resizing so that a reader may map it safely.
UniqueFd make_sealed_memfd(const char* name, size_t size, void (*fill)(void* dst, void* context), void* context);

// A read-only mapping of `size` bytes at `offset` of a sealed memfd received
// from a peer. Fails with PROTOCOL_ERROR (naming `what`) when the fd is not a
// memfd sealed against writes and shrinking, or is too small.
class MappedMemfd {
 public:
  MappedMemfd(int fd, uint64_t offset, uint64_t size, const char* what);
  MappedMemfd(const MappedMemfd&) = delete;
  MappedMemfd& operator=(const MappedMemfd&) = delete;
  ~MappedMemfd();
  const uint8_t* data() const noexcept { return data_; }
  size_t size() const noexcept { return size_; }

 private:
  void* map_ = nullptr;
  size_t map_size_ = 0;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace hetero::wire
