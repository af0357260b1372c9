// Driver modules found on a search path and loaded with dlopen. A module that
// cannot be used (from another build: another driver ABI stamp; no entry
// symbol; failed init) is kept as a failure with its reason; the others work.
#pragma once

#include <memory>
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
// $HETERO_DRIVER_PATH, then the install directory and the build tree (the
// build tree first when this library itself runs from the build tree).
std::vector<std::string> driver_search_path(const std::string& configured);

class DriverRegistry {
 public:
  // Loads every hetero_driver_*.so in the search path; the first module of a
  // given driver name wins.
  explicit DriverRegistry(const std::vector<std::string>& search_path);

  const std::vector<LoadedDriver>& drivers() const noexcept { return drivers_; }
  const std::vector<DriverFailure>& failures() const noexcept { return failures_; }
  // Null when no driver of that name loaded.
  driver::Driver* find(const std::string& name) const;

 private:
  void load(const std::string& path);
  std::vector<LoadedDriver> drivers_;
  std::vector<DriverFailure> failures_;
};

}  // namespace hetero::core
