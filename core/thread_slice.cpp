#include "core/thread_slice.h"

#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>

namespace hetero::core {

namespace {

// The kernel's struct sched_attr, first version: glibc 2.36 has no
// sched_setattr(), and <linux/sched/types.h> clashes with <sched.h>.
struct SchedAttr {
  uint32_t size, policy;
  uint64_t flags;
  int32_t nice;
  uint32_t priority;
  uint64_t runtime, deadline, period;
};

}  // namespace

bool request_time_slice(std::chrono::microseconds slice, SliceInherited inherited) {
  SchedAttr attr{};
  attr.size = sizeof attr;
  attr.policy = SCHED_OTHER;
  if (inherited == SliceInherited::kNo) attr.flags = 0x01;  // SCHED_FLAG_RESET_ON_FORK
  attr.nice = getpriority(PRIO_PROCESS, 0);  // this thread's: Linux keeps niceness per thread
  attr.runtime = static_cast<uint64_t>(std::chrono::nanoseconds(slice).count());  // for SCHED_OTHER, the slice
  return syscall(SYS_sched_setattr, 0, &attr, 0) == 0;
}

std::chrono::nanoseconds time_slice() {
  // For SCHED_OTHER, sched_getattr's runtime is the slice.
  SchedAttr attr{};
  if (syscall(SYS_sched_getattr, 0, &attr, sizeof attr, 0) != 0) return std::chrono::nanoseconds(0);
  return std::chrono::nanoseconds(static_cast<int64_t>(attr.runtime));
}

}  // namespace hetero::core
