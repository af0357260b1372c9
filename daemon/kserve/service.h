// The GRPCInferenceService of the Open Inference Protocol, served from
// heterod's models. Calls arrive on completion-queue threads, which check
// what needs no model there and post the rest to the loop thread: it owns
// the model registry (Server) and submits inferences to the models' queues
// as the native requests do (ServedModel::submit), with the same queues,
// limits, timeouts and statistics.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>

#include "daemon/kserve/call.h"
#include "daemon/kserve/grpc_predict_v2.grpc.pb.h"
#include "daemon/loop_post.h"
#include "protocol/decoded_size.h"

namespace hetero::daemon {
class Server;
}

namespace hetero::daemon::kserve {

template <typename Request, typename Response, bool Raw = false>
using CallPtr = std::shared_ptr<UnaryCall<Request, Response, Raw>>;
using InferCall = UnaryCall<inference::ModelInferRequest, inference::ModelInferResponse, true>;
class V2Job;

class Service {
 public:
  // Who a call's peer (Call::peer()) is, for the model ownership checks: a
  // uid, kOwnedByTcpClients or kUnknownRequester (daemon/config.h). Loop
  // thread.
  using RequesterOf = std::function<int64_t(const std::string& peer)>;
  Service(Server& server, std::shared_ptr<CallRegister> calls, RequesterOf requester_of);
  // To register with the gRPC server's builder.
  grpc::Service* grpc_service() noexcept { return &async_; }
  // Awaits calls of every method on `queue`, once the gRPC server runs.
  void listen(grpc::ServerCompletionQueue* queue);
  // SIGTERM: new calls are answered UNAVAILABLE. Any thread.
  void stop() noexcept { stopping_.store(true); }

 private:
  template <typename Request, typename Response, bool Raw = false>
  void listen(grpc::ServerCompletionQueue* queue, typename UnaryCall<Request, Response, Raw>::AwaitMethod await,
              void (Service::*handle)(const CallPtr<Request, Response, Raw>&), int awaiting);
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
  // Completion-queue thread: parses a ModelInfer call's request from its
  // bytes once protocol/decoded_size.h says the parse stays within
  // parse_limit_; otherwise answers the call (RESOURCE_EXHAUSTED) and
  // returns false.
  bool parse_bounded(InferCall& call) const;
  // Loop thread: an infer request checked against its model and submitted.
  void submit_infer(std::unique_ptr<V2Job> job);

  Server& server_;  // loop thread only
  std::shared_ptr<LoopPost> post_;
  std::shared_ptr<CallRegister> calls_;
  const RequesterOf requester_of_;
  // What a request as large as kserve.max_message_bytes may parse into.
  const wire::DecodedSize parse_limit_;
  AsyncService async_;
  std::atomic<bool> stopping_{false};
};

}  // namespace hetero::daemon::kserve
