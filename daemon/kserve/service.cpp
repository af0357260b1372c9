#include "daemon/kserve/service.h"

#include <grpcpp/support/proto_buffer_reader.h>

#include <algorithm>
#include <chrono>

#include "daemon/kserve/grpc_predict_v2.grpc.pb.h"
#include "daemon/kserve/repository.h"
#include "daemon/kserve/tensor_convert.h"
#include "daemon/model_registry.h"

namespace hetero::daemon::kserve {

namespace {

using namespace inference;

// heterod serves one version of each model, and calls it "1".
constexpr const char* kVersion = "1";

template <typename AnyCall>
bool check_version(const std::string& model, const std::string& version, AnyCall& call) {
  if (version.empty() || version == kVersion) return true;
  call.finish(HETERO_NOT_FOUND, "model '" + model + "' has no version '" + version + "' (heterod serves version " +
                                    kVersion + " of each model)");
  return false;
}

// Loop thread: the model a call names, ready, at a version heterod serves;
// otherwise answers the call (NOT_FOUND for a model or version heterod does
// not serve, UNAVAILABLE while the model loads) and returns null.
template <typename AnyCall>
std::shared_ptr<ServedModel> served_model(const ModelRegistry& registry, const std::string& name, const std::string& version,
                                          AnyCall& call) {
  hetero_status status = HETERO_OK;
  std::string why;
  std::shared_ptr<ServedModel> model = registry.ready_model(name, status, why);
  if (!model) {
    call.finish(status, why);
    return nullptr;
  }
  if (!check_version(name, version, call)) return nullptr;
  return model;
}

// What ModelMetadata and ModelConfig both call the runtime that serves a
// model: heterod on its device ("heterod_CPU", "heterod_HETERO:OPENCL,CPU").
// Triton's metadata answers its configuration's platform; so does heterod's.
std::string platform_of(const ModelDescription& model) { return "heterod_" + model.device; }

void set_tensor_metadata(ModelMetadataResponse::TensorMetadata& out, const Port& port) {
  out.set_name(port.name);
  out.set_datatype(datatype_name(port.dtype));
  if (port.shape)
    for (int64_t d : *port.shape) out.add_shape(d);
}

// A port as Triton's configuration describes it: its dims are the whole
// shape (max_batch_size is 0), -1 where any size goes; none where even the
// rank is unknown, as in ModelMetadata.
template <typename Tensor>
void set_config_tensor(Tensor& out, const Port& port) {
  out.set_name(port.name);
  out.set_data_type(config_data_type(port.dtype));
  if (port.shape)
    for (int64_t d : *port.shape) out.add_dims(d);
}

void set_duration(StatisticDuration& out, uint64_t count, uint64_t ns) {
  out.set_count(count);
  out.set_ns(ns);
}

void set_statistics(inference::ModelStatistics& out, const ModelStatistics& stats) {
  const uint64_t successes = stats.requests - stats.errors;
  out.set_name(stats.name);
  out.set_version(kVersion);
  out.set_last_inference(stats.last_request_ms);
  out.set_inference_count(successes);
  out.set_execution_count(successes);
  InferStatistics& s = *out.mutable_inference_stats();
  set_duration(*s.mutable_success(), successes, stats.success_ns);
  set_duration(*s.mutable_fail(), stats.errors, stats.failure_ns);
  set_duration(*s.mutable_queue(), stats.runs, stats.queue_ns);
  // heterod times an inference whole: its inputs' and outputs' handling is
  // inside compute_infer.
  set_duration(*s.mutable_compute_infer(), stats.runs, stats.compute_ns);
}

}  // namespace

// An infer job of the v2 protocol: it answers by finishing its call, whose
// response it fills with the outputs asked for.
class V2Job final : public InferJob {
 public:
  V2Job(std::shared_ptr<InferCall> call, const ModelRegistry* registry) : call(std::move(call)), registry_(registry) {
    client = this->call.get();
  }

