// Server: one handler per request of the protocol (PROTOCOL.md). A request
// that breaks the protocol ends its connection; one that is merely wrong
// (an unknown model, a bad shape) gets an error reply and the connection
// goes on.
#include <algorithm>
#include <cstring>
#include <cstdlib>

#include "core/log.h"
#include "daemon/native_infer_job.h"
#include "daemon/peer_credentials.h"
#include "daemon/server.h"
#include "protocol/decoded_size.h"
#include "protocol/heterod_schema.pb.h"

namespace hetero::daemon {

void Server::reply(Connection& connection, wire::Response& response) {
  connection.send({wire::encode_frame(response), {}});
}

void Server::reply_error(Connection& connection, uint64_t id, hetero_status status, const std::string& message) {
  connection.send(error_frame(id, status, message));
}

bool Server::refuse_if_it_grows(Connection& connection, std::span<const uint8_t> payload, size_t payload_length) {
  const wire::DecodedSize limit = wire::request_parse_limit(payload_length);
  wire::DecodedSize size;
  if (!wire::estimate_decoded_size(payload, *wire_schema::Request::descriptor(), limit, size) || !size.over_limit)
    return false;
  connection.send_fatal(0, HETERO_OUT_OF_MEMORY,
                        "a frame of " + std::to_string(payload_length) + " bytes would take more than " +
                            std::to_string(limit.bytes) + " bytes or " + std::to_string(limit.messages) +
                            " messages once parsed (at most twice its size plus 1 MiB)");
  return true;
}

void Server::handle_frame(Connection& connection, wire::Frame frame) {
  // Measured before it is parsed: a frame crafted to grow (empty repeated
  // entries) is refused before it takes the memory (protocol/decoded_size.h).
  if (refuse_if_it_grows(connection, frame.payload, frame.payload.size())) return;
  auto request = std::make_unique<wire::Request>();
  if (!request->ParseFromArray(frame.payload.data(), static_cast<int>(frame.payload.size()))) {
    connection.send_fatal(0, HETERO_PROTOCOL_ERROR, "a frame of " + std::to_string(frame.payload.size()) +
                                                        " bytes is not a Request message");
    return;
  }
  frame.payload = {};  // parsed: the message owns copies now
  const uint64_t id = request->id();
  if (!connection.greeted() && request->body_case() != wire::Request::kHello) {
    connection.send_fatal(id, HETERO_PROTOCOL_ERROR, "the first request must be Hello");
    return;
  }
  switch (request->body_case()) {
    case wire::Request::kHello:
      return handle_hello(connection, *request);
    case wire::Request::kListDevices:
      return list_devices_for(connection, id);
    case wire::Request::kListModels:
      return handle_list_models(connection, *request);
    case wire::Request::kLoadModel:
      return handle_load(connection, std::move(request), std::move(frame.fds));
    case wire::Request::kUnloadModel:
      return handle_unload(connection, *request);
    case wire::Request::kInfer:
      return handle_infer(connection, std::move(request), std::move(frame.fds));
    case wire::Request::kStats:
      return handle_stats(connection, *request);
    case wire::Request::kHealth:
      return handle_health(connection, *request);
    case wire::Request::kReload:
      return handle_reload(connection, *request);
    case wire::Request::kCancel:
      return handle_cancel(connection, *request);
    case wire::Request::kEndSequence:
      return handle_end_sequence(connection, *request);
    case wire::Request::BODY_NOT_SET:
      break;
  }
  // A newer client's request, or none: the connection can go on.
  reply_error(connection, id, HETERO_NOT_SUPPORTED, "request " + std::to_string(id) + " has no body this daemon knows");
}

void Server::handle_hello(Connection& connection, const wire::Request& request) {
  const wire::Hello& hello = request.hello();
  if (connection.greeted()) {
    connection.send_fatal(request.id(), HETERO_PROTOCOL_ERROR, "Hello sent twice");
    return;
  }
  if (hello.min_version() > wire::kProtocolVersion || hello.max_version() < wire::kProtocolVersion) {
    connection.send_fatal(request.id(), HETERO_NOT_SUPPORTED,
                          "no common protocol version: the client speaks " + std::to_string(hello.min_version()) +
                              "-" + std::to_string(hello.max_version()) + ", this daemon " +
                              std::to_string(wire::kProtocolVersion));
    return;
  }
  connection.greet();
  wire::Response response;
  response.set_id(request.id());
  wire::HelloReply* r = response.mutable_hello();
  r->set_version(wire::kProtocolVersion);
  r->set_server(std::string("heterod ") + hetero_library_version());
  r->set_max_frame_bytes(config_.limits.max_frame_bytes);
  r->set_max_in_flight(config_.limits.max_in_flight_per_client);
  r->set_max_model_bytes(config_.limits.max_model_bytes);
  reply(connection, response);
}

namespace {

void set_port(wire::Port& out, const Port& port) {
  out.set_name(port.name);
  out.set_dtype(port.dtype);
  out.set_rank(port.shape ? static_cast<int64_t>(port.shape->size()) : -1);
  if (port.shape)
    for (int64_t d : *port.shape) out.add_dims(d);
}

void set_stats(wire::ModelStats& out, const ModelStatistics& s) {
  out.set_name(s.name);
  out.set_requests(s.requests);
  out.set_errors(s.errors);
  out.set_busy(s.busy);
  out.set_timeouts(s.timeouts);
  out.set_queue_depth(s.queue_depth);
  out.set_in_flight(s.in_flight);
  out.set_runs(s.runs);
  out.set_success_ns(s.success_ns);
  out.set_failure_ns(s.failure_ns);
  out.set_queue_ns(s.queue_ns);
  out.set_compute_ns(s.compute_ns);
  out.set_last_request_ms(s.last_request_ms);
  out.set_latency_p50_us(s.latency_p50_us);
  out.set_latency_p90_us(s.latency_p90_us);
  out.set_latency_p99_us(s.latency_p99_us);
}

}  // namespace

void Server::describe(const ModelEntry& entry, wire::ModelInfo& info) const {
  if (entry.model) {
    const ModelDescription d = entry.model->describe();
    info.set_name(d.name);
    info.set_device(d.device);
    info.set_source(d.source);
    info.set_parallel(d.parallel);
    info.set_priority(d.priority);
    for (const Port& port : d.inputs) set_port(*info.add_inputs(), port);
    for (const Port& port : d.outputs) set_port(*info.add_outputs(), port);
    for (const std::string& device : d.submodel_devices) info.add_submodel_devices(device);
    for (const auto& [output, input] : d.state) {
      wire::StatePair& pair = *info.add_state_pairs();
      pair.set_output(output);
      pair.set_input(input);
    }
    for (const std::string& input : d.defaults) info.add_default_inputs(input);
  } else {
    info.set_name(entry.spec.name);
    info.set_device(entry.spec.device);
    info.set_source(entry.spec.path.empty() ? "upload" : entry.spec.path);
    info.set_parallel(entry.spec.parallel);
  }
  switch (entry.state) {
    case ModelState::Loading: info.set_state(wire::ModelInfo::LOADING); break;
    case ModelState::Ready: info.set_state(wire::ModelInfo::READY); break;
    case ModelState::Failed: info.set_state(wire::ModelInfo::FAILED); break;
  }
  info.set_error(entry.error);
}

void Server::handle_list_models(Connection& connection, const wire::Request& request) {
  wire::Response response;
  response.set_id(request.id());
  wire::ListModelsReply* list = response.mutable_list_models();
  for (const auto& [name, entry] : registry_->models()) describe(entry, *list->add_models());
  reply(connection, response);
}

void Server::handle_load(Connection& connection, std::unique_ptr<wire::Request> request,
                         std::vector<wire::UniqueFd> fds) {
  const uint64_t id = request->id();
  const wire::LoadModel& message = request->load_model();
  if (!valid_model_name(message.name()))
    return reply_error(connection, id, HETERO_INVALID_ARGUMENT,
                       "model name '" + message.name() + "' must be 1-128 of A-Z a-z 0-9 . _ -");
  if (registry_->models().count(message.name()))
    return reply_error(connection, id, HETERO_INVALID_ARGUMENT,
                       "model '" + message.name() + "' is already loaded; unload it first");
  const uid_t uid = connection.peer().uid;
  ModelSpec spec;
  spec.name = message.name();
  spec.device = message.device().empty() ? "CPU" : message.device();
  spec.config.insert(message.config().begin(), message.config().end());
  spec.parallel = message.parallel() == 0 ? 1 : std::min<uint32_t>(message.parallel(), 64);

  // What the loader thread reads: a path, or bytes that stay alive with it.
  auto owned = std::make_shared<std::pair<std::unique_ptr<wire::Request>, std::unique_ptr<wire::MappedMemfd>>>();
  std::span<const uint8_t> bytes;
  switch (message.source_case()) {
    case wire::LoadModel::kPath: {
      std::string why;
      if (const hetero_status status = registry_->check_model_path(spec.name, message.path(), spec.path, why); status != HETERO_OK)
        return reply_error(connection, id, status, why);
      break;
    }
    case wire::LoadModel::kModelBytes:
      if (message.model_bytes().size() > config_.limits.max_model_bytes)
        return reply_error(connection, id, HETERO_INVALID_ARGUMENT, "upload exceeds limits.max_model_bytes");
      bytes = {reinterpret_cast<const uint8_t*>(message.model_bytes().data()), message.model_bytes().size()};
      break;
    case wire::LoadModel::kModelMemfd: {
      const wire::MemfdRef& ref = message.model_memfd();
      if (ref.size() > config_.limits.max_model_bytes)
        return reply_error(connection, id, HETERO_INVALID_ARGUMENT, "upload exceeds limits.max_model_bytes");
      if (ref.fd_index() >= fds.size()) {
        connection.send_fatal(id, HETERO_PROTOCOL_ERROR, "load_model.model_memfd names a descriptor the frame lacks");
        return;
      }
      try {
        owned->second = std::make_unique<wire::MappedMemfd>(fds[ref.fd_index()].get(), ref.offset(), ref.size(),
                                                            "load_model.model_memfd");
      } catch (const Failure& e) {
        connection.send_fatal(id, e.status(), e.what());
        return;
      }
      bytes = {owned->second->data(), owned->second->size()};
      break;
    }
    case wire::LoadModel::SOURCE_NOT_SET:
      return reply_error(connection, id, HETERO_INVALID_ARGUMENT, "model '" + spec.name + "': no path or bytes");
  }
  std::string why;
  if (const hetero_status status = registry_->admit_client_model(spec, uid, bytes.size(), why); status != HETERO_OK)
    return reply_error(connection, id, status, why);
  owned->first = std::move(request);
  std::weak_ptr<Connection> who = connection.shared_from_this();
  ModelRegistry& registry = *registry_;
  auto compile = [&registry, spec, owned, bytes] { return registry.load(spec, bytes); };
  registry.start_load(spec, false, compile, [this, who, id, name = spec.name](hetero_status status, const std::string& error) {
    auto c = who.lock();
    if (!c || !c->open()) return;
    if (status != HETERO_OK) return reply_error(*c, id, status, error);
    wire::Response response;
    response.set_id(id);
    describe(registry_->models().at(name), *response.mutable_load_model()->mutable_model());
    reply(*c, response);
  });
}

void Server::handle_unload(Connection& connection, const wire::Request& request) {
  std::string why;
  if (const hetero_status status = registry_->unload_model(request.unload_model().name(), connection.peer().uid, why);
      status != HETERO_OK)
    return reply_error(connection, request.id(), status, why);
  wire::Response response;
  response.set_id(request.id());
  reply(connection, response);
}

void Server::handle_infer(Connection& connection, std::unique_ptr<wire::Request> request,
                          std::vector<wire::UniqueFd> fds) {
  const Clock::time_point received = Clock::now();
  const uint64_t id = request->id();
  const wire::Infer& infer = request->infer();
  hetero_status status = HETERO_OK;
  std::string why;
  const std::shared_ptr<ServedModel> model = registry_->ready_model(infer.model(), status, why);
  if (!model) return reply_error(connection, id, status, why);
  // Refused before the model's queue: still one of its failed requests.
  auto refuse = [&](hetero_status refusal, const std::string& message) {
    model->count_refused(received, refusal);
    reply_error(connection, id, refusal, message);
  };
  if (connection.in_flight >= config_.limits.max_in_flight_per_client)
    return refuse(HETERO_BUSY, "this client has " + std::to_string(connection.in_flight) +
                                   " requests in flight (limits.max_in_flight_per_client)");
  // More inputs than the model has are refused before any is decoded.
  if (static_cast<size_t>(infer.inputs_size()) > model->input_names().size())
    return refuse(HETERO_INVALID_ARGUMENT, "model '" + infer.model() + "' takes " +
                                               std::to_string(model->input_names().size()) +
                                               " inputs, the request has " + std::to_string(infer.inputs_size()));

  auto job = std::make_unique<NativeInferJob>(connection.shared_from_this());
  if (infer.sequence_id() != 0) {
    const SequenceKey key{connection.peer().uid, &connection, infer.model(), std::to_string(infer.sequence_id())};
    job->sequence =
        registry_->sequences().begin_call(model, key, infer.sequence_start(), infer.sequence_end(), status, why);
    if (!job->sequence) return refuse(status, why);
    job->send_state = infer.sequence_state_outputs();
  } else if (infer.sequence_start() || infer.sequence_end() || infer.sequence_state_outputs()) {
    return refuse(HETERO_INVALID_ARGUMENT, "sequence_start, sequence_end and sequence_state_outputs need a sequence_id");
  }
  job->id = id;
  job->memfd_threshold = infer.memfd_threshold();
  job->received = received;
  const uint32_t timeout_ms = infer.timeout_ms() ? std::min(infer.timeout_ms(), config_.limits.request_timeout_ms)
                                                 : config_.limits.request_timeout_ms;
  job->deadline = job->received + std::chrono::milliseconds(timeout_ms);
  job->fds = std::move(fds);
  for (const wire::Tensor& tensor : infer.inputs()) {
    try {
      job->inputs.push_back(wire::decode_tensor(tensor, job->fds, job->mappings, "input '" + tensor.name() + "'"));
    } catch (const Failure& e) {
      model->count_refused(received, e.status());
      connection.send_fatal(id, e.status(), e.what());  // lengths that disagree: a broken or hostile client
      return;
    }
    // Tensors must be aligned to their element size; protobuf's strings
    // usually are, but nothing promises it.
    wire::TensorView& view = job->inputs.back();
    const size_t element = core::dtype_size(view.dtype);
    if (reinterpret_cast<uintptr_t>(view.data) % element != 0) {
      std::vector<uint64_t>& copy = job->realigned.emplace_back((view.bytes + 7) / 8);
      std::memcpy(copy.data(), view.data, view.bytes);
      view.data = reinterpret_cast<const uint8_t*>(copy.data());
    }
  }
  if (const hetero_status placed = model->place_inputs(*job, why); placed != HETERO_OK) return refuse(placed, why);
  job->request = std::move(request);
  ++connection.in_flight;
  ServedModel::submit(model, std::move(job));
}

void Server::handle_stats(Connection& connection, const wire::Request& request) {
  wire::Response response;
  response.set_id(request.id());
  wire::StatsReply* stats = response.mutable_stats();
  for (const auto& model : registry_->serving()) set_stats(*stats->add_models(), model->statistics());
  stats->set_uptime_ms(static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started_).count()));
  stats->set_connections(static_cast<uint32_t>(connections_.size()));
  reply(connection, response);
}

