// The driver module interface: what a driver module (drivers/cpu,
// drivers/opencl, drivers/level_zero) implements and the core calls. It is
// an in-tree interface, not a public SDK: modules are built together with the
// core and share its C++ types (core::Model, core::Tensor, hetero::Failure), so
// it lives in core/ and is not installed. The public, stable interface is the
// C ABI of include/hetero/hetero.h.
//
// A driver is a shared object loaded with dlopen. It exports two C symbols
// (core/driver_module.h's HETERO_DRIVER_MODULE defines both):
//
//   extern "C" const char hetero_driver_abi_stamp[];
//   extern "C" hetero::driver::Driver* hetero_driver_create(char* error, size_t error_size);
//
// The stamp is the build's: "<version>+<hash>", where the hash covers this
// header, the other headers a module builds on (the list is in
// core/meson.build) and every header they include (graph.h, tensor.h,
// dtype.h, error.h, ...), computed when the project is built
// (core/driver_abi_stamp.py). The host reads a module's stamp before it calls
// the module at all and refuses, with both stamps in the reason, a module
// whose stamp is not its own: one built by another version, or against core
// types that have changed since. Nobody bumps a number by hand.
//
// hetero_driver_create() returns a new driver, or null with the reason in
// `error`; it must not set up the driver's runtime (Driver::initialize()).
// The host deletes the driver before dlclose.
//
// The contract follows OpenVINO's plugin API: device enumeration and metrics,
// get/set config rejecting unknown keys, query, compile, infer requests,
// export/import. Errors are hetero::Failure exceptions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/blob_container.h"
#include "core/error.h"
#include "core/graph.h"
#include "core/tensor.h"

#define HETERO_DRIVER_STAMP_SYMBOL "hetero_driver_abi_stamp"
#define HETERO_DRIVER_ENTRY_SYMBOL "hetero_driver_create"

