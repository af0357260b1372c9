// ONNX backend conformance runner: runs the test cases of ONNX's backend test
// data (data/node, data/simple, data/pytorch-*) through heterod on one device
// and compares every output with the backend-test tolerances.
//
//   run_node_tests [options] ROOT...
//     ROOT                 a directory of test_* case directories, or one case
//     --list FILE          run only the cases FILE names; exit 1 if any fails
//     --write-list FILE    run every case, write the names of those that pass
//     --filter GLOB        run only cases whose name matches (fnmatch, e.g. '*conv*')
//     --jobs N             cases run at once (default 2)
//     --timeout SEC        time budget of one case (default 30)
//     --threads N          CPU.num_threads of each case (default cores/jobs)
//     --device NAME        device to compile for (default CPU)
//     --no-fork            run cases in this process (for a debugger)
//     --verbose            print the tail of a failing case's stderr
//
// Every case runs in a forked child: a crash, an abort or a hang in one case is
// that case's failure (with the stage it happened in), never the runner's.
#include <fcntl.h>
#include <fnmatch.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

#include "core/error.h"
#include "core/runtime.h"
#include "tests/onnx_case/onnx_case.h"

namespace fs = std::filesystem;
using namespace hetero;
using Clock = std::chrono::steady_clock;

namespace {

struct Options {
  std::vector<std::string> roots;
  std::string list_file, write_list, filter, device = "CPU";
  int jobs = 2, timeout_s = 30, threads = 0;
  bool fork = true, verbose = false;
};

struct Case {
  std::string name, dir;
};

struct Outcome {
  std::string name;
  bool pass = false;
  std::string reason, ops, unsupported;
};

// A case running in a child process and what it has said so far.
struct Child {
  Case c;
  pid_t pid = -1;
  int notes_fd = -1, stderr_fd = -1;
  std::string notes, err;
  Clock::time_point deadline;
};

[[noreturn]] void usage(const std::string& why) {
  std::cerr << "run_node_tests: " << why << "\n"
            << "usage: run_node_tests [--list FILE | --write-list FILE] [--filter GLOB] [--jobs N]\n"
            << "                      [--timeout SEC] [--threads N] [--device NAME] [--no-fork] [--verbose] ROOT...\n";
  std::exit(2);
}

int to_int(const std::string& flag, const std::string& text, int min) {
  try {
    size_t used = 0;
    const int v = std::stoi(text, &used);
    if (used == text.size() && v >= min) return v;
  } catch (const std::exception&) {
  }
  usage(flag + " wants an integer >= " + std::to_string(min) + ", not '" + text + "'");
}

Options parse_args(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage(a + " needs a value");
      return argv[++i];
    };
    if (a == "--list") o.list_file = value();
    else if (a == "--write-list") o.write_list = value();
    else if (a == "--filter") o.filter = value();
    else if (a == "--device") o.device = value();
    else if (a == "--jobs") o.jobs = to_int(a, value(), 1);
    else if (a == "--timeout") o.timeout_s = to_int(a, value(), 1);
    else if (a == "--threads") o.threads = to_int(a, value(), 1);
    else if (a == "--no-fork") o.fork = false;
    else if (a == "--verbose") o.verbose = true;
    else if (a == "--help" || a == "-h") usage("runs ONNX backend test cases");
    else if (a.rfind("--", 0) == 0) usage("unknown option " + a);
    else o.roots.push_back(a);
  }
  if (o.roots.empty()) usage("no data root given");
  if (!o.list_file.empty() && !o.write_list.empty()) usage("--list and --write-list exclude each other");
  if (o.threads == 0) o.threads = std::max(1, static_cast<int>(std::thread::hardware_concurrency()) / o.jobs);
  return o;
}