void Server::handle_health(Connection& connection, const wire::Request& request) {
  wire::Response response;
  response.set_id(request.id());
  wire::HealthReply* health = response.mutable_health();
  health->set_ok(registry_->healthy());
  health->set_status(stopping_ ? "stopping" : status_line());
  health->set_models_ready(static_cast<uint32_t>(registry_->count(ModelState::Ready)));
  health->set_models_failed(static_cast<uint32_t>(registry_->count(ModelState::Failed)));
  reply(connection, response);
}

void Server::handle_reload(Connection& connection, const wire::Request& request) {
  if (!is_admin(connection.peer().uid))
    return reply_error(connection, request.id(), HETERO_PERMISSION_DENIED,
                       "only root and the daemon's own user may reload it");
  const Waiter waiter{connection.shared_from_this(), request.id()};
  start_reload(&waiter);
}

void Server::handle_end_sequence(Connection& connection, const wire::Request& request) {
  const wire::EndSequence& end = request.end_sequence();
  std::string why;
  const SequenceKey key{connection.peer().uid, &connection, end.model(), std::to_string(end.sequence_id())};
  if (const hetero_status status = registry_->sequences().end(key, why); status != HETERO_OK)
    return reply_error(connection, request.id(), status, why);
  wire::Response response;
  response.set_id(request.id());
  reply(connection, response);
}

void Server::handle_cancel(Connection& connection, const wire::Request& request) {
  const uint64_t target = request.cancel().request_id();
  for (const auto& model : registry_->serving())
    if (model->cancel(&connection, target)) break;
  wire::Response response;
  response.set_id(request.id());
  reply(connection, response);
}

}  // namespace hetero::daemon
