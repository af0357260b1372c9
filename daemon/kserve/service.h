// The GRPCInferenceService of the Open Inference Protocol, served from
// heterod's models. Handlers run on gRPC's threads: they check what needs
// no model there, then post the rest to the loop thread, which owns the
// model registry (Server) and submits inferences to the models' queues as
// the native requests do (ServedModel::submit): the same queues, limits,
// timeouts and statistics.
#pragma once

#include <atomic>
#include <memory>

#include "daemon/kserve/call.h"
#include "daemon/kserve/grpc_predict_v2.grpc.pb.h"
#include "daemon/loop_post.h"

namespace hetero::daemon {
class Server;
}

namespace hetero::daemon::kserve {

class Service final : public inference::GRPCInferenceService::CallbackService {
 public:
  Service(Server& server, std::shared_ptr<CallRegister> calls);
  // SIGTERM: new calls are answered UNAVAILABLE. Any thread.
  void stop() noexcept { stopping_.store(true); }

  using Reactor = grpc::ServerUnaryReactor;
  using Context = grpc::CallbackServerContext;
  Reactor* ServerLive(Context* context, const inference::ServerLiveRequest* request,
                      inference::ServerLiveResponse* response) override;
  Reactor* ServerReady(Context* context, const inference::ServerReadyRequest* request,
                       inference::ServerReadyResponse* response) override;
  Reactor* ModelReady(Context* context, const inference::ModelReadyRequest* request,
                      inference::ModelReadyResponse* response) override;
  Reactor* ServerMetadata(Context* context, const inference::ServerMetadataRequest* request,
                          inference::ServerMetadataResponse* response) override;
  Reactor* ModelMetadata(Context* context, const inference::ModelMetadataRequest* request,
                         inference::ModelMetadataResponse* response) override;
  Reactor* ModelInfer(Context* context, const inference::ModelInferRequest* request,
                      inference::ModelInferResponse* response) override;
  Reactor* ModelStatistics(Context* context, const inference::ModelStatisticsRequest* request,
                           inference::ModelStatisticsResponse* response) override;
  Reactor* RepositoryIndex(Context* context, const inference::RepositoryIndexRequest* request,
                           inference::RepositoryIndexResponse* response) override;
  Reactor* RepositoryModelLoad(Context* context, const inference::RepositoryModelLoadRequest* request,
                               inference::RepositoryModelLoadResponse* response) override;
  Reactor* RepositoryModelUnload(Context* context, const inference::RepositoryModelUnloadRequest* request,
                                 inference::RepositoryModelUnloadResponse* response) override;

 private:
  // Runs task(call) on the loop thread, which answers the call (at once or
  // later). A task never run (the daemon stopping) answers UNAVAILABLE.
  template <typename Task>
  Reactor* on_loop(Context* context, Task task);
  // Loop thread: an infer request checked against its model and submitted.
  void submit_infer(const std::shared_ptr<class InferCall>& call, std::unique_ptr<class V2Job> job);

  Server& server_;  // loop thread only
  std::shared_ptr<LoopPost> post_;
  std::shared_ptr<CallRegister> calls_;
  std::atomic<bool> stopping_{false};
};

}  // namespace hetero::daemon::kserve