  bool client_open() const override { return !call->finished() && !call->cancelled(); }
  void take_outputs(std::span<const wire::OutgoingTensor> produced) override {
    ModelInferResponse& r = call->response;
    r.set_model_name(call->request.model_name());
    r.set_model_version(kVersion);
    r.set_id(call->request.id());
    for (size_t k : outputs) add_output(r, produced[k]);
  }
  void answer() override {
    call->finish(grpc::Status::OK);
    registry_->answered();
  }
  void answer_error(hetero_status status, const std::string& message) override {
    call->finish(status, message);
    registry_->answered();
  }
  void release_inputs() override {
    InferJob::release_inputs();
    realigned.clear();
  }

  const std::shared_ptr<InferCall> call;  // the inputs point into its request
  std::vector<std::vector<uint64_t>> realigned;  // inputs copied out of narrower typed fields
  std::vector<size_t> outputs;            // output indices, in reply order
  Clock::time_point client_deadline = Clock::time_point::max();
  // The sequence it is a call of, as Triton's parameters name it (empty: none).
  std::string sequence_id;
  bool sequence_start = false, sequence_end = false;
  // What the completion-queue thread found wrong with the request (OK:
  // nothing), answered on the loop thread, where the model it names counts
  // it with its failures.
  hetero_status refused = HETERO_OK;
  std::string refusal;

