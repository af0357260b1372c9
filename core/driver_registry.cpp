#include "core/driver_registry.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "core/driver_abi_stamp.h"
#include "core/error.h"
#include "hetero_build_config.h"

namespace hetero::core {

namespace fs = std::filesystem;

namespace {

void split_path(const std::string& list, std::vector<std::string>& out) {
  size_t start = 0;
  while (start <= list.size()) {
    const size_t colon = list.find(':', start);
    const std::string dir = list.substr(start, colon - start);
    if (!dir.empty()) out.push_back(dir);
    if (colon == std::string::npos) break;
    start = colon + 1;
  }
}

// True when this library was loaded from the build tree, so that a developer's
// fresh build uses its own modules before any older installed ones.
bool running_from_build_tree() {
  Dl_info info{};
  if (!dladdr(reinterpret_cast<void*>(&running_from_build_tree), &info) || !info.dli_fname) return false;
  const std::string self = info.dli_fname;
  const std::string build_root = fs::path(HETERO_BUILD_DRIVER_DIR).parent_path().string();
  return self.rfind(build_root + "/", 0) == 0;
}

// The build tree keeps each module in drivers/<name>/.
void add_build_dirs(std::vector<std::string>& out) {
  std::error_code ec;
  std::vector<std::string> dirs;
  for (const auto& entry : fs::directory_iterator(HETERO_BUILD_DRIVER_DIR, ec))
    if (entry.is_directory(ec)) dirs.push_back(entry.path().string());
  std::sort(dirs.begin(), dirs.end());
  out.insert(out.end(), dirs.begin(), dirs.end());
}

bool is_module_name(const std::string& file) {
  const std::string prefix = "hetero_driver_", suffix = ".so";
  return file.size() > prefix.size() + suffix.size() && file.rfind(prefix, 0) == 0 &&
         file.compare(file.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Why the module behind `handle` is not of this build, or "" when it is.
std::string stamp_mismatch(void* handle) {
  const char* stamp = static_cast<const char*>(dlsym(handle, HETERO_DRIVER_STAMP_SYMBOL));
  if (!stamp) {
    if (dlsym(handle, "hetero_driver_open"))
      return "a driver module of an older heterod, from before driver ABI stamps (it exports hetero_driver_open); "
             "rebuild it with this core (driver ABI stamp " HETERO_DRIVER_ABI_STAMP ")";
    return "not a heterod driver: it does not export " HETERO_DRIVER_STAMP_SYMBOL;
  }
  // A stamp is short; a longer string is not one.
  const size_t length = strnlen(stamp, 128);
  const std::string mine(stamp, length);
  if (length == 128) return "its " HETERO_DRIVER_STAMP_SYMBOL " is not a driver ABI stamp";
  if (mine == HETERO_DRIVER_ABI_STAMP) return {};
  return "built by another heterod build or against other core headers: its driver ABI stamp is " + mine +
         ", this core's is " HETERO_DRIVER_ABI_STAMP "; rebuild it with this core";
}

// Settings that the runtimes driver modules bring read from the environment
// once, when they are loaded, and that heterod was measured with; the user's
// own values, set before, win.
//
// GOMP_SPINCOUNT: how long an idle OpenMP thread (the CPU driver's, through
// oneDNN) spins for the next parallel region before it sleeps, in pause
// instructions. libgomp's default is 300000, 9 to 15 ms, which a model run a
// dozen times a second pays after every inference: the openWakeWord
// embedding at 12.5/s burnt 1.8x its flat-out CPU time per inference. 10000
// (0.3 to 0.5 ms) still bridges the microseconds between two regions of an
// inference and a client's next request.
void set_runtime_env_defaults() {
  static const bool done = [] {
    // Too late once libgomp is loaded (the host process linked it): it read
    // its settings then.
    if (void* gomp = dlopen("libgomp.so.1", RTLD_NOW | RTLD_NOLOAD)) {
      dlclose(gomp);
      return true;
    }
    setenv("GOMP_SPINCOUNT", "10000", /*overwrite=*/0);
    return true;
  }();
  (void)done;
}

}  // namespace

std::vector<std::string> driver_search_path(const std::string& configured) {
  std::vector<std::string> path;
  split_path(configured, path);
  if (const char* env = std::getenv("HETERO_DRIVER_PATH")) split_path(env, path);
  // The build directory is a path of the machine that built this core: on a
  // box the core was installed on (a Debian package) it may hold anything,
  // or another build's modules, and must not be searched.
  if (running_from_build_tree()) add_build_dirs(path);
  path.push_back(HETERO_DRIVER_INSTALL_DIR);
  return path;
}

struct DriverRegistry::Init {
  std::once_flag once;
  bool ok = false;  // written once, inside `once`
};

DriverRegistry::~DriverRegistry() = default;

DriverRegistry::DriverRegistry(const std::vector<std::string>& search_path) {
  for (const std::string& dir : search_path) {
    std::error_code ec;
    if (fs::is_regular_file(dir, ec)) {  // a module named directly
      load(dir);
      continue;
    }
    std::vector<std::string> files;
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
      const std::string name = entry.path().filename().string();
      if (is_module_name(name)) files.push_back(entry.path().string());
    }
    std::sort(files.begin(), files.end());
    for (const std::string& f : files) load(f);
  }
}

void DriverRegistry::load(const std::string& path) {
  for (const LoadedDriver& d : drivers_)
    if (d.path == path) return;
  set_runtime_env_defaults();
  // RTLD_LOCAL: modules' own dependencies (oneDNN, the OpenCL loader) stay
  // private to them.
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* err = dlerror();
    load_failures_.push_back({path, std::string("cannot load: ") + (err ? err : "unknown dlopen error")});
    return;
  }
  // The stamp first: a module from another build is never called.
  if (std::string why = stamp_mismatch(handle); !why.empty()) {
    load_failures_.push_back({path, why});
    dlclose(handle);
    return;
  }
  auto create = reinterpret_cast<hetero_driver_create_fn>(dlsym(handle, HETERO_DRIVER_ENTRY_SYMBOL));
  if (!create) {
    load_failures_.push_back({path, "not a heterod driver: it does not export " HETERO_DRIVER_ENTRY_SYMBOL});
    dlclose(handle);
    return;
  }
  char error[512] = {0};
  driver::Driver* raw = nullptr;
  try {
    raw = create(error, sizeof error);
  } catch (const std::exception& e) {
    std::snprintf(error, sizeof error, "%s", e.what());
  } catch (...) {
    std::snprintf(error, sizeof error, "initialisation threw an unknown exception");
  }
  if (!raw) {
    error[sizeof error - 1] = 0;
    load_failures_.push_back({path, error[0] ? error : "initialisation failed without a reason"});
    dlclose(handle);
    return;
  }
  // A driver in use is never unmapped: an exception it threw, a compiled model
  // or a worker thread of its runtime (OpenMP, an OpenCL ICD) can outlive the
  // Driver object, and their code and type info must stay valid.
  if (void* pinned = dlopen(path.c_str(), RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE)) dlclose(pinned);
  std::shared_ptr<driver::Driver> drv(raw, [handle](driver::Driver* d) {
    delete d;
    dlclose(handle);
  });
  const std::string name = drv->name();
  for (const LoadedDriver& d : drivers_) {
    if (d.driver->name() == name) {
      // Earlier search-path entries win; a later copy is not an error.
      return;
    }
  }
  drivers_.push_back({path, std::move(drv)});
  init_.push_back(std::make_unique<Init>());
}

std::vector<DriverFailure> DriverRegistry::failures() const {
  std::vector<DriverFailure> all = load_failures_;
  std::lock_guard lock(init_failures_mutex_);
  all.insert(all.end(), init_failures_.begin(), init_failures_.end());
  return all;
}

driver::Driver* DriverRegistry::loaded(const std::string& name) const {
  for (const LoadedDriver& d : drivers_)
    if (d.driver->name() == name) return d.driver.get();
  return nullptr;
}

driver::Driver* DriverRegistry::find(const std::string& name) const {
  for (size_t i = 0; i < drivers_.size(); ++i) {
    const LoadedDriver& d = drivers_[i];
    if (d.driver->name() != name) continue;
    Init& init = *init_[i];
    std::call_once(init.once, [&] {
      std::string why;
      try {
        d.driver->initialize();
        init.ok = true;
        return;
      } catch (const std::exception& e) {
        why = e.what();
      } catch (...) {
        why = "an unknown exception";
      }
      std::lock_guard lock(init_failures_mutex_);
      init_failures_.push_back({d.path, name + " driver initialisation failed: " + why});
    });
    return init.ok ? d.driver.get() : nullptr;
  }
  return nullptr;
}

}  // namespace hetero::core