// Case directories under the roots, sorted by name within each root.
std::vector<Case> discover(const std::vector<std::string>& roots) {
  std::vector<Case> cases;
  std::set<std::string> seen;
  for (const std::string& root : roots) {
    std::vector<Case> found;
    if (fs::exists(fs::path(root) / "model.onnx")) {
      found.push_back({fs::path(root).filename().string(), root});
    } else {
      std::error_code ec;
      for (const auto& e : fs::directory_iterator(root, ec))
        if (e.is_directory() && fs::exists(e.path() / "model.onnx"))
          found.push_back({e.path().filename().string(), e.path().string()});
      if (ec) usage("cannot read " + root + ": " + ec.message());
    }
    std::sort(found.begin(), found.end(), [](const Case& a, const Case& b) { return a.name < b.name; });
    for (Case& c : found) {
      // Lists name cases by directory name alone, so names must be unique.
      if (!seen.insert(c.name).second) usage("two cases are named " + c.name + " (" + c.dir + ")");
      cases.push_back(std::move(c));
    }
  }
  return cases;
}

// Names in a list file: one a line, '#' starts a comment.
std::vector<std::string> read_list(const std::string& path) {
  std::ifstream in(path);
  if (!in) usage("cannot read list " + path);
  std::vector<std::string> names;
  std::string line;
  while (std::getline(in, line)) {
    line = line.substr(0, line.find('#'));
    const size_t b = line.find_first_not_of(" \t\r"), e = line.find_last_not_of(" \t\r");
    if (b != std::string::npos) names.push_back(line.substr(b, e - b + 1));
  }
  return names;
}

// Cases whose expected outputs are draws from NumPy's global random state
// that the node's attributes do not determine (Bernoulli's: ONNX says its
// values are implementation-specific even with a seed): an unseeded one
// passes by luck now and then, and a list must not take such a pass in.
bool unreproducible(const std::string& name) { return name.rfind("test_bernoulli", 0) == 0; }

// Writes the list through a temporary file so a failed run never leaves a
// half-written list behind.
void write_list(const std::string& path, const Options& o, const std::vector<Outcome>& outcomes) {
  std::vector<std::string> names;
  for (const Outcome& r : outcomes)
    if (r.pass && !unreproducible(r.name)) names.push_back(r.name);
  std::sort(names.begin(), names.end());
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp);
    out << "# ONNX backend test cases heterod passes on " << o.device << ", one name a line.\n"
        << "# Cases from:";
    for (const auto& r : o.roots) out << " " << fs::path(r).filename().string();
    out << "\n# Regenerate with: run_node_tests --write-list FILE ROOT (tests/conformance/README.md)\n";
    for (const auto& n : names) out << n << "\n";
    if (!out.flush()) usage("cannot write " + tmp);
  }
  fs::rename(tmp, path);
  std::cout << "wrote " << names.size() << " names to " << path << "\n";
}

