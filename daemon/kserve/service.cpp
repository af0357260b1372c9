#include "daemon/kserve/service.h"

#include <algorithm>
#include <chrono>

#include "daemon/c_api.h"
#include "daemon/kserve/repository.h"
#include "daemon/kserve/tensor_convert.h"
#include "daemon/server.h"

namespace hetero::daemon::kserve {

namespace {

using namespace inference;

// heterod serves one version of each model, and calls it "1".
constexpr const char* kVersion = "1";

bool check_version(const std::string& model, const std::string& version, Call& call) {
  if (version.empty() || version == kVersion) return true;
  call.finish(HETERO_NOT_FOUND, "model '" + model + "' has no version '" + version + "' (heterod serves version " +
                                    kVersion + " of each model)");
  return false;
}

void set_tensor_metadata(ModelMetadataResponse::TensorMetadata& out, const wire::Port& port) {
  out.set_name(port.name());
  out.set_datatype(datatype_name(port.dtype()));
  if (port.rank() >= 0)
    for (int64_t d : port.dims()) out.add_shape(d);
}

void set_duration(StatisticDuration& out, uint64_t count, uint64_t ns) {
  out.set_count(count);
  out.set_ns(ns);
}

void set_statistics(inference::ModelStatistics& out, const wire::ModelStats& stats) {
  const uint64_t successes = stats.requests() - stats.errors();
  out.set_name(stats.name());
  out.set_version(kVersion);
  out.set_last_inference(stats.last_request_ms());
  out.set_inference_count(successes);
  out.set_execution_count(successes);
  InferStatistics& s = *out.mutable_inference_stats();
  set_duration(*s.mutable_success(), successes, stats.success_ns());
  set_duration(*s.mutable_fail(), stats.errors(), stats.failure_ns());
  set_duration(*s.mutable_queue(), stats.runs(), stats.queue_ns());
  // heterod times an inference whole: its inputs' and outputs' handling is
  // inside compute_infer.
  set_duration(*s.mutable_compute_infer(), stats.runs(), stats.compute_ns());
}

}  // namespace

// An inference call, and the Replier its job answers through.
class InferCall final : public Call, public Replier {
 public:
  InferCall(grpc::CallbackServerContext* context, std::shared_ptr<CallRegister> calls, Server* server,
            const ModelInferRequest* request, ModelInferResponse* response)
      : Call(context, std::move(calls)), request(*request), response(*response), server_(server) {}

  bool open() const override { return !finished() && !cancelled(); }
  // The job has filled `response` already (V2Job::encode_outputs).
  void reply_infer(wire::EncodedFrame) override {
    finish(grpc::Status::OK);
    server_->connection_progress();
  }
  void reply_infer_error(uint64_t, hetero_status status, const std::string& message) override {
    finish(status, message);
    server_->connection_progress();
  }

  const ModelInferRequest& request;
  ModelInferResponse& response;

 private:
  Server* server_;
};

// An infer job of the v2 protocol: its reply is the call's response.
class V2Job final : public InferJob {
 public:
  std::shared_ptr<InferCall> call;
  std::vector<size_t> outputs;             // output indices, in reply order
  Clock::time_point client_deadline = Clock::time_point::max();

