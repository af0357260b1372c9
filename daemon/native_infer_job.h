// An Infer request of the native protocol (protocol/PROTOCOL.md) as a job of
// the serving core (daemon/served_model.h): it owns the frame its inputs
// point into (inline data, or the frame's sealed memfds, mapped), and answers
// with a Response frame on its connection: outputs inline, or in one memfd
// from the client's memfd_threshold.
#pragma once

#include <memory>
#include <vector>

#include "daemon/served_model.h"
#include "protocol/frame.h"
#include "protocol/heterod.pb.h"
#include "protocol/tensor_codec.h"

namespace hetero::daemon {

class Connection;

class NativeInferJob final : public InferJob {
 public:
  explicit NativeInferJob(const std::shared_ptr<Connection>& connection);

  bool client_open() const override;
  void take_outputs(std::span<const wire::OutgoingTensor> outputs) override;
  bool try_answer_now() override;
  void answer_sent() override;
  void answer() override;
  void answer_error(hetero_status status, const std::string& message) override;
  void release_inputs() override;

  std::unique_ptr<wire::Request> request;  // inline input data
  std::vector<wire::UniqueFd> fds;         // the frame's memfds
  wire::TensorMappings mappings;           // ... mapped
  std::vector<std::vector<uint64_t>> realigned;  // inline inputs not aligned to their element size
  uint64_t memfd_threshold = 0;
  bool send_state = false;  // a sequence's call answered with its state outputs too

 private:
  std::weak_ptr<Connection> connection_;
  // Held from try_answer_now() until the job is destroyed, on the loop
  // thread: the driver thread must not be the one that lets go of the
  // connection last.
  std::shared_ptr<Connection> pinned_;
  wire::EncodedFrame reply_;
};

}  // namespace hetero::daemon
