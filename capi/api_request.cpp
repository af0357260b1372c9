// hetero_* entry points: infer requests, synchronous and asynchronous.
//
// The async protocol on top of InferRequestImpl: `running` is true from
// start_async until the completion has recorded its status, and is cleared
// before the user's callback runs so that the callback may read outputs and
// bind inputs. The implementation's own worker is still busy while the
// callback runs, so the calls that would wait for it (start, infer, wait,
// release) are refused from inside the callback instead of deadlocking, and
// wait for that tail to end when made from anywhere else.
#include "capi/guard.h"
#include "capi/handles.h"

using namespace hetero::capi;
using hetero::fail;

namespace {

// The request whose callback this thread is running, if any.
thread_local const hetero_infer_request* tl_in_callback = nullptr;

void refuse_in_callback(const hetero_infer_request_t* request, const char* fn) {
  if (tl_in_callback == request)
    fail(HETERO_BUSY, std::string(fn) + " was called from the request's own completion callback, where it would "
                                        "deadlock; hand the request to another thread for that");
}

void refuse_if_running(hetero_infer_request_t* request, const char* fn) {
  std::lock_guard lock(request->mutex);
  if (request->running)
    fail(HETERO_BUSY, std::string(fn) + ": an inference is running on this request; wait for it first");
}

size_t port_index(const std::vector<Port>& ports, const char* name, const char* what) {
  for (size_t i = 0; i < ports.size(); ++i)
    if (ports[i].name == name) return i;
  std::string known;
  for (const Port& p : ports) known += (known.empty() ? "'" : ", '") + p.name + "'";
  fail(HETERO_NOT_FOUND, std::string("the model has no ") + what + " named '" + name + "' (" + what + "s: " +
                             (known.empty() ? "none" : known) + ")");
}

void set_input(hetero_infer_request_t* request, size_t index, hetero_tensor_t* tensor, const char* fn) {
  refuse_if_running(request, fn);
  request->impl->set_input(index, tensor->tensor);
}

hetero_tensor_t* get_output(hetero_infer_request_t* request, size_t index, const char* fn) {
  refuse_if_running(request, fn);
  auto t = std::make_unique<hetero_tensor>();
  t->tensor = request->impl->output(index, t->keepalive);
  return t.release();
}

// Runs on the implementation's worker when an async inference has finished.
void complete(hetero_infer_request_t* request, hetero_callback callback, void* user_data,
              std::exception_ptr error) noexcept {
  hetero_status status = HETERO_OK;
  std::string message;
  if (error) std::tie(status, message) = translate(error);
  {
    std::lock_guard lock(request->mutex);
    request->running = false;
    request->async_status = status;
    request->async_message.swap(message);
    if (status != HETERO_OK) set_last_error(request->async_message);
  }
  if (!callback) return;
  tl_in_callback = request;
  callback(user_data, status);
  tl_in_callback = nullptr;
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
    set_input(request, index, tensor, fn);
  });
}

hetero_status hetero_infer_request_set_input_by_name(hetero_infer_request_t* request, const char* name,
                                                     hetero_tensor_t* tensor) {
  return guard([&] {
    constexpr const char* fn = "hetero_infer_request_set_input_by_name";
    require(request, fn, "request");
    require(name, fn, "name");
    require(tensor, fn, "tensor");
    set_input(request, port_index(request->compiled->inputs(), name, "input"), tensor, fn);
  });
}

hetero_status hetero_infer_request_get_output(hetero_infer_request_t* request, hetero_tensor_t** out, size_t index) {
  return guard([&] {
    constexpr const char* fn = "hetero_infer_request_get_output";
    require(request, fn, "request");
    require(out, fn, "out");
    port_at(request->compiled->outputs(), index, "output");
    *out = get_output(request, index, fn);
  });
}

hetero_status hetero_infer_request_get_output_by_name(hetero_infer_request_t* request, hetero_tensor_t** out,
                                                      const char* name) {
  return guard([&] {
    constexpr const char* fn = "hetero_infer_request_get_output_by_name";
    require(request, fn, "request");
    require(out, fn, "out");
    require(name, fn, "name");
    *out = get_output(request, port_index(request->compiled->outputs(), name, "output"), fn);
  });
}

hetero_status hetero_infer_request_infer(hetero_infer_request_t* request) {
  return guard([&] {
    constexpr const char* fn = "hetero_infer_request_infer";
    require(request, fn, "request");
    refuse_in_callback(request, fn);
    refuse_if_running(request, fn);
    request->impl->wait();  // the tail of a finished async inference
    request->impl->infer();
  });
}

hetero_status hetero_infer_request_start_async(hetero_infer_request_t* request, hetero_callback callback,
                                               void* user_data) {
  return guard([&] {
    constexpr const char* fn = "hetero_infer_request_start_async";
    require(request, fn, "request");
    refuse_in_callback(request, fn);
    {
      std::lock_guard lock(request->mutex);
      if (request->running) fail(HETERO_BUSY, std::string(fn) + ": an inference is already running on this request");
      request->running = true;
      request->async_status = HETERO_OK;
      request->async_message.clear();
    }
    try {
      request->impl->wait();  // the tail of the previous completion
      request->impl->start_async(
          [request, callback, user_data](std::exception_ptr error) { complete(request, callback, user_data, error); });
    } catch (...) {
      std::lock_guard lock(request->mutex);
      request->running = false;
      throw;
    }
  });
}

hetero_status hetero_infer_request_wait(hetero_infer_request_t* request) {
  return guard([&] {
    constexpr const char* fn = "hetero_infer_request_wait";
    require(request, fn, "request");
    refuse_in_callback(request, fn);
    request->impl->wait();
    std::lock_guard lock(request->mutex);
    if (request->async_status != HETERO_OK) fail(request->async_status, request->async_message);
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

hetero_status hetero_infer_request_release(hetero_infer_request_t* request) {
  return guard([&] {
    if (!request) return;
    refuse_in_callback(request, "hetero_infer_request_release");
    request->impl->wait();
    delete request;
  });
}

}  // extern "C"
