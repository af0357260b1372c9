#include "daemon/native_infer_job.h"

#include "daemon/connection.h"
#include "protocol/tensor_codec.h"

namespace hetero::daemon {

NativeInferJob::NativeInferJob(const std::shared_ptr<Connection>& connection) : connection_(connection) {
  client = connection.get();
}

bool NativeInferJob::client_open() const {
  const std::shared_ptr<Connection> c = connection_.lock();
  return c && c->open();
}

void NativeInferJob::take_outputs(std::span<const wire::OutgoingTensor> all) {
  // A sequence's state outputs stay in the daemon unless asked for.
  const bool omit_state = sequence && !send_state;
  std::vector<wire::OutgoingTensor> kept;
  if (omit_state)
    for (size_t k = 0; k < all.size(); ++k)
      if (!sequence->is_state_output(k)) kept.push_back(all[k]);
  const std::span<const wire::OutgoingTensor> outputs = omit_state ? std::span<const wire::OutgoingTensor>(kept) : all;
  wire::Response response;
  response.set_id(id);
  wire::UniqueFd memfd =
      wire::encode_tensors(outputs, memfd_threshold, *response.mutable_infer()->mutable_outputs(), "heterod-outputs");
  reply_.bytes = wire::encode_frame(response, memfd ? 1 : 0);
  if (memfd) reply_.fds.push_back(std::move(memfd));
}

bool NativeInferJob::try_answer_now() {
  pinned_ = connection_.lock();
  return pinned_ && pinned_->try_reply_now(reply_);
}

void NativeInferJob::answer_sent() {
  if (pinned_) pinned_->reply_sent();
}

void NativeInferJob::answer() {
  if (const std::shared_ptr<Connection> c = connection_.lock()) c->reply_infer(std::move(reply_));
}

void NativeInferJob::answer_error(hetero_status status, const std::string& message) {
  if (const std::shared_ptr<Connection> c = connection_.lock()) c->reply_infer(error_frame(id, status, message));
}

void NativeInferJob::release_inputs() {
  InferJob::release_inputs();
  realigned.clear();
  mappings = {};
  fds.clear();
  request.reset();
}

}  // namespace hetero::daemon
