// The GRPCInferenceService of the Open Inference Protocol, served from
// heterod's models. Calls arrive on completion-queue threads, which check
// what needs no model there and post the rest to the loop thread: it owns
// the model registry (daemon/model_registry.h) and submits inferences to the models' queues
// as the native requests do (ServedModel::submit), with the same queues,
// limits, timeouts and statistics.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>

#include "daemon/kserve/call.h"
#include "daemon/kserve/grpc_predict_v2.pb.h"
#include "daemon/loop_post.h"
#include "protocol/decoded_size.h"

namespace hetero::daemon {
class ModelRegistry;
}

namespace hetero::daemon::kserve {

template <typename Request, typename Response>
using CallPtr = std::shared_ptr<UnaryCall<Request, Response>>;
using InferCall = UnaryCall<inference::ModelInferRequest, inference::ModelInferResponse>;
class V2Job;

class Service {
 public:
  // Who a call's peer (Call::peer()) is, for the model ownership checks: a
  // uid, kOwnedByTcpClients or kUnknownRequester (daemon/config.h). Loop
  // thread.
  using RequesterOf = std::function<int64_t(const std::string& peer)>;
  Service(ModelRegistry& registry, std::shared_ptr<CallRegister> calls, RequesterOf requester_of);
  // To register with the gRPC server's builder: every method's calls come
  // through it (daemon/kserve/call.h says why).
  grpc::AsyncGenericService* generic_service() noexcept { return &generic_; }
  // Awaits calls on `queue`, once the gRPC server runs: their messages are
  // read within `message_timeout`, their replies written within
  // `reply_timeout` and charged to `replies`.
  void listen(grpc::ServerCompletionQueue* queue, std::shared_ptr<ReplyBudget> replies,
              std::chrono::milliseconds message_timeout, std::chrono::milliseconds reply_timeout);
  // SIGTERM: new calls are answered UNAVAILABLE. Any thread.
  void stop() noexcept { stopping_.store(true); }

 private:
  // Routes calls of the service's method `name` to `handle`, their request
  // parsed once protocol/decoded_size.h says the parse stays within
  // parse_limit_ (otherwise they are answered RESOURCE_EXHAUSTED).
  template <typename Request, typename Response>
  void route(const char* name, void (Service::*handle)(const CallPtr<Request, Response>&));
  // Completion-queue thread: a call whose message has come, to its method's handler.
  void dispatch(const std::shared_ptr<Call>& call);
  // Runs task(call) on the loop thread, which answers the call (at once or
  // later).
  template <typename Request, typename Response, typename Task>
  void on_loop(const CallPtr<Request, Response>& call, Task task);

  // The handlers, one per method (completion-queue thread).
  void server_live(const CallPtr<inference::ServerLiveRequest, inference::ServerLiveResponse>& call);
  void server_ready(const CallPtr<inference::ServerReadyRequest, inference::ServerReadyResponse>& call);
  void model_ready(const CallPtr<inference::ModelReadyRequest, inference::ModelReadyResponse>& call);
  void server_metadata(
      const CallPtr<inference::ServerMetadataRequest, inference::ServerMetadataResponse>& call);
  void model_metadata(
      const CallPtr<inference::ModelMetadataRequest, inference::ModelMetadataResponse>& call);
  void model_config(const CallPtr<inference::ModelConfigRequest, inference::ModelConfigResponse>& call);
  void model_infer(const std::shared_ptr<InferCall>& call);
  void model_statistics(
      const CallPtr<inference::ModelStatisticsRequest, inference::ModelStatisticsResponse>& call);
  void repository_index(
      const CallPtr<inference::RepositoryIndexRequest, inference::RepositoryIndexResponse>& call);
  void repository_load(const CallPtr<inference::RepositoryModelLoadRequest, inference::RepositoryModelLoadResponse>& call);
  void repository_unload(const CallPtr<inference::RepositoryModelUnloadRequest, inference::RepositoryModelUnloadResponse>& call);
  // Completion-queue thread: parses `into` from `call`'s message when
  // protocol/decoded_size.h says the parse stays within parse_limit_;
  // otherwise answers the call and returns false.
  bool parse_bounded(Call& call, google::protobuf::Message& into) const;
  // Loop thread: an infer request checked against its model and submitted.
  void submit_infer(std::unique_ptr<V2Job> job);

  ModelRegistry& registry_;  // loop thread only
  std::shared_ptr<LoopPost> post_;
  std::shared_ptr<CallRegister> calls_;
  const RequesterOf requester_of_;
  // What a request as large as kserve.max_message_bytes may parse into.
  const wire::DecodedSize parse_limit_;
  grpc::AsyncGenericService generic_;
  // Handlers by gRPC method name ("/inference.GRPCInferenceService/ModelInfer").
  std::unordered_map<std::string, std::function<void(const std::shared_ptr<Call>&)>> routes_;
  std::atomic<bool> stopping_{false};
};

}  // namespace hetero::daemon::kserve