namespace hetero::driver {

using Config = std::map<std::string, std::string>;

// Metric names every driver answers (OpenVINO's names).
inline constexpr const char* kMetricAvailableDevices = "AVAILABLE_DEVICES";
inline constexpr const char* kMetricFullDeviceName = "FULL_DEVICE_NAME";
inline constexpr const char* kMetricSupportedProperties = "SUPPORTED_PROPERTIES";
inline constexpr const char* kMetricOptimizationCapabilities = "OPTIMIZATION_CAPABILITIES";
inline constexpr const char* kMetricRangeForAsyncInferRequests = "RANGE_FOR_ASYNC_INFER_REQUESTS";
// How many infer requests keep the device busy without queueing.
inline constexpr const char* kMetricOptimalNumberOfInferRequests = "OPTIMAL_NUMBER_OF_INFER_REQUESTS";

// Name, element type and (possibly dynamic) shape of a model input or output.
struct Port {
  std::string name;
  core::DType dtype = core::DType::Undefined;
  std::vector<core::Dim> shape;  // empty with has_rank=false when unknown
  bool has_rank = true;
};

// query(): for each node of the graph (by Node::index), whether this device
// runs it and, if not, why.
struct NodeSupport {
  bool supported = false;
  std::string reason;  // empty when supported
};

// Drivers do not implement this themselves: core::make_infer_request()
// (core/infer_request.h) makes one over the driver's run step, with the
// checks and messages every driver shares.
class InferRequest {
 public:
  virtual ~InferRequest() = default;
  // Binds input i (in the compiled model's input order). The tensor's memory
  // must stay valid until the inference that uses it has finished.
  virtual void set_input(size_t index, const core::Tensor& tensor) = 0;
  // Output i of the last finished inference. The caller may keep the tensor:
  // its memory must not be written again while anyone but the driver holds
  // it (reuse a buffer only once its owner is the driver's alone), because
  // the C ABI promises held outputs stay as they are.
  virtual core::Tensor output(size_t index) const = 0;
  // Runs one inference on the bound inputs.
  virtual void infer() = 0;
  // Starts infer() without blocking; `done` is called once, from another
  // thread, with null on success or the failure. At most one in flight per
  // request.
  virtual void start_async(std::function<void(std::exception_ptr)> done) = 0;
  // Blocks until the inference started last has finished, its callback
  // included; returns its failure (null when it succeeded or none ran).
  // BUSY from the request's own completion callback.
  virtual std::exception_ptr wait() = 0;
  // Asks the inference running, if any, to stop where it can (the CPU
  // between two nodes); it then fails with CANCELLED. Returns at once; a
  // request with nothing running is left as it is, and any request is
  // usable again once its inference has ended.
  virtual void cancel() = 0;
  // Gives back the memory the request keeps between inferences to reuse in
  // the next (the CPU plan's intermediate buffers); the next inference
  // allocates it again. Fails with BUSY while an inference runs. For a
  // caller that knows the request will idle: the daemon, when a model's
  // queue is empty.
  virtual void release_memory() {}
};

// A section of a blob (core/blob-format.md) as a compiled model exports it.
struct ExportedSection {
  std::string name;    // "driver"; HETERO's "plan", "part0", ...
  std::string device;  // the device whose driver reads it; "" for none
  std::vector<uint8_t> bytes;
};

class CompiledModel {
 public:
  virtual ~CompiledModel() = default;
  virtual const std::vector<Port>& inputs() const = 0;
  virtual const std::vector<Port>& outputs() const = 0;
  virtual std::unique_ptr<InferRequest> create_infer_request() = 0;
  // Driver-specific bytes that import_blob() turns back into an equal model.
  // The same model and config give the same bytes.
  virtual std::vector<uint8_t> export_blob() const = 0;
  // Its blob's sections: one, "driver", holding export_blob(), unless the
  // model is made of parts compiled by other drivers (HETERO: its plan, and
  // each part's own export in a section of its own, checksummed on its own).
  virtual std::vector<ExportedSection> export_sections() const { return {{"driver", device(), export_blob()}}; }
  // "CPU", "CPU.1", "HETERO:CPU.1,CPU", ...
  virtual std::string device() const = 0;
  // The devices its parts run on, in execution order: its own device, or
  // for a model split across devices (HETERO) each part's.
  virtual std::vector<std::string> submodel_devices() const { return {device()}; }
};

// A driver is made when its module loads, cheaply: a process lists every
// module, but uses the devices of few. Its runtime (OpenCL platforms, zeInit,
// a oneDNN engine) is set up by initialize(), which the host calls once, on
// first use of the driver's devices, before any call but name(), version(),
// get_config() and set_config().
class Driver {
 public:
  virtual ~Driver() = default;
  // Device family name used in device strings: "CPU", "OPENCL", "LEVEL_ZERO".
  virtual std::string name() const = 0;
  virtual std::string version() const = 0;
  // Sets up the runtime. A throw is reported as the module's failure, the way
  // a module that fails to load is; a runtime that is there but has no device
  // is no failure (devices() is empty and no_device_reason() says why).
  virtual void initialize() {}
  // Device ids ("0", "1", ...); empty when the runtime has no device.
  virtual std::vector<std::string> devices() const = 0;
  // Why devices() is empty, when it is.
  virtual std::string no_device_reason() const { return {}; }
  // A metric of one device as text; lists are space-separated. Fails with
  // NOT_FOUND for a metric it does not know.
  virtual std::string metric(const std::string& device_id, const std::string& name) const = 0;
  // Config keys are checked: an unknown key or a bad value fails with
  // INVALID_ARGUMENT naming it.
  virtual std::string get_config(const std::string& key) const = 0;
  virtual void set_config(const Config& config) = 0;
  // Which nodes of `model`'s main graph the device runs (one entry per node).
  virtual std::vector<NodeSupport> query(const core::Model& model, const std::string& device_id,
                                         const Config& config) const = 0;
  virtual std::unique_ptr<CompiledModel> compile(const core::Model& model, const std::string& device_id,
                                                 const Config& config) = 0;
  virtual std::unique_ptr<CompiledModel> import_blob(std::span<const uint8_t> blob, const std::string& device_id,
                                                     const Config& config) = 0;
  // What export_sections() wrote, back into a model: by default its "driver"
  // section through import_blob(). The blob's header is checked already.
  virtual std::unique_ptr<CompiledModel> import_sections(const core::BlobView& blob, const std::string& device_id,
                                                         const Config& config) {
    return import_blob(blob.section("driver").bytes, device_id, config);
  }
  // What the blob cache's key must cover beyond the config's own text: the
  // contents of files the config names (HETERO's policy file), so that an
  // edited file misses. Empty for a config that names no file.
  virtual std::string config_contents(const Config& config) const {
    (void)config;
    return {};
  }
};

}  // namespace hetero::driver

extern "C" {
typedef hetero::driver::Driver* (*hetero_driver_create_fn)(char* error, size_t error_size);
}
