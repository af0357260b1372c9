#include "drivers/cpu/cpu_budget.h"

#include <sched.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

namespace hetero::cpu {

namespace {

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// "max 100000" (none) or "QUOTA PERIOD", in CPUs; 0 for none or unreadable.
double quota_of(const std::string& cpu_max) {
  std::istringstream in(cpu_max);
  std::string quota;
  double period = 0;
  if (!(in >> quota >> period) || quota == "max" || period <= 0) return 0;
  char* end = nullptr;
  const double q = std::strtod(quota.c_str(), &end);
  return end && *end == '\0' && q > 0 ? q / period : 0;
}

}  // namespace

double cgroup_cpu_quota(const std::string& cgroup_root, const std::string& proc_cgroup) {
  // cgroup v2's line is "0::/path"; v1 hierarchies have other numbers.
  std::istringstream lines(proc_cgroup);
  std::string line, path;
  while (std::getline(lines, line))
    if (line.rfind("0::", 0) == 0) path = line.substr(3);
  if (path.empty() || path[0] != '/') return 0;
  double smallest = 0;
  for (;;) {
    const double q = quota_of(read_text(cgroup_root + (path == "/" ? "" : path) + "/cpu.max"));
    if (q > 0 && (smallest == 0 || q < smallest)) smallest = q;
    if (path == "/" || path.empty()) break;
    const size_t slash = path.find_last_of('/');
    path = slash == 0 ? "/" : path.substr(0, slash);
  }
  return smallest;
}

int usable_cpus() {
  cpu_set_t mask;
  int cpus = sched_getaffinity(0, sizeof mask, &mask) == 0 ? CPU_COUNT(&mask) : 1;
  // A quota of 1.5 CPUs gives one thread: the second would eat the quota.
  const double quota = cgroup_cpu_quota("/sys/fs/cgroup", read_text("/proc/self/cgroup"));
  if (quota > 0) cpus = std::min(cpus, static_cast<int>(std::floor(quota)));
  return std::max(1, cpus);
}

}  // namespace hetero::cpu
