// heterod: the inference daemon. Runs in the foreground (systemd's
// Type=notify), logs to stderr with levels, and serves the models of its
// config on a Unix socket until SIGTERM.
#include <google/protobuf/stubs/logging.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/log.h"
#include "core/mapped_file.h"
#include "daemon/config.h"
#include "daemon/log_sink.h"
#include "daemon/model_check.h"
#include "daemon/server.h"
#include "hetero/hetero.h"

namespace {

constexpr const char* kDefaultConfig = HETEROD_DEFAULT_CONFIG;

const char kUsage[] =
    "usage: heterod [--config FILE] [--check] [--log-level LEVEL] [--version] [--help]\n"
    "\n"
    "  --config FILE      the daemon's config (default " HETEROD_DEFAULT_CONFIG ")\n"
    "  --log-level LEVEL  debug, info, warning or error: the least severe line\n"
    "                     logged, over the config's log_level (default info)\n"
    "  --check            check the config and what it names as a start would,\n"
    "                     short of compiling (cache directory, TLS files,\n"
    "                     drivers; each model's file, shapes, device, config\n"
    "                     and policy), then exit: 0 when all is well\n";

}  // namespace

int main(int argc, char** argv) {
  std::string config_path = kDefaultConfig;
  bool check_only = false;
  for (int k = 1; k < argc; ++k) {
    const std::string arg = argv[k];
    if (arg == "--config" && k + 1 < argc) {
      config_path = argv[++k];
    } else if (arg.rfind("--config=", 0) == 0) {
      config_path = arg.substr(9);
    } else if ((arg == "--log-level" && k + 1 < argc) || arg.rfind("--log-level=", 0) == 0) {
      const std::string name = arg == "--log-level" ? argv[++k] : arg.substr(12);
      const std::optional<hetero::core::LogLevel> level = hetero::daemon::log_level_named(name);
      if (!level) {
        std::fprintf(stderr, "heterod: --log-level '%s' must be %s\n%s", name.c_str(),
                     hetero::daemon::kLogLevelNames, kUsage);
        return 2;
      }
      hetero::daemon::pin_log_level(*level);
    } else if (arg == "--check") {
      check_only = true;
    } else if (arg == "--version") {
      std::printf("heterod %s\n", hetero_library_version());
      return 0;
    } else if (arg == "--help" || arg == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    } else {
      std::fprintf(stderr, "heterod: unknown argument '%s'\n%s", arg.c_str(), kUsage);
      return 2;
    }
  }
  // Model files are read, never mapped: a client who can write to a
  // model_dirs directory could otherwise truncate a served model and kill
  // the daemon with SIGBUS (core/mapped_file.h).
  hetero::core::never_map_files();
  // Replies go out with MSG_NOSIGNAL; this covers a closed stderr too.
  std::signal(SIGPIPE, SIG_IGN);
  // Under systemd, stderr goes to the journal, which reads a "<N>" syslog
  // priority at the start of each line.
  hetero::daemon::install_log_sink(std::getenv("JOURNAL_STREAM") != nullptr);
  // A client can make protobuf complain (invalid UTF-8 in a string) at will;
  // the daemon already answers such a frame, so the complaint is not logged.
  google::protobuf::SetLogHandler(nullptr);
  setvbuf(stderr, nullptr, _IOLBF, 0);

  try {
    hetero::daemon::Config config = hetero::daemon::read_config(config_path);
    hetero::daemon::set_log_level(config.log_level);
    // The files the config names, checked once for both: --check reports
    // every problem; a start refuses only those the daemon cannot run with
    // (a model whose file is wrong fails alone, and its load says why).
    std::vector<hetero::daemon::FileProblem> problems = hetero::daemon::check_files(config, check_only);
    if (check_only) {
      // Then what a start resolves, short of compiling: the drivers, and
      // each model's inputs, device and config.
      std::set<std::string> known_bad;
      for (const auto& p : problems) known_bad.insert(p.model);
      try {
        const hetero::daemon::CorePtr core = hetero::daemon::create_core(config);
        for (auto& p : hetero::daemon::check_models(core.get(), config, known_bad)) problems.push_back(std::move(p));
      } catch (const hetero::Failure& e) {
        problems.push_back({e.what(), true, {}});
      }
      for (const auto& p : problems) hetero::core::log(hetero::core::LogLevel::Error, p.message);
      if (!problems.empty()) return 1;
      std::printf("%s: ok (%zu models)\n", config_path.c_str(), config.models.size());
      return 0;
    }
    for (const auto& p : problems)
      if (p.fatal) hetero::fail(HETERO_INVALID_ARGUMENT, p.message);
    hetero::daemon::Server server(std::move(config));
    return server.run();
  } catch (const hetero::Failure& e) {
    hetero::core::log(hetero::core::LogLevel::Error, e.what());
    return 1;
  } catch (const std::exception& e) {
    hetero::core::log(hetero::core::LogLevel::Error, std::string("internal error: ") + e.what());
    return 1;
  }
}
