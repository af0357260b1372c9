// How many CPUs the process may really use: the cores in its affinity mask,
// and no more than its cgroup's CPU quota (cgroup v2 cpu.max, the smallest
// on the way up to the root).
//
// Why the quota matters. A team wider than the quota runs out of it early in
// each period (100 ms by default) and then every thread waits, runnable, for
// the next period: an inference that needed 1 ms takes the rest of the
// period. systemd's CPUQuota= and container runtimes' --cpus set cpu.max.
#pragma once

#include <string>

namespace hetero::cpu {

// At least 1.
int usable_cpus();

// The quota of the cgroup v2 mounted at `cgroup_root` for the process whose
// /proc/PID/cgroup text is `proc_cgroup`, in CPUs (quota / period), the
// smallest along the path; 0 when there is none. Split out so that a test
// can give it a cgroup tree of its own.
double cgroup_cpu_quota(const std::string& cgroup_root, const std::string& proc_cgroup);

}  // namespace hetero::cpu
