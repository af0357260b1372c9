// hetero_* entry points: infer requests, synchronous and asynchronous. The
// request's states and the rules about them (busy, the completion callback's
// limits, cancel) are the implementation's, kept once in
// core/request_state.h for local and remote requests alike; this file
// checks arguments and translates the callback's failure.
#include "capi/guard.h"
#include "capi/handles.h"

using namespace hetero::capi;
using hetero::fail;

namespace {

size_t port_index(const std::vector<Port>& ports, const char* name, const char* what) {
  for (size_t i = 0; i < ports.size(); ++i)
    if (ports[i].name == name) return i;
  std::string known;
  for (const Port& p : ports) known += (known.empty() ? "'" : ", '") + p.name + "'";
  fail(HETERO_NOT_FOUND, std::string("the model has no ") + what + " named '" + name + "' (" + what + "s: " +
                             (known.empty() ? "none" : known) + ")");
}

void set_input(hetero_infer_request_t* request, size_t index, hetero_tensor_t* tensor) {
  request->impl->set_input(index, tensor->tensor);
}

hetero_tensor_t* get_output(hetero_infer_request_t* request, size_t index) {
  auto t = std::make_unique<hetero_tensor>();
  t->tensor = request->impl->output(index, t->keepalive);
  return t.release();
}

// Runs on the implementation's worker when an async inference has finished.
void complete(hetero_callback callback, void* user_data, std::exception_ptr error) noexcept {
  if (!callback) return;
  hetero_status status = HETERO_OK;
  if (error) {
    std::string message;
    std::tie(status, message) = translate(error);
    set_last_error(message);
  }
  callback(user_data, status);
}

}  // namespace

extern "C" {

hetero_status hetero_infer_request_create(hetero_infer_request_t** out, hetero_compiled_model_t* compiled) {
  return guard([&] {
    require(out, "hetero_infer_request_create", "out");
    require(compiled, "hetero_infer_request_create", "compiled");
    auto request = std::make_unique<hetero_infer_request>();
    request->compiled = compiled->impl;
    request->impl = compiled->impl->create_infer_request();
    *out = request.release();
  });
}

hetero_status hetero_infer_request_set_input(hetero_infer_request_t* request, size_t index, hetero_tensor_t* tensor) {
  return guard([&] {
    constexpr const char* fn = "hetero_infer_request_set_input";
    require(request, fn, "request");
    require(tensor, fn, "tensor");
    port_at(request->compiled->inputs(), index, "input");
    set_input(request, index, tensor);
  });
}

hetero_status hetero_infer_request_set_input_by_name(hetero_infer_request_t* request, const char* name,
                                                     hetero_tensor_t* tensor) {
  return guard([&] {
    constexpr const char* fn = "hetero_infer_request_set_input_by_name";
    require(request, fn, "request");
    require(name, fn, "name");
    require(tensor, fn, "tensor");
    set_input(request, port_index(request->compiled->inputs(), name, "input"), tensor);
  });
}

hetero_status hetero_infer_request_get_output(hetero_infer_request_t* request, hetero_tensor_t** out, size_t index) {
  return guard([&] {
    constexpr const char* fn = "hetero_infer_request_get_output";
    require(request, fn, "request");
    require(out, fn, "out");
    port_at(request->compiled->outputs(), index, "output");
    *out = get_output(request, index);
  });
}

hetero_status hetero_infer_request_get_output_by_name(hetero_infer_request_t* request, hetero_tensor_t** out,
                                                      const char* name) {
  return guard([&] {
    constexpr const char* fn = "hetero_infer_request_get_output_by_name";
    require(request, fn, "request");
    require(out, fn, "out");
    require(name, fn, "name");
    *out = get_output(request, port_index(request->compiled->outputs(), name, "output"));
  });
}

hetero_status hetero_infer_request_infer(hetero_infer_request_t* request) {
  return guard([&] {
    require(request, "hetero_infer_request_infer", "request");
    request->impl->infer();
  });
}

hetero_status hetero_infer_request_start_async(hetero_infer_request_t* request, hetero_callback callback,
                                               void* user_data) {
  return guard([&] {
    require(request, "hetero_infer_request_start_async", "request");
    request->impl->start_async(
        [callback, user_data](std::exception_ptr error) { complete(callback, user_data, error); });
  });
}

hetero_status hetero_infer_request_wait(hetero_infer_request_t* request) {
  return guard([&] {
    require(request, "hetero_infer_request_wait", "request");
    if (std::exception_ptr failed = request->impl->wait()) std::rethrow_exception(failed);
  });
}

hetero_status hetero_infer_request_cancel(hetero_infer_request_t* request) {
  return guard([&] {
    require(request, "hetero_infer_request_cancel", "request");
    request->impl->cancel();
  });
}

hetero_status hetero_infer_request_release_memory(hetero_infer_request_t* request) {
  return guard([&] {
    require(request, "hetero_infer_request_release_memory", "request");
    request->impl->release_memory();
  });
}

hetero_status hetero_infer_request_set_sequence(hetero_infer_request_t* request, uint64_t sequence_id,
                                                uint32_t flags) {
  return guard([&] {
    require(request, "hetero_infer_request_set_sequence", "request");
    if (flags & ~(HETERO_SEQUENCE_START | HETERO_SEQUENCE_END | HETERO_SEQUENCE_STATE_OUTPUTS))
      fail(HETERO_INVALID_ARGUMENT, "hetero_infer_request_set_sequence: flags " + std::to_string(flags) +
                                        " are not HETERO_SEQUENCE_START, _END and _STATE_OUTPUTS");
    if (sequence_id == 0 && flags)
      fail(HETERO_INVALID_ARGUMENT, "hetero_infer_request_set_sequence: flags need a sequence_id");
    request->impl->set_sequence(sequence_id, flags);
  });
}

hetero_status hetero_infer_request_release(hetero_infer_request_t* request) {
  return guard([&] {
    if (!request) return;
    request->impl->wait();  // BUSY from its own callback, rather than wait for itself
    delete request;
  });
}

}  // extern "C"
