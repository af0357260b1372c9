#include "drivers/level_zero/spirv_compiler.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>

#include "core/error.h"

extern char** environ;

namespace hetero::level_zero {

namespace {

std::string env_or(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v && *v ? v : fallback;
}

// A private temporary directory, removed with everything in it.
struct TempDir {
  std::filesystem::path path;
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "hetero-ze-XXXXXX").string();
    if (!mkdtemp(tmpl.data())) fail(HETERO_IO_ERROR, "cannot create a temporary directory for SPIR-V builds");
    path = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

// Runs argv with stdout and stderr into `log`; the exit status.
int run(const std::vector<std::string>& argv, const std::filesystem::path& log) {
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, args[0], &fa, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) return -1;
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return -1;
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string read_text(const std::filesystem::path& p) {
  std::ifstream in(p);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void step(const std::vector<std::string>& argv, const TempDir& dir, const std::string& what) {
  const auto log = dir.path / "log.txt";
  const int rc = run(argv, log);
  if (rc != 0)
    fail(HETERO_DRIVER_ERROR, what + " failed (" + argv[0] + (rc < 0 ? " could not be run" : ", exit " + std::to_string(rc)) +
                                  "): " + read_text(log));
}

}  // namespace

SpirvToolchain SpirvToolchain::from_build() {
  return {env_or("HETERO_CLANG", HETERO_ZE_CLANG), env_or("HETERO_LLVM_SPIRV", HETERO_ZE_LLVM_SPIRV),
          env_or("HETERO_SPIRV_VAL", HETERO_ZE_SPIRV_VAL)};
}

std::vector<uint8_t> compile_to_spirv(const SpirvToolchain& tools, const std::string& source,
                                      const std::string& options) {
  std::vector<std::string> extra;
  std::istringstream words(options);
  for (std::string w; words >> w;) {
    if (w.rfind("-cl-std=", 0) != 0 && w.rfind("-D", 0) != 0)
      fail(HETERO_INVALID_ARGUMENT, "SPIR-V build option '" + w + "' is not one of -cl-std=..., -D...");
    extra.push_back(w);
  }
  TempDir dir;
  const auto src = dir.path / "kernels.cl", bc = dir.path / "kernels.bc", spv = dir.path / "kernels.spv";
  {
    std::ofstream out(src, std::ios::binary);
    out << source;
    if (!out) fail(HETERO_IO_ERROR, "cannot write " + src.string());
  }
  // The same flags as the build-time modules (build_spirv.py): unoptimised
  // IR, which the device compiler optimises.
  std::vector<std::string> cc = {tools.clang, "-x", "cl", "-cl-std=CL1.2", "-target", "spir64", "-O0",
                                 "-Xclang", "-disable-O0-optnone", "-emit-llvm", "-c",
                                 "-Xclang", "-finclude-default-header"};
  cc.insert(cc.end(), extra.begin(), extra.end());
  cc.insert(cc.end(), {"-o", bc.string(), src.string()});
  step(cc, dir, "compiling OpenCL C to LLVM IR");
  step({tools.llvm_spirv, bc.string(), "-o", spv.string()}, dir, "translating LLVM IR to SPIR-V");
  step({tools.spirv_val, spv.string()}, dir, "validating SPIR-V");
  std::ifstream in(spv, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::string validate_spirv(const SpirvToolchain& tools, const std::vector<uint8_t>& module) {
  TempDir dir;
  const auto spv = dir.path / "module.spv", log = dir.path / "log.txt";
  {
    std::ofstream out(spv, std::ios::binary);
    out.write(reinterpret_cast<const char*>(module.data()), static_cast<std::streamsize>(module.size()));
  }
  const int rc = run({tools.spirv_val, spv.string()}, log);
  if (rc == 0) return {};
  const std::string text = read_text(log);
  return text.empty() ? "spirv-val exit " + std::to_string(rc) : text;
}

}  // namespace hetero::level_zero