void write_all(int fd, const std::string& s) {
  size_t done = 0;
  while (done < s.size()) {
    const ssize_t n = write(fd, s.data() + done, s.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // the parent is gone or killed us; nothing to tell
    done += static_cast<size_t>(n);
  }
}

std::string one_line(std::string s, size_t max = 400) {
  std::replace(s.begin(), s.end(), '\n', ' ');
  if (s.size() > max) s = s.substr(0, max) + "...";
  return s;
}

onnx_case::NoteFn notes_to(int fd) {
  return [fd](onnx_case::Note kind, const std::string& text) {
    write_all(fd, std::string(1, static_cast<char>(kind)) + " " + one_line(text) + "\n");
  };
}

// Bounds a child's address space so a runaway allocation fails in that case
// instead of driving a shared machine into the OOM killer. AddressSanitizer
// reserves terabytes of shadow memory up front, so its builds go unbounded.
void limit_memory() {
#if defined(__SANITIZE_ADDRESS__)
  return;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
  return;
#endif
#endif
  const rlim_t limit = rlim_t{16} << 30;
  rlimit rl{limit, limit};
  setrlimit(RLIMIT_AS, &rl);
}

core::RuntimeOptions runtime_options(const Options& o) {
  core::RuntimeOptions ro;
  if (o.device.rfind("CPU", 0) == 0) ro.config["CPU.num_threads"] = std::to_string(o.threads);
  return ro;
}

// Whether the parent may load the device's runtime before forking. OpenCL
// runtimes (PoCL) start worker threads when they load, which a forked child
// does not have: there each child loads its own.
bool shared_runtime(const Options& o) { return o.device.rfind("CPU", 0) == 0; }

[[noreturn]] void child_main(const Case& c, const core::Runtime* rt, const Options& o, int notes_fd, int err_fd) {
  dup2(err_fd, STDOUT_FILENO);
  dup2(err_fd, STDERR_FILENO);
  close(err_fd);
  limit_memory();
  std::unique_ptr<core::Runtime> own;
  onnx_case::CaseResult r;
  try {
    if (!rt) rt = (own = std::make_unique<core::Runtime>(runtime_options(o))).get();
    r = onnx_case::run_case(c.dir, *rt, o.device, notes_to(notes_fd));
  } catch (const std::exception& e) {
    r.reason = std::string("loading the drivers: ") + e.what();
  }
  write_all(notes_fd, r.pass ? "R PASS\n" : "R FAIL " + one_line(r.reason) + "\n");
  // _exit: no atexit handlers or static destructors of the parent's state,
  // and no second flush of stdio buffers inherited from it.
  _exit(0);
}

void start(Child& ch, const core::Runtime* rt, const Options& o, const std::vector<Child>& others) {
  int notes[2], err[2];
  if (pipe(notes) != 0 || pipe(err) != 0) throw std::runtime_error(std::string("pipe: ") + strerror(errno));
  std::cout.flush();
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error(std::string("fork: ") + strerror(errno));
  if (pid == 0) {
    // Siblings' pipe ends must not stay open here, or their EOF would wait
    // for this child too.
    for (const Child& s : others) {
      if (s.notes_fd >= 0) close(s.notes_fd);
      if (s.stderr_fd >= 0) close(s.stderr_fd);
    }
    close(notes[0]);
    close(err[0]);
    child_main(ch.c, rt, o, notes[1], err[1]);
  }
  close(notes[1]);
  close(err[1]);
  ch.pid = pid;
  ch.notes_fd = notes[0];
  ch.stderr_fd = err[0];
  ch.deadline = Clock::now() + std::chrono::seconds(o.timeout_s);
}

// Outcome of a finished (or killed) child from the notes it wrote.
Outcome settle(const Child& ch, int status, bool timed_out, bool verbose) {
  Outcome out{ch.c.name, false, {}, {}, {}};
  std::string stage, result;
  std::istringstream lines(ch.notes);
  for (std::string line; std::getline(lines, line);) {
    if (line.size() < 2) continue;
    const std::string text = line.substr(2);
    switch (line[0]) {
      case 'S': stage = text; break;
      case 'O': out.ops = text; break;
      case 'U': out.unsupported = text; break;
      case 'R': result = text; break;
      default: break;
    }
  }
  if (timed_out) {
    out.reason = "timeout: no result after the time budget, during " + stage;
  } else if (WIFSIGNALED(status)) {
    out.reason = std::string("crash: ") + sigabbrev_np(WTERMSIG(status)) + " during " + stage;
  } else if (result == "PASS") {
    out.pass = true;
  } else if (result.rfind("FAIL ", 0) == 0) {
    out.reason = result.substr(5);
  } else {
    out.reason = "exit: status " + std::to_string(WEXITSTATUS(status)) + " without a result, during " + stage;
  }
  // An abort usually explains itself on stderr ("terminate called after ...").
  if (!out.pass && (verbose || result.empty()) && !ch.err.empty())
    out.reason += " | stderr: " + one_line(ch.err.substr(ch.err.size() > 300 ? ch.err.size() - 300 : 0), 300);
  return out;
}

void report(const Outcome& r) {
  if (r.pass) std::cout << "PASS " << r.name << "\n";
  else std::cout << "FAIL " << r.name << ": " << r.reason << "\n";
  std::cout.flush();
}

std::vector<Outcome> run_forked(const std::vector<Case>& cases, const core::Runtime* rt, const Options& o) {
  std::vector<Outcome> outcomes;
  std::vector<Child> running;
  size_t next = 0;
  while (next < cases.size() || !running.empty()) {
    while (running.size() < static_cast<size_t>(o.jobs) && next < cases.size()) {
      Child ch;
      ch.c = cases[next++];
      start(ch, rt, o, running);
      running.push_back(std::move(ch));
    }
    std::vector<pollfd> fds;
    auto wake = Clock::time_point::max();
    for (const Child& ch : running) {
      if (ch.notes_fd >= 0) fds.push_back({ch.notes_fd, POLLIN, 0});
      if (ch.stderr_fd >= 0) fds.push_back({ch.stderr_fd, POLLIN, 0});
      wake = std::min(wake, ch.deadline);
    }
    const auto wait_ms = std::chrono::duration_cast<std::chrono::milliseconds>(wake - Clock::now()).count();
    if (poll(fds.data(), fds.size(), static_cast<int>(std::clamp<long long>(wait_ms, 0, 1000))) < 0 && errno != EINTR)
      throw std::runtime_error(std::string("poll: ") + strerror(errno));

    for (Child& ch : running) {
      for (int* fd : {&ch.notes_fd, &ch.stderr_fd}) {
        if (*fd < 0) continue;
        pollfd p{*fd, POLLIN, 0};
        if (poll(&p, 1, 0) <= 0) continue;
        char buf[4096];
        const ssize_t n = read(*fd, buf, sizeof buf);
        if (n > 0) {
          std::string& into = fd == &ch.notes_fd ? ch.notes : ch.err;
          into.append(buf, static_cast<size_t>(n));
          if (&into == &ch.err && into.size() > 8192) into.erase(0, into.size() - 4096);  // keep the tail
        } else if (n == 0 || errno != EINTR) {
          close(*fd);
          *fd = -1;
        }
      }
    }
    for (auto it = running.begin(); it != running.end();) {
      int status = 0;
      const bool closed = it->notes_fd < 0 && it->stderr_fd < 0;
      const bool late = Clock::now() >= it->deadline;
      if (!closed && !late) {
        ++it;
        continue;
      }
      if (late && !closed) kill(it->pid, SIGKILL);
      while (waitpid(it->pid, &status, 0) < 0 && errno == EINTR) {
      }
      for (int fd : {it->notes_fd, it->stderr_fd})
        if (fd >= 0) close(fd);
      outcomes.push_back(settle(*it, status, late && !closed, o.verbose));
      report(outcomes.back());
      it = running.erase(it);
    }
  }
  return outcomes;
}

std::vector<Outcome> run_in_process(const std::vector<Case>& cases, const core::Runtime& rt, const Options& o) {
  std::vector<Outcome> outcomes;
  for (const Case& c : cases) {
    Outcome out{c.name, false, {}, {}, {}};
    auto r = onnx_case::run_case(c.dir, rt, o.device, [&](onnx_case::Note kind, const std::string& text) {
      if (kind == onnx_case::Note::Ops) out.ops = text;
      if (kind == onnx_case::Note::Unsupported) out.unsupported = text;
    });
    out.pass = r.pass;
    out.reason = r.reason;
    outcomes.push_back(out);
    report(out);
  }
  return outcomes;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> parts;
  std::istringstream in(s);
  for (std::string p; std::getline(in, p, sep);)
    if (!p.empty()) parts.push_back(p);
  return parts;
}

// The op a failure is filed under: the ops the device refused when it said
// so; else the case's one op; for a function's *_expanded case, the op of
// the unexpanded sibling; else its first ops.
std::string group_of(const Outcome& r, const std::map<std::string, std::string>& single_op) {
  if (!r.unsupported.empty()) return r.unsupported;
  std::vector<std::string> ops;
  for (const std::string& op : split(r.ops, ','))
    if (op != "Constant") ops.push_back(op);
  if (ops.size() == 1) return ops[0];
  const size_t ex = r.name.find("_expanded");
  if (ex != std::string::npos) {
    auto it = single_op.find(r.name.substr(0, ex));
    if (it != single_op.end()) return it->second + " (expanded)";
  }
  if (ops.empty()) return "(unknown op)";
  std::string key;
  for (size_t i = 0; i < ops.size() && i < 3; ++i) key += (i ? "+" : "") + ops[i];
  return ops.size() > 3 ? key + "+..." : key;
}

void print_failures_by_op(const std::vector<Outcome>& outcomes) {
  std::map<std::string, std::string> single_op;
  for (const Outcome& r : outcomes) {
    const auto ops = split(r.ops, ',');
    if (ops.size() == 1) single_op[r.name] = ops[0];
  }
  std::map<std::string, std::vector<const Outcome*>> groups;
  for (const Outcome& r : outcomes)
    if (!r.pass) groups[group_of(r, single_op)].push_back(&r);
  if (groups.empty()) return;
  std::vector<std::pair<std::string, std::vector<const Outcome*>>> sorted(groups.begin(), groups.end());
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const auto& a, const auto& b) { return a.second.size() > b.second.size(); });
  std::cout << "\nFailures by op (" << sorted.size() << " groups):\n";
  for (const auto& [op, rs] : sorted) {
    std::cout << "  " << op << ": " << rs.size() << " (" << one_line(rs.front()->reason, 160) << ")\n    ";
    for (size_t i = 0; i < rs.size(); ++i) std::cout << (i ? " " : "") << rs[i]->name;
    std::cout << "\n";
  }
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse_args(argc, argv);
  std::vector<Case> cases = discover(o.roots);
  std::vector<Outcome> missing;

  if (!o.list_file.empty()) {
    std::map<std::string, Case> by_name;
    for (const Case& c : cases) by_name[c.name] = c;
    std::vector<Case> listed;
    for (const std::string& n : read_list(o.list_file)) {
      auto it = by_name.find(n);
      // A listed case that no longer exists is a stale list: fail loudly.
      if (it == by_name.end()) missing.push_back({n, false, "not found under the data roots", {}, {}});
      else listed.push_back(it->second);
    }
    cases = std::move(listed);
  }
  if (!o.filter.empty()) {
    // A glob rather than std::regex: GCC 12's <regex> trips -Wmaybe-uninitialized
    // under the sanitizer build, and a glob is what one types at a shell anyway.
    std::erase_if(cases, [&](const Case& c) { return fnmatch(o.filter.c_str(), c.name.c_str(), 0) != 0; });
  }

  try {
    // One runtime, loaded before forking: each child inherits the loaded
    // driver instead of paying dlopen and driver init per case. The parent
    // never runs inference, so no thread pool exists yet at fork time.
    const core::DeviceString device = core::parse_device_string(o.device);
    if (device.hetero) usage("--device takes one plain device (CPU, OPENCL.1), not " + o.device);
    if (!shared_runtime(o) && o.fork) {
      // Checked in a child of its own, so that this process never loads the runtime.
      const pid_t pid = fork();
      if (pid < 0) throw std::runtime_error(std::string("fork: ") + strerror(errno));
      if (pid == 0) {
        try {
          (void)core::Runtime(runtime_options(o)).resolve(device.devices.front());
          _exit(0);
        } catch (const std::exception& e) {
          std::cerr << "run_node_tests: " << e.what() << "\n";
          _exit(2);
        }
      }
      int st = 0;
      waitpid(pid, &st, 0);
      if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) return 2;
    }
    std::optional<core::Runtime> shared;
    if (shared_runtime(o) || !o.fork) shared.emplace(runtime_options(o));
    const core::Runtime* rt = shared ? &*shared : nullptr;
    if (rt) (void)rt->resolve(device.devices.front());  // no such device: say so once, not per case

    std::vector<Outcome> outcomes = missing;
    for (const Outcome& m : missing) report(m);
    auto ran = o.fork ? run_forked(cases, rt, o) : run_in_process(cases, *rt, o);
    outcomes.insert(outcomes.end(), ran.begin(), ran.end());

    const auto passed = std::count_if(outcomes.begin(), outcomes.end(), [](const Outcome& r) { return r.pass; });
    const auto failed = static_cast<long>(outcomes.size()) - passed;
    print_failures_by_op(outcomes);
    if (!o.write_list.empty()) write_list(o.write_list, o, outcomes);
    std::cout << "\n" << passed << " passed, " << failed << " failed\n";
    return failed && o.write_list.empty() ? 1 : 0;
  } catch (const Failure& e) {
    std::cerr << "run_node_tests: " << status_name(e.status()) << ": " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "run_node_tests: " << e.what() << "\n";
    return 2;
  }
}
