// A directory of compiled blobs, so that a model compiled once is imported at
// every later start. Entries are named by the hash of everything that decides
// a compiled model (the source model, device string, compile config, library
// and driver versions); a hit is imported, a miss or a refused entry compiled
// and written back.
//
// Safe for several processes sharing one directory: an entry is written to a
// temporary file, fsync'ed and renamed into place, so a reader sees a whole
// entry or none, even if the writer is killed mid-write; two writers of one
// key both succeed and leave one whole entry. A killed writer's temporary
// file is removed by the next cache opened on the directory, or the next
// put. Least-recently-used entries (by mtime, touched on every hit) are
// removed to keep the directory under its size limit. The directory is
// created 0750, entries 0640.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/mapped_file.h"
#include "core/sha256.h"

namespace hetero::core {

struct BlobCacheOptions {
  std::string dir;
  uint64_t max_bytes = uint64_t{1} << 30;  // 1 GiB
};

class BlobCache {
 public:
  // Creates the directory if needed; fails naming it when it cannot.
  explicit BlobCache(BlobCacheOptions options);

  const std::string& dir() const { return options_.dir; }
  // The entry's path for `key`.
  std::string path_of(const Sha256Digest& key) const;

  // The entry, mapped, or nullopt when there is none (or it cannot be read).
  std::optional<MappedBytes> get(const Sha256Digest& key) const;
  // Writes the entry atomically, then evicts down to the size limit. Fails
  // naming the path when the directory cannot be written.
  void put(const Sha256Digest& key, std::span<const uint8_t> blob) const;
  // Removes an entry (one that was refused), if it is still there.
  void remove(const Sha256Digest& key) const;
  // Removes least-recently-used entries until the directory holds at most
  // max_bytes, and the temporary files of writers that died.
  void evict() const;

 private:
  BlobCacheOptions options_;
};

}  // namespace hetero::core