 private:
  const ModelRegistry* registry_;
};

Service::Service(ModelRegistry& registry, std::shared_ptr<CallRegister> calls, RequesterOf requester_of)
    : registry_(registry),
      post_(registry.loop_post()),
      calls_(std::move(calls)),
      requester_of_(std::move(requester_of)),
      parse_limit_(wire::request_parse_limit(registry.config().kserve.max_message_bytes)) {}

bool Service::parse_bounded(Call& call, google::protobuf::Message& into) const {
  const google::protobuf::Descriptor& type = *into.GetDescriptor();
  const auto not_one = [&] { call.finish(HETERO_INVALID_ARGUMENT, "the request is not a " + type.name() + " message"); };
  wire::DecodedSize size;
  {
    grpc::ProtoBufferReader reader(&call.message());
    if (!wire::estimate_decoded_size(reader, type, parse_limit_, size)) {
      not_one();
      return false;
    }
  }
  if (size.over_limit) {
    call.finish(HETERO_OUT_OF_MEMORY, "the request would take more than " + std::to_string(parse_limit_.bytes) +
                                          " bytes or " + std::to_string(parse_limit_.messages) +
                                          " messages once parsed (at most twice kserve.max_message_bytes plus 1 MiB)");
    return false;
  }
  grpc::ProtoBufferReader reader(&call.message());
  if (!into.ParseFromZeroCopyStream(&reader)) {
    not_one();
    return false;
  }
  // Parsed: its bytes are not needed any more.
  call.message().Clear();
  return true;
}

template <typename Request, typename Response>
void Service::route(const char* name, void (Service::*handle)(const CallPtr<Request, Response>&)) {
  const std::string method = std::string("/") + GRPCInferenceService::service_full_name() + "/" + name;
  routes_[method] = [this, handle](const std::shared_ptr<Call>& call) {
    auto typed = std::make_shared<UnaryCall<Request, Response>>(call);
    if (!parse_bounded(*call, typed->request)) return;
    if (stopping_.load()) return typed->finish(grpc::Status(grpc::StatusCode::UNAVAILABLE, "heterod is stopping"));
    (this->*handle)(typed);
  };
}

void Service::dispatch(const std::shared_ptr<Call>& call) {
  const auto route = routes_.find(call->method());
  if (route == routes_.end())
    return call->finish(grpc::Status(grpc::StatusCode::UNIMPLEMENTED,
                                     "heterod serves no method " + call->method() + " (it serves " +
                                         GRPCInferenceService::service_full_name() + ")"));
  route->second(call);
}

void Service::listen(grpc::ServerCompletionQueue* queue, std::shared_ptr<ReplyBudget> replies,
                     std::chrono::milliseconds message_timeout, std::chrono::milliseconds reply_timeout) {
  route("ServerLive", &Service::server_live);
  route("ServerReady", &Service::server_ready);
  route("ModelReady", &Service::model_ready);
  route("ServerMetadata", &Service::server_metadata);
  route("ModelMetadata", &Service::model_metadata);
  route("ModelConfig", &Service::model_config);
  route("ModelInfer", &Service::model_infer);
  route("ModelStatistics", &Service::model_statistics);
  route("RepositoryIndex", &Service::repository_index);
  route("RepositoryModelLoad", &Service::repository_load);
  route("RepositoryModelUnload", &Service::repository_unload);
  auto listening = std::make_shared<const Listening>(
      Listening{&generic_, queue, [this](const std::shared_ptr<Call>& call) { dispatch(call); }, calls_,
                std::move(replies), message_timeout, reply_timeout});
  // Calls awaited at once: each one that arrives awaits the next, so this
  // is how many can arrive together before gRPC queues them.
  constexpr int kAwaiting = 8;
  for (int k = 0; k < kAwaiting; ++k) Call::listen(listening);
}

template <typename Request, typename Response, typename Task>
void Service::on_loop(const CallPtr<Request, Response>& call, Task task) {
  post_->post([call, task = std::move(task)] {
    if (call->cancelled()) return call->finish(grpc::Status::CANCELLED);
    task(*call);
  });
}

void Service::server_live(const CallPtr<ServerLiveRequest, ServerLiveResponse>& call) {
  // Answered by the loop thread: a daemon whose loop is stuck is not live.
  on_loop(call, [](auto& c) {
    c.response.set_live(true);
    c.finish(grpc::Status::OK);
  });
}

void Service::server_ready(const CallPtr<ServerReadyRequest, ServerReadyResponse>& call) {
  on_loop(call, [this](auto& c) {
    c.response.set_ready(registry_.healthy());
    c.finish(grpc::Status::OK);
  });
}

void Service::model_ready(const CallPtr<ModelReadyRequest, ModelReadyResponse>& call) {
  on_loop(call, [this](auto& c) {
    const auto it = registry_.models().find(c.request.name());
    const std::string& version = c.request.version();
    c.response.set_ready(it != registry_.models().end() && it->second.state == ModelState::Ready &&
                         (version.empty() || version == kVersion));
    c.finish(grpc::Status::OK);
  });
}

void Service::server_metadata(const CallPtr<ServerMetadataRequest, ServerMetadataResponse>& call) {
  call->response.set_name("heterod");
  call->response.set_version(hetero_library_version());
  call->response.add_extensions("model_repository");
  call->response.add_extensions("statistics");
  call->finish(grpc::Status::OK);
}

void Service::model_metadata(const CallPtr<ModelMetadataRequest, ModelMetadataResponse>& call) {
  on_loop(call, [this](auto& c) {
    const auto model = served_model(registry_, c.request.name(), c.request.version(), c);
    if (!model) return;
    const ModelDescription info = model->describe();
    c.response.set_name(info.name);
    c.response.add_versions(kVersion);
    c.response.set_platform(platform_of(info));
    for (const Port& port : info.inputs) set_tensor_metadata(*c.response.add_inputs(), port);
    for (const Port& port : info.outputs) set_tensor_metadata(*c.response.add_outputs(), port);
    c.finish(grpc::Status::OK);
  });
}

void Service::model_config(const CallPtr<ModelConfigRequest, ModelConfigResponse>& call) {
  on_loop(call, [this](auto& c) {
    const auto model = served_model(registry_, c.request.name(), c.request.version(), c);
    if (!model) return;
    const ModelDescription info = model->describe();
    inference::ModelConfig& config = *c.response.mutable_config();
    config.set_name(info.name);
    // Not one of Triton's platforms ("onnxruntime_onnx" would send a tool
    // down paths for a runtime heterod is not): the same platform as
    // ModelMetadata's, and "heterod" as the backend that runs it. Triton's
    // tools read them to find ensembles ("ensemble"), which this is not.
    config.set_platform(platform_of(info));
    config.set_backend("heterod");
    // heterod runs each request as it comes, never several batched into one.
    config.set_max_batch_size(0);
    for (const Port& port : info.inputs) set_config_tensor(*config.add_input(), port);
    for (const Port& port : info.outputs) set_config_tensor(*config.add_output(), port);
    c.finish(grpc::Status::OK);
  });
}

void Service::model_infer(const std::shared_ptr<InferCall>& call) {
  const ModelInferRequest& request = call->request;
  auto job = std::make_unique<V2Job>(call, &registry_);
  job->received = Clock::now();
  // Everything that needs no model is checked here, off the loop thread;
  // what is wrong is answered from the loop thread, which counts it in the
  // model's statistics.
  try {
    for (const auto& [key, value] : request.parameters()) {
      if (key == "timeout" && value.parameter_choice_case() == InferParameter::kInt64Param && value.int64_param() >= 0) {
        job->client_deadline = std::min(job->client_deadline, job->received + std::chrono::microseconds(value.int64_param()));
        continue;
      }
      // Sequences, as Triton's sequence batcher takes them: an id (a
      // number, or a string), and flags on the first and the last call.
      if (key == "sequence_id" && value.parameter_choice_case() == InferParameter::kInt64Param &&
          value.int64_param() > 0) {
        job->sequence_id = std::to_string(value.int64_param());
        continue;
      }
      if (key == "sequence_id" && value.parameter_choice_case() == InferParameter::kUint64Param &&
          value.uint64_param() > 0) {
        job->sequence_id = std::to_string(value.uint64_param());
        continue;
      }
      if (key == "sequence_id" && value.parameter_choice_case() == InferParameter::kStringParam &&
          !value.string_param().empty() && value.string_param().size() <= 256) {
        job->sequence_id = value.string_param();
        continue;
      }
      if ((key == "sequence_start" || key == "sequence_end") &&
          value.parameter_choice_case() == InferParameter::kBoolParam) {
        (key == "sequence_start" ? job->sequence_start : job->sequence_end) = value.bool_param();
        continue;
      }
      fail(HETERO_INVALID_ARGUMENT, "parameter '" + key + "' is not one heterod takes (timeout: an int64, in us; "
                                    "sequence_id: a number above 0 or a string of 1-256 bytes; sequence_start, "
                                    "sequence_end: bools)");
    }
    for (const auto& output : request.outputs())
      for (const auto& [key, value] : output.parameters())
        // Outputs are raw bytes over gRPC whatever this says.
        if (key != "binary_data" || value.parameter_choice_case() != InferParameter::kBoolParam)
          fail(HETERO_INVALID_ARGUMENT, "output '" + output.name() + "': parameter '" + key + "' is not one heterod takes");
    job->inputs = decode_inputs(request, job->realigned);
  } catch (const Failure& e) {
    job->refused = e.status();
    job->refusal = e.what();
  }
  const auto client = call->deadline();
  if (client != std::chrono::system_clock::time_point::max()) {
    const auto left = std::chrono::duration_cast<Clock::duration>(client - std::chrono::system_clock::now());
    job->client_deadline = std::min(job->client_deadline, job->received + left);
  }
  auto holder = std::make_shared<std::unique_ptr<V2Job>>(std::move(job));
  post_->post([this, holder] { submit_infer(std::move(*holder)); });
}

void Service::submit_infer(std::unique_ptr<V2Job> job) {
  InferCall& call = *job->call;
  if (call.cancelled()) return call.finish(grpc::Status::CANCELLED);
  const ModelInferRequest& request = call.request;
  const std::string& name = request.model_name();
  // A model or version heterod does not serve has no statistics to count in.
  const std::shared_ptr<ServedModel> model = served_model(registry_, name, request.model_version(), call);
  if (!model) return;
  // Every other refusal is one of the model's failed requests.
  auto refuse = [&](hetero_status status, const std::string& message) {
    model->count_refused(job->received, status);
    call.finish(status, message);
  };
  if (job->refused != HETERO_OK) return refuse(job->refused, job->refusal);

  std::string why;
  if (!job->sequence_id.empty()) {
    // The v2 listener's sequences are its client's (a uid, or every TCP
    // client together), not a connection's: gRPC clients reconnect.
    const SequenceKey key{requester_of_(call.peer()), nullptr, name, job->sequence_id};
    hetero_status status = HETERO_OK;
    job->sequence = registry_.sequences().begin_call(model, key, job->sequence_start, job->sequence_end, status, why);
    if (!job->sequence) return refuse(status, why);
  } else if (job->sequence_start || job->sequence_end) {
    return refuse(HETERO_INVALID_ARGUMENT, "sequence_start and sequence_end need a sequence_id");
  }
  if (const hetero_status placed = model->place_inputs(*job, why); placed != HETERO_OK) return refuse(placed, why);
  const std::vector<std::string>& outputs = model->output_names();
  for (const auto& wanted : request.outputs()) {
    const auto pos = std::find(outputs.begin(), outputs.end(), wanted.name());
    if (pos == outputs.end())
      return refuse(HETERO_INVALID_ARGUMENT, "model '" + name + "' has no output '" + wanted.name() + "'");
    const auto index = static_cast<size_t>(pos - outputs.begin());
    if (std::find(job->outputs.begin(), job->outputs.end(), index) != job->outputs.end())
      return refuse(HETERO_INVALID_ARGUMENT, "output '" + wanted.name() + "' is requested twice");
    job->outputs.push_back(index);
  }
  // A sequence's state outputs stay in the daemon unless asked for.
  if (request.outputs().empty())
    for (size_t k = 0; k < outputs.size(); ++k)
      if (!job->sequence || !job->sequence->is_state_output(k)) job->outputs.push_back(k);

  job->deadline = std::min(job->client_deadline,
                           job->received + std::chrono::milliseconds(registry_.config().limits.request_timeout_ms));
  ServedModel::submit(model, std::move(job));
}

void Service::model_statistics(const CallPtr<ModelStatisticsRequest, ModelStatisticsResponse>& call) {
  on_loop(call, [this](auto& c) {
    if (c.request.name().empty()) {
      for (const auto& [name, entry] : registry_.models())
        if (entry.model) set_statistics(*c.response.add_model_stats(), entry.model->statistics());
      return c.finish(grpc::Status::OK);
    }
    const auto model = served_model(registry_, c.request.name(), c.request.version(), c);
    if (!model) return;
    set_statistics(*c.response.add_model_stats(), model->statistics());
    c.finish(grpc::Status::OK);
  });
}

void Service::repository_index(const CallPtr<RepositoryIndexRequest, RepositoryIndexResponse>& call) {
  on_loop(call, [this](auto& c) {
    const std::string& repository = c.request.repository_name();
    if (!known_repository(registry_.config(), repository))
      return c.finish(HETERO_NOT_FOUND, "repository '" + repository + "' is not one of the config's model_dirs");
    for (const IndexEntry& entry : kserve::repository_index(registry_, repository, c.request.ready())) {
      RepositoryIndexResponse::ModelIndex* model = c.response.add_models();
      model->set_name(entry.name);
      if (entry.state == "READY") model->set_version(kVersion);
      model->set_state(entry.state);
      model->set_reason(entry.reason);
    }
    c.finish(grpc::Status::OK);
  });
}

void Service::repository_load(const CallPtr<RepositoryModelLoadRequest, RepositoryModelLoadResponse>& call) {
  on_loop(call, [this, call](auto& c) {
    LoadTarget target;
    std::string why;
    if (const hetero_status status = resolve_load(registry_, c.request, requester_of_(c.peer()), target, why);
        status != HETERO_OK)
      return c.finish(status, why);
    registry_.load_model(target.spec, target.from_config,
                       [call](hetero_status status, const std::string& message) { call->finish(status, message); });
  });
}

void Service::repository_unload(const CallPtr<RepositoryModelUnloadRequest, RepositoryModelUnloadResponse>& call) {
  on_loop(call, [this](auto& c) {
    const std::string& name = c.request.model_name();
    for (const auto& [key, value] : c.request.parameters())
      // heterod has no ensembles: nothing depends on a model.
      if (key != "unload_dependents" || value.parameter_choice_case() != ModelRepositoryParameter::kBoolParam)
        return c.finish(HETERO_INVALID_ARGUMENT, "parameter '" + key + "' is not one heterod takes");
    if (!known_repository(registry_.config(), c.request.repository_name()))
      return c.finish(HETERO_NOT_FOUND,
                      "repository '" + c.request.repository_name() + "' is not one of the config's model_dirs");
    std::string why;
    if (const hetero_status status = registry_.unload_model(name, requester_of_(c.peer()), why); status != HETERO_OK)
      return c.finish(status, why);
    c.finish(grpc::Status::OK);
  });
}

}  // namespace hetero::daemon::kserve