  wire::EncodedFrame encode_outputs(hetero_infer_request_t* request,
                                    std::span<const std::string> output_names) const override {
    ModelInferResponse& r = call->response;
    r.set_model_name(call->request.model_name());
    r.set_model_version(kVersion);
    r.set_id(call->request.id());
    for (size_t k : outputs) {
      hetero_tensor_t* tensor = nullptr;
      check(hetero_infer_request_get_output(request, &tensor, k), "output '" + output_names[k] + "'");
      const TensorPtr owned(tensor);
      add_output(r, output_names[k], tensor);
    }
    return {};
  }
};

Service::Service(Server& server, std::shared_ptr<CallRegister> calls)
    : server_(server), post_(server.loop_post()), calls_(std::move(calls)) {}

template <typename Task>
Service::Reactor* Service::on_loop(Context* context, Task task) {
  auto call = start_call<Call>(calls_, context);
  Reactor* reactor = call->reactor();
  if (stopping_.load()) {
    call->finish(grpc::Status(grpc::StatusCode::UNAVAILABLE, "heterod is stopping"));
    return reactor;
  }
  post_->post([call, task = std::move(task)] {
    if (call->cancelled()) return call->finish(grpc::Status::CANCELLED);
    task(call);
  });
  return reactor;
}

Service::Reactor* Service::ServerLive(Context* context, const ServerLiveRequest*, ServerLiveResponse* response) {
  // Answered by the loop thread: a daemon whose loop is stuck is not live.
  return on_loop(context, [response](const std::shared_ptr<Call>& call) {
    response->set_live(true);
    call->finish(grpc::Status::OK);
  });
}

Service::Reactor* Service::ServerReady(Context* context, const ServerReadyRequest*, ServerReadyResponse* response) {
  return on_loop(context, [this, response](const std::shared_ptr<Call>& call) {
    response->set_ready(server_.healthy());
    call->finish(grpc::Status::OK);
  });
}

Service::Reactor* Service::ModelReady(Context* context, const ModelReadyRequest* request, ModelReadyResponse* response) {
  return on_loop(context, [this, request, response](const std::shared_ptr<Call>& call) {
    const auto it = server_.models().find(request->name());
    const std::string& version = request->version();
    response->set_ready(it != server_.models().end() && it->second.state == wire::ModelInfo::READY &&
                        (version.empty() || version == kVersion));
    call->finish(grpc::Status::OK);
  });
}

Service::Reactor* Service::ServerMetadata(Context* context, const ServerMetadataRequest*,
                                          ServerMetadataResponse* response) {
  response->set_name("heterod");
  response->set_version(hetero_library_version());
  response->add_extensions("model_repository");
  response->add_extensions("statistics");
  Reactor* reactor = context->DefaultReactor();
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

Service::Reactor* Service::ModelMetadata(Context* context, const ModelMetadataRequest* request,
                                         ModelMetadataResponse* response) {
  return on_loop(context, [this, request, response](const std::shared_ptr<Call>& call) {
    hetero_status status = HETERO_OK;
    std::string why;
    const auto model = server_.ready_model(request->name(), status, why);
    if (!model) return call->finish(status, why);
    if (!check_version(request->name(), request->version(), *call)) return;
    wire::ModelInfo info;
    model->describe(info);
    response->set_name(info.name());
    response->add_versions(kVersion);
    response->set_platform("heterod_" + info.device());
    for (const wire::Port& port : info.inputs()) set_tensor_metadata(*response->add_inputs(), port);
    for (const wire::Port& port : info.outputs()) set_tensor_metadata(*response->add_outputs(), port);
    call->finish(grpc::Status::OK);
  });
}

Service::Reactor* Service::ModelInfer(Context* context, const ModelInferRequest* request,
                                      ModelInferResponse* response) {
  auto call = start_call<InferCall>(calls_, context, &server_, request, response);
  Reactor* reactor = call->reactor();
  if (stopping_.load()) {
    call->finish(grpc::Status(grpc::StatusCode::UNAVAILABLE, "heterod is stopping"));
    return reactor;
  }
  auto job = std::make_unique<V2Job>();
  job->received = Clock::now();
  // Everything that needs no model is checked here, off the loop thread.
  try {
    for (const auto& [key, value] : request->parameters()) {
      if (key == "timeout" && value.parameter_choice_case() == InferParameter::kInt64Param && value.int64_param() >= 0) {
        job->client_deadline = std::min(job->client_deadline, job->received + std::chrono::microseconds(value.int64_param()));
        continue;
      }
      fail(HETERO_INVALID_ARGUMENT, "parameter '" + key + "' is not one heterod takes (timeout: an int64, in us)");
    }
    for (const auto& output : request->outputs())
      for (const auto& [key, value] : output.parameters())
        // Outputs are raw bytes over gRPC whatever this says.
        if (key != "binary_data" || value.parameter_choice_case() != InferParameter::kBoolParam)
          fail(HETERO_INVALID_ARGUMENT, "output '" + output.name() + "': parameter '" + key + "' is not one heterod takes");
    job->inputs = decode_inputs(*request, job->realigned);
  } catch (const Error& e) {
    call->finish(e.status(), e.what());
    return reactor;
  }
  const auto client = call->deadline();
  if (client != std::chrono::system_clock::time_point::max()) {
    const auto left = std::chrono::duration_cast<Clock::duration>(client - std::chrono::system_clock::now());
    job->client_deadline = std::min(job->client_deadline, job->received + left);
  }
  auto holder = std::make_shared<std::unique_ptr<V2Job>>(std::move(job));
  post_->post([this, call, holder] { submit_infer(call, std::move(*holder)); });
  return reactor;
}

void Service::submit_infer(const std::shared_ptr<InferCall>& call, std::unique_ptr<V2Job> job) {
  const ModelInferRequest& request = call->request;
  const std::string& name = request.model_name();
  hetero_status status = HETERO_OK;
  std::string why;
  const std::shared_ptr<ServedModel> model = server_.ready_model(name, status, why);
  if (!model) return call->finish(status, why);
  if (!check_version(name, request.model_version(), *call)) return;

  const std::vector<std::string>& inputs = model->input_names();
  if (job->inputs.size() != inputs.size())
    return call->finish(HETERO_INVALID_ARGUMENT, "model '" + name + "' takes " + std::to_string(inputs.size()) +
                                                     " inputs, the request has " + std::to_string(job->inputs.size()));
  std::vector<bool> seen(inputs.size());
  for (const wire::TensorView& view : job->inputs) {
    const auto pos = std::find(inputs.begin(), inputs.end(), view.name);
    if (pos == inputs.end())
      return call->finish(HETERO_INVALID_ARGUMENT, "model '" + name + "' has no input '" + view.name + "'");
    if (seen[static_cast<size_t>(pos - inputs.begin())])
      return call->finish(HETERO_INVALID_ARGUMENT, "input '" + view.name + "' is given twice");
    seen[static_cast<size_t>(pos - inputs.begin())] = true;
  }
  const std::vector<std::string>& outputs = model->output_names();
  for (const auto& wanted : request.outputs()) {
    const auto pos = std::find(outputs.begin(), outputs.end(), wanted.name());
    if (pos == outputs.end())
      return call->finish(HETERO_INVALID_ARGUMENT, "model '" + name + "' has no output '" + wanted.name() + "'");
    const auto index = static_cast<size_t>(pos - outputs.begin());
    if (std::find(job->outputs.begin(), job->outputs.end(), index) != job->outputs.end())
      return call->finish(HETERO_INVALID_ARGUMENT, "output '" + wanted.name() + "' is requested twice");
    job->outputs.push_back(index);
  }
  if (request.outputs().empty())
    for (size_t k = 0; k < outputs.size(); ++k) job->outputs.push_back(k);

  job->deadline = std::min(job->client_deadline,
                           job->received + std::chrono::milliseconds(server_.config().limits.request_timeout_ms));
  job->replier = call;
  job->call = call;
  ServedModel::submit(model, std::move(job));
}

Service::Reactor* Service::ModelStatistics(Context* context, const ModelStatisticsRequest* request,
                                           ModelStatisticsResponse* response) {
  return on_loop(context, [this, request, response](const std::shared_ptr<Call>& call) {
    wire::ModelStats stats;
    if (request->name().empty()) {
      for (const auto& [name, entry] : server_.models()) {
        if (!entry.model) continue;
        entry.model->fill_stats(stats);
        set_statistics(*response->add_model_stats(), stats);
      }
      return call->finish(grpc::Status::OK);
    }
    hetero_status status = HETERO_OK;
    std::string why;
    const auto model = server_.ready_model(request->name(), status, why);
    if (!model) return call->finish(status, why);
    if (!check_version(request->name(), request->version(), *call)) return;
    model->fill_stats(stats);
    set_statistics(*response->add_model_stats(), stats);
    call->finish(grpc::Status::OK);
  });
}

Service::Reactor* Service::RepositoryIndex(Context* context, const RepositoryIndexRequest* request,
                                           RepositoryIndexResponse* response) {
  return on_loop(context, [this, request, response](const std::shared_ptr<Call>& call) {
    if (!known_repository(server_.config(), request->repository_name()))
      return call->finish(HETERO_NOT_FOUND,
                          "repository '" + request->repository_name() + "' is not one of the config's model_dirs");
    for (const IndexEntry& entry : repository_index(server_, request->repository_name(), request->ready())) {
      RepositoryIndexResponse::ModelIndex* model = response->add_models();
      model->set_name(entry.name);
      if (entry.state == "READY") model->set_version(kVersion);
      model->set_state(entry.state);
      model->set_reason(entry.reason);
    }
    call->finish(grpc::Status::OK);
  });
}

Service::Reactor* Service::RepositoryModelLoad(Context* context, const RepositoryModelLoadRequest* request,
                                               RepositoryModelLoadResponse*) {
  return on_loop(context, [this, request](const std::shared_ptr<Call>& call) {
    LoadTarget target;
    std::string why;
    if (const hetero_status status = resolve_load(server_, *request, target, why); status != HETERO_OK)
      return call->finish(status, why);
    server_.load_model(target.spec, target.from_config,
                       [call](hetero_status status, const std::string& message) { call->finish(status, message); });
  });
}

Service::Reactor* Service::RepositoryModelUnload(Context* context, const RepositoryModelUnloadRequest* request,
                                                 RepositoryModelUnloadResponse*) {
  return on_loop(context, [this, request](const std::shared_ptr<Call>& call) {
    const std::string& name = request->model_name();
    for (const auto& [key, value] : request->parameters())
      // heterod has no ensembles: nothing depends on a model.
      if (key != "unload_dependents" || value.parameter_choice_case() != ModelRepositoryParameter::kBoolParam)
        return call->finish(HETERO_INVALID_ARGUMENT, "parameter '" + key + "' is not one heterod takes");
    if (!known_repository(server_.config(), request->repository_name()))
      return call->finish(HETERO_NOT_FOUND,
                          "repository '" + request->repository_name() + "' is not one of the config's model_dirs");
    if (!server_.unload_model(name)) return call->finish(HETERO_NOT_FOUND, "model '" + name + "' is not loaded");
    call->finish(grpc::Status::OK);
  });
}

}  // namespace hetero::daemon::kserve
