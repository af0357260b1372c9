// Driver modules found on a search path and loaded with dlopen. A module that
// cannot be used (from another build: another driver ABI stamp; no entry
// symbol; failed init) is kept as a failure with its reason; the others work.
//
// Loading a module makes its driver but not its runtime: find() initialises
// a driver on first use (Driver::initialize(), once, whichever thread asks
// first), so that a process running a model on CPU never sets up OpenCL.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/driver.h"

namespace hetero::core {

struct LoadedDriver {
  std::string path;
  std::shared_ptr<driver::Driver> driver;  // deleter also dlcloses the module
};

struct DriverFailure {
  std::string path;
  std::string reason;
};

// The directories searched, in order: `configured` (colon-separated), then
// $HETERO_DRIVER_PATH, then the install directory; a core that runs from its
// build tree searches that tree's modules before the install directory, an
// installed one never searches the directory it was built in.
std::vector<std::string> driver_search_path(const std::string& configured);

class DriverRegistry {
 public:
  // Loads every hetero_driver_*.so in the search path; the first module of a
  // given driver name wins.
  explicit DriverRegistry(const std::vector<std::string>& search_path);
  ~DriverRegistry();

  // Every module that loaded, initialised or not: for its name, version and
  // config only.
  const std::vector<LoadedDriver>& drivers() const noexcept { return drivers_; }
  // The modules that failed to load, then the drivers whose initialisation
  // has failed so far.
  std::vector<DriverFailure> failures() const;
  // The loaded driver of that name, not initialised (for set_config); null
  // when there is none.
  driver::Driver* loaded(const std::string& name) const;
  // The driver of that name, initialised; null when no driver of that name
  // loaded or its initialisation failed (failures() then says why).
  driver::Driver* find(const std::string& name) const;

 private:
  struct Init;
  void load(const std::string& path);
  std::vector<LoadedDriver> drivers_;
  std::vector<std::unique_ptr<Init>> init_;  // one per driver
  std::vector<DriverFailure> load_failures_;
  mutable std::mutex init_failures_mutex_;
  mutable std::vector<DriverFailure> init_failures_;
};

}  // namespace hetero::core
