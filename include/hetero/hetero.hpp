// heterod — C++ API: a header-only layer over the C ABI (hetero/hetero.h).
//
// Handles are RAII objects: each owns one C handle, releases it in its
// destructor, and moves but does not copy. Failures throw hetero::Error,
// carrying the C ABI's status and hetero_last_error()'s message. Tensor data
// is a std::span. Everything here is inline and calls only hetero_*
// functions, so a program linked with libhetero.so.0 keeps working with every
// later 0.x library. Needs C++20 (-std=c++20).
//
//   hetero::Core core;                                   // in process
//   auto compiled = core.compile_file("demo.onnx", "CPU", {}, {{"image", {1, 3, 32, 32}}});
//   auto request = compiled.create_infer_request();
//   std::vector<float> image(3 * 32 * 32, 0.5f);
//   request.set_input(0, hetero::Tensor::wrap(std::span(image), {1, 3, 32, 32}));
//   request.infer();
//   hetero::Tensor probs = request.output(0);
//   for (float p : probs.data<float>()) ...
//
// hetero::Core::connect("/run/heterod/heterod.sock") is a client of heterod
// instead: open_model("demo") gives the compiled model it serves.
#ifndef HETERO_HETERO_HPP
#define HETERO_HETERO_HPP

#if __cplusplus < 202002L
#error "hetero/hetero.hpp needs C++20 (compile with -std=c++20); C++17 programs can use hetero/hetero.h"
#endif

#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "hetero/hetero.h"

namespace hetero {

// A failed call: the C ABI's status and the library's message naming what was
// wrong (file:line, node, input, field).
class Error : public std::runtime_error {
 public:
  Error(hetero_status status, const std::string& message) : std::runtime_error(message), status_(status) {}
  hetero_status status() const noexcept { return status_; }
  // "HETERO_NOT_FOUND", ...
  const char* status_name() const noexcept { return hetero_status_name(status_); }

 private:
  hetero_status status_;
};

// Driver or core settings: {"CPU.num_threads", "2"}.
using Config = std::map<std::string, std::string>;
// Dynamic input dims fixed by name: {{"image", {1, 3, 224, 224}}}.
using Shapes = std::map<std::string, std::vector<int64_t>>;
using Bytes = std::span<const std::byte>;

// An input or output: `shape` is empty when even the rank is unknown; a
// dynamic dim is -1.
struct Port {
  std::string name;
  hetero_dtype dtype = HETERO_DTYPE_UNDEFINED;
  std::optional<std::vector<int64_t>> shape;
};

struct Device {
  std::string name;       // the device string: "CPU", "OPENCL.1"
  std::string full_name;  // FULL_DEVICE_NAME
};

struct DriverInfo {
  std::string name, version, path;
  std::string no_device_reason;  // why it lists no device; empty when it has some
};

struct DriverFailure {
  std::string path, reason;
};

struct ServedModel {
  std::string name, device, state, error;  // state: "ready", "loading", "failed"
};

struct QueryNode {
  std::string name, op_type;
  bool supported = false;
  std::string reason;  // why not, when not supported
};

// The hetero_dtype of a C++ element type (bfloat16 has none: use
// Tensor::bytes()).
template <typename T> struct dtype_of;
template <> struct dtype_of<float> : std::integral_constant<hetero_dtype, HETERO_DTYPE_FLOAT32> {};
template <> struct dtype_of<double> : std::integral_constant<hetero_dtype, HETERO_DTYPE_FLOAT64> {};
template <> struct dtype_of<uint8_t> : std::integral_constant<hetero_dtype, HETERO_DTYPE_UINT8> {};
template <> struct dtype_of<int8_t> : std::integral_constant<hetero_dtype, HETERO_DTYPE_INT8> {};
template <> struct dtype_of<uint16_t> : std::integral_constant<hetero_dtype, HETERO_DTYPE_UINT16> {};
template <> struct dtype_of<int16_t> : std::integral_constant<hetero_dtype, HETERO_DTYPE_INT16> {};
template <> struct dtype_of<uint32_t> : std::integral_constant<hetero_dtype, HETERO_DTYPE_UINT32> {};
template <> struct dtype_of<int32_t> : std::integral_constant<hetero_dtype, HETERO_DTYPE_INT32> {};
template <> struct dtype_of<uint64_t> : std::integral_constant<hetero_dtype, HETERO_DTYPE_UINT64> {};
template <> struct dtype_of<int64_t> : std::integral_constant<hetero_dtype, HETERO_DTYPE_INT64> {};
template <> struct dtype_of<bool> : std::integral_constant<hetero_dtype, HETERO_DTYPE_BOOL> {};
template <typename T> struct dtype_of<const T> : dtype_of<T> {};

namespace detail {

inline void check(hetero_status status) {
  if (status != HETERO_OK) throw Error(status, hetero_last_error());
}

// Unique ownership of one C handle, released with Release.
template <typename T, hetero_status (*Release)(T*)>
class Owned {
 public:
  Owned() = default;
  explicit Owned(T* handle) noexcept : handle_(handle) {}
  Owned(Owned&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
  Owned& operator=(Owned&& other) noexcept {
    if (this != &other) reset(std::exchange(other.handle_, nullptr));
    return *this;
  }
  Owned(const Owned&) = delete;
  Owned& operator=(const Owned&) = delete;
  ~Owned() { reset(nullptr); }

  T* get() const noexcept { return handle_; }
  void reset(T* handle) noexcept {
    if (handle_) Release(handle_);
    handle_ = handle;
  }

 private:
  T* handle_ = nullptr;
};

// A string the library allocated for the caller.
inline std::string take_string(char* text) {
  std::unique_ptr<char, void (*)(void*)> owned(text, hetero_free);
  return text ? std::string(text) : std::string();
}

inline std::string borrowed(const char* text) { return text ? std::string(text) : std::string(); }

// Config and shapes as the C ABI takes them: parallel arrays.
class ConfigArrays {
 public:
  explicit ConfigArrays(const Config& config) {
    for (const auto& [key, value] : config) {
      keys_.push_back(key.c_str());
      values_.push_back(value.c_str());
    }
  }
  const char* const* keys() const noexcept { return keys_.data(); }
  const char* const* values() const noexcept { return values_.data(); }
  size_t size() const noexcept { return keys_.size(); }

 private:
  std::vector<const char*> keys_, values_;
};

class ShapeArrays {
 public:
  explicit ShapeArrays(const Shapes& shapes) {
    for (const auto& [name, dims] : shapes) {
      names_.push_back(name.c_str());
      dims_.push_back(dims.data());
      ranks_.push_back(dims.size());
    }
  }
  const char* const* names() const noexcept { return names_.data(); }
  const int64_t* const* dims() const noexcept { return dims_.data(); }
  const size_t* ranks() const noexcept { return ranks_.data(); }
  size_t size() const noexcept { return names_.size(); }

 private:
  std::vector<const char*> names_;
  std::vector<const int64_t*> dims_;
  std::vector<size_t> ranks_;
};

// The inputs or outputs of a model or compiled model, through its getters.
template <typename H>
std::vector<Port> ports(H* handle, hetero_status (*count_fn)(const H*, size_t*),
                        hetero_status (*name_fn)(const H*, const char**, size_t),
                        hetero_status (*dtype_fn)(const H*, hetero_dtype*, size_t),
                        hetero_status (*shape_fn)(const H*, const int64_t**, int64_t*, size_t)) {
  size_t n = 0;
  check(count_fn(handle, &n));
  std::vector<Port> out(n);
  for (size_t i = 0; i < n; ++i) {
    const char* name = nullptr;
    const int64_t* dims = nullptr;
    int64_t rank = -1;
    check(name_fn(handle, &name, i));
    check(dtype_fn(handle, &out[i].dtype, i));
    check(shape_fn(handle, &dims, &rank, i));
    out[i].name = borrowed(name);
    if (rank >= 0) out[i].shape = std::vector<int64_t>(dims, dims + rank);
  }
  return out;
}

}  // namespace detail

inline uint32_t api_version() noexcept { return hetero_api_version(); }
inline std::string library_version() { return hetero_library_version(); }

// A dense tensor. Owning (Tensor(dtype, shape): zero-filled, 64-byte
// aligned), over the caller's memory (wrap: not copied), or an infer
// request's output (sharing the result memory, which it keeps alive).
class Tensor {
 public:
  Tensor() = default;
  Tensor(hetero_dtype dtype, std::span<const int64_t> shape) {
    hetero_tensor_t* t = nullptr;
    detail::check(hetero_tensor_create(&t, dtype, shape.data(), shape.size()));
    handle_.reset(t);
  }
  Tensor(hetero_dtype dtype, std::initializer_list<int64_t> shape)
      : Tensor(dtype, std::span<const int64_t>(shape.begin(), shape.size())) {}
  // Takes over a C handle (e.g. from hetero_tensor_read_file).
  explicit Tensor(hetero_tensor_t* handle) noexcept : handle_(handle) {}

  // A tensor over `data`, not copied: `data` must outlive the tensor and
  // every infer request it is bound to (see hetero_tensor_wrap()).
  template <typename T>
  static Tensor wrap(std::span<T> data, std::span<const int64_t> shape) {
    return wrap(dtype_of<T>::value, shape, const_cast<std::remove_const_t<T>*>(data.data()), data.size_bytes());
  }
  template <typename T>
  static Tensor wrap(std::span<T> data, std::initializer_list<int64_t> shape) {
    return wrap(data, std::span<const int64_t>(shape.begin(), shape.size()));
  }
  static Tensor wrap(hetero_dtype dtype, std::span<const int64_t> shape, void* data, size_t size) {
    hetero_tensor_t* t = nullptr;
    detail::check(hetero_tensor_wrap(&t, dtype, shape.data(), shape.size(), data, size));
    return Tensor(t);
  }
  // A .npy file or a serialized ONNX TensorProto (.pb).
  static Tensor read_file(const std::string& path) {
    hetero_tensor_t* t = nullptr;
    detail::check(hetero_tensor_read_file(&t, path.c_str()));
    return Tensor(t);
  }
  void write_npy(const std::string& path) const { detail::check(hetero_tensor_write_npy(get(), path.c_str())); }

  hetero_dtype dtype() const {
    hetero_dtype d = HETERO_DTYPE_UNDEFINED;
    detail::check(hetero_tensor_get_dtype(get(), &d));
    return d;
  }
  std::vector<int64_t> shape() const {
    const int64_t* dims = nullptr;
    size_t rank = 0;
    detail::check(hetero_tensor_get_shape(get(), &dims, &rank));
    return rank ? std::vector<int64_t>(dims, dims + rank) : std::vector<int64_t>();
  }
  size_t element_count() const {
    size_t n = 0;
    detail::check(hetero_tensor_get_element_count(get(), &n));
    return n;
  }
  size_t byte_size() const {
    size_t n = 0;
    detail::check(hetero_tensor_get_byte_size(get(), &n));
    return n;
  }
  // The elements; T must be the tensor's type (else Error INVALID_ARGUMENT).
  // Valid while this Tensor lives.
  template <typename T>
  std::span<T> data() const {
    if (dtype_of<T>::value != dtype())
      throw Error(HETERO_INVALID_ARGUMENT, std::string("the tensor holds ") + hetero_dtype_name(dtype()) +
                                               ", not " + hetero_dtype_name(dtype_of<T>::value));
    return {static_cast<T*>(raw()), element_count()};
  }
  // The bytes, whatever the type.
  std::span<std::byte> bytes() const { return {static_cast<std::byte*>(raw()), byte_size()}; }

  hetero_tensor_t* get() const noexcept { return handle_.get(); }
  explicit operator bool() const noexcept { return get() != nullptr; }

 private:
  void* raw() const {
    void* data = nullptr;
    detail::check(hetero_tensor_get_data(get(), &data));
    return data;
  }
  detail::Owned<hetero_tensor_t, hetero_tensor_release> handle_;
};

// One inference at a time on a compiled model (use several to run several).
// Used from one thread at a time, except wait().
class InferRequest {
 public:
  // Called once per start_async(), on a library thread, with the inference's
  // status (and hetero_last_error() on that thread saying why). It may read
  // outputs and bind inputs, not start, wait for or destroy the request. It
  // must not throw: an exception ends the program (std::terminate).
  using Callback = std::function<void(hetero_status)>;

  InferRequest() = default;
  explicit InferRequest(hetero_infer_request_t* handle) noexcept : handle_(handle) {}
  InferRequest(InferRequest&&) noexcept = default;
  InferRequest& operator=(InferRequest&& other) noexcept {
    if (this != &other) {
      handle_ = std::move(other.handle_);  // first: waits for a running inference
      callback_ = std::move(other.callback_);
    }
    return *this;
  }

  // Binds a tensor by input index or name; the request references it (see
  // hetero_infer_request_set_input()).
  void set_input(size_t index, const Tensor& tensor) {
    detail::check(hetero_infer_request_set_input(get(), index, tensor.get()));
  }
  void set_input(const std::string& name, const Tensor& tensor) {
    detail::check(hetero_infer_request_set_input_by_name(get(), name.c_str(), tensor.get()));
  }
  // An output of the last finished inference, sharing its memory.
  Tensor output(size_t index) {
    hetero_tensor_t* t = nullptr;
    detail::check(hetero_infer_request_get_output(get(), &t, index));
    return Tensor(t);
  }
  Tensor output(const std::string& name) {
    hetero_tensor_t* t = nullptr;
    detail::check(hetero_infer_request_get_output_by_name(get(), &t, name.c_str()));
    return Tensor(t);
  }
  void infer() { detail::check(hetero_infer_request_infer(get())); }
  // Starts an inference and returns at once; `done` (may be empty) is
  // called when it has finished. wait() returns then, throwing its error.
  void start_async(Callback done = {}) {
    auto callback = done ? std::make_unique<Callback>(std::move(done)) : nullptr;
    detail::check(hetero_infer_request_start_async(get(), callback ? &trampoline : nullptr, callback.get()));
    // Started: the previous inference and its callback have finished.
    callback_ = std::move(callback);
  }
  void wait() { detail::check(hetero_infer_request_wait(get())); }
  // The next inferences are calls of sequence `id` (0: none);
  // `flags` (HETERO_SEQUENCE_*) are the next call's (docs/streams.md).
  void set_sequence(uint64_t id, uint32_t flags = 0) {
    detail::check(hetero_infer_request_set_sequence(get(), id, flags));
  }

  hetero_infer_request_t* get() const noexcept { return handle_.get(); }
  explicit operator bool() const noexcept { return get() != nullptr; }

 private:
  static void trampoline(void* user_data, hetero_status status) noexcept {
    (*static_cast<Callback*>(user_data))(status);
  }
  // Declared first, destroyed last: the handle's release waits for a running
  // inference, whose callback must still exist until then.
  std::unique_ptr<Callback> callback_;
  detail::Owned<hetero_infer_request_t, hetero_infer_request_release> handle_;
};

// A model read into heterod's IR, to query, partition or compile (in process).
class Model {
 public:
  explicit Model(hetero_model_t* handle) noexcept : handle_(handle) {}
  std::vector<Port> inputs() const {
    return detail::ports<hetero_model_t>(get(), hetero_model_get_input_count, hetero_model_get_input_name,
                                         hetero_model_get_input_dtype, hetero_model_get_input_shape);
  }
  std::vector<Port> outputs() const {
    return detail::ports<hetero_model_t>(get(), hetero_model_get_output_count, hetero_model_get_output_name,
                                         hetero_model_get_output_dtype, hetero_model_get_output_shape);
  }
  hetero_model_t* get() const noexcept { return handle_.get(); }

 private:
  detail::Owned<hetero_model_t, hetero_model_release> handle_;
};

// A model compiled for a device, or one a daemon serves.
class CompiledModel {
 public:
  explicit CompiledModel(hetero_compiled_model_t* handle) noexcept : handle_(handle) {}
  std::vector<Port> inputs() const {
    return detail::ports<hetero_compiled_model_t>(
        get(), hetero_compiled_model_get_input_count, hetero_compiled_model_get_input_name,
        hetero_compiled_model_get_input_dtype, hetero_compiled_model_get_input_shape);
  }
  std::vector<Port> outputs() const {
    return detail::ports<hetero_compiled_model_t>(
        get(), hetero_compiled_model_get_output_count, hetero_compiled_model_get_output_name,
        hetero_compiled_model_get_output_dtype, hetero_compiled_model_get_output_shape);
  }
  std::string device() const {
    const char* d = nullptr;
    detail::check(hetero_compiled_model_get_device(get(), &d));
    return detail::borrowed(d);
  }
  // One device per submodel, in execution order.
  std::vector<std::string> submodel_devices() const {
    size_t n = 0;
    detail::check(hetero_compiled_model_get_submodel_count(get(), &n));
    std::vector<std::string> out;
    for (size_t i = 0; i < n; ++i) {
      const char* d = nullptr;
      detail::check(hetero_compiled_model_get_submodel_device(get(), &d, i));
      out.push_back(detail::borrowed(d));
    }
    return out;
  }
  // The compiled blob (Core::import_model reads it back). In process only.
  std::vector<std::byte> export_blob() const {
    void* data = nullptr;
    size_t size = 0;
    detail::check(hetero_compiled_model_export(get(), &data, &size));
    std::unique_ptr<void, void (*)(void*)> owned(data, hetero_free);
    const auto* bytes = static_cast<const std::byte*>(data);
    return std::vector<std::byte>(bytes, bytes + size);
  }
  void export_file(const std::string& path) const {
    detail::check(hetero_compiled_model_export_file(get(), path.c_str()));
  }
  // What a sequence of the model carries: (output, input) pairs.
  std::vector<std::pair<std::string, std::string>> state_pairs() const {
    size_t n = 0;
    detail::check(hetero_compiled_model_get_state_pair_count(get(), &n));
    std::vector<std::pair<std::string, std::string>> out;
    for (size_t i = 0; i < n; ++i) {
      const char *output = nullptr, *input = nullptr;
      detail::check(hetero_compiled_model_get_state_pair(get(), &output, &input, i));
      out.emplace_back(detail::borrowed(output), detail::borrowed(input));
    }
    return out;
  }
  // Ends sequence `id`, giving back its state.
  void end_sequence(uint64_t id) { detail::check(hetero_compiled_model_end_sequence(get(), id)); }
  InferRequest create_infer_request() {
    hetero_infer_request_t* r = nullptr;
    detail::check(hetero_infer_request_create(&r, get()));
    return InferRequest(r);
  }
  hetero_compiled_model_t* get() const noexcept { return handle_.get(); }

 private:
  detail::Owned<hetero_compiled_model_t, hetero_compiled_model_release> handle_;
};

// Drivers, devices and models: heterod's runtime in this process, or a
// client of a running heterod (connect()).
class Core {
 public:
  // Keys of hetero_core_create(): "driver_path", "cache_dir",
  // "cache_max_mb", "DRIVER.key".
  explicit Core(const Config& config = {}) {
    const detail::ConfigArrays c(config);
    hetero_core_t* core = nullptr;
    detail::check(hetero_core_create(&core, c.keys(), c.values(), c.size()));
    handle_.reset(core);
  }
  static Core connect(const std::string& socket_path) {
    hetero_core_t* core = nullptr;
    detail::check(hetero_core_connect(&core, socket_path.c_str()));
    return Core(core);
  }

  std::vector<Device> devices() const {
    size_t n = 0;
    detail::check(hetero_core_get_device_count(get(), &n));
    std::vector<Device> out(n);
    for (size_t i = 0; i < n; ++i) {
      const char *name = nullptr, *full = nullptr;
      detail::check(hetero_core_get_device_name(get(), &name, i));
      detail::check(hetero_core_get_device_full_name(get(), &full, i));
      out[i] = {detail::borrowed(name), detail::borrowed(full)};
    }
    return out;
  }
  std::string metric(const std::string& device, const std::string& name) const {
    char* value = nullptr;
    detail::check(hetero_core_get_metric(get(), &value, device.c_str(), name.c_str()));
    return detail::take_string(value);
  }
  std::vector<DriverInfo> drivers() const {
    size_t n = 0;
    detail::check(hetero_core_get_driver_count(get(), &n));
    std::vector<DriverInfo> out(n);
    for (size_t i = 0; i < n; ++i) {
      const char *name = nullptr, *version = nullptr, *path = nullptr, *reason = nullptr;
      detail::check(hetero_core_get_driver(get(), &name, &version, &path, i));
      detail::check(hetero_core_get_driver_no_device_reason(get(), &reason, i));
      out[i] = {detail::borrowed(name), detail::borrowed(version), detail::borrowed(path), detail::borrowed(reason)};
    }
    return out;
  }
  std::vector<DriverFailure> driver_failures() const {
    size_t n = 0;
    detail::check(hetero_core_get_driver_failure_count(get(), &n));
    std::vector<DriverFailure> out(n);
    for (size_t i = 0; i < n; ++i) {
      const char *path = nullptr, *reason = nullptr;
      detail::check(hetero_core_get_driver_failure(get(), &path, &reason, i));
      out[i] = {detail::borrowed(path), detail::borrowed(reason)};
    }
    return out;
  }

  // ---- Models, in process ----
  Model read_model(const std::string& path, const Shapes& shapes = {}) {
    const detail::ShapeArrays s(shapes);
    hetero_model_t* m = nullptr;
    detail::check(hetero_model_read_file(&m, get(), path.c_str(), s.names(), s.dims(), s.ranks(), s.size()));
    return Model(m);
  }
  Model read_model(Bytes onnx, const Shapes& shapes = {}) {
    const detail::ShapeArrays s(shapes);
    hetero_model_t* m = nullptr;
    detail::check(hetero_model_read_memory(&m, get(), onnx.data(), onnx.size(), s.names(), s.dims(), s.ranks(),
                                           s.size()));
    return Model(m);
  }
  CompiledModel compile(const Model& model, const std::string& device = "CPU", const Config& config = {}) {
    const detail::ConfigArrays c(config);
    hetero_compiled_model_t* compiled = nullptr;
    detail::check(hetero_compile(&compiled, get(), model.get(), device.c_str(), c.keys(), c.values(), c.size()));
    return CompiledModel(compiled);
  }
  // Reads and compiles in one call; with a core "cache_dir", a cached blob
  // is imported instead.
  CompiledModel compile_file(const std::string& path, const std::string& device = "CPU", const Config& config = {},
                             const Shapes& shapes = {}) {
    const detail::ConfigArrays c(config);
    const detail::ShapeArrays s(shapes);
    hetero_compiled_model_t* compiled = nullptr;
    detail::check(hetero_compile_file(&compiled, get(), path.c_str(), s.names(), s.dims(), s.ranks(), s.size(),
                                      device.c_str(), c.keys(), c.values(), c.size()));
    return CompiledModel(compiled);
  }
  CompiledModel import_model(Bytes blob, const Config& config = {}) {
    const detail::ConfigArrays c(config);
    hetero_compiled_model_t* compiled = nullptr;
    detail::check(
        hetero_compiled_model_import(&compiled, get(), blob.data(), blob.size(), c.keys(), c.values(), c.size()));
    return CompiledModel(compiled);
  }
  CompiledModel import_file(const std::string& path, const Config& config = {}) {
    const detail::ConfigArrays c(config);
    hetero_compiled_model_t* compiled = nullptr;
    detail::check(hetero_compiled_model_import_file(&compiled, get(), path.c_str(), c.keys(), c.values(), c.size()));
    return CompiledModel(compiled);
  }
  std::vector<QueryNode> query(const Model& model, const std::string& device, const Config& config = {}) {
    const detail::ConfigArrays c(config);
    hetero_query_result_t* r = nullptr;
    detail::check(hetero_query(&r, get(), model.get(), device.c_str(), c.keys(), c.values(), c.size()));
    detail::Owned<hetero_query_result_t, hetero_query_result_release> result(r);
    size_t n = 0;
    detail::check(hetero_query_result_get_node_count(r, &n));
    std::vector<QueryNode> out(n);
    for (size_t i = 0; i < n; ++i) {
      const char *name = nullptr, *op = nullptr, *reason = nullptr;
      int supported = 0;
      detail::check(hetero_query_result_get_node(r, &name, &op, &supported, &reason, i));
      out[i] = {detail::borrowed(name), detail::borrowed(op), supported != 0, detail::borrowed(reason)};
    }
    return out;
  }
  std::string partition(const Model& model, const std::string& device, hetero_plan_format format = HETERO_PLAN_TEXT,
                        const Config& config = {}) {
    const detail::ConfigArrays c(config);
    char* text = nullptr;
    detail::check(hetero_partition(get(), &text, model.get(), device.c_str(), format, c.keys(), c.values(), c.size()));
    return detail::take_string(text);
  }

  // ---- A daemon's models (connect()) ----
  CompiledModel open_model(const std::string& name) {
    hetero_compiled_model_t* compiled = nullptr;
    detail::check(hetero_compiled_model_open(&compiled, get(), name.c_str()));
    return CompiledModel(compiled);
  }
  std::vector<ServedModel> models() {
    hetero_model_list_t* l = nullptr;
    detail::check(hetero_core_list_models(&l, get()));
    detail::Owned<hetero_model_list_t, hetero_model_list_release> list(l);
    size_t n = 0;
    detail::check(hetero_model_list_get_count(l, &n));
    std::vector<ServedModel> out(n);
    for (size_t i = 0; i < n; ++i) {
      const char *name = nullptr, *device = nullptr, *state = nullptr, *error = nullptr;
      detail::check(hetero_model_list_get(l, &name, &device, &state, &error, i));
      out[i] = {detail::borrowed(name), detail::borrowed(device), detail::borrowed(state), detail::borrowed(error)};
    }
    return out;
  }
  // A path the daemon reads (under its config's model_dirs).
  void load_model(const std::string& name, const std::string& path, const std::string& device = "CPU",
                  const Config& config = {}) {
    const detail::ConfigArrays c(config);
    detail::check(hetero_core_load_model(get(), name.c_str(), path.c_str(), device.c_str(), c.keys(), c.values(),
                                         c.size()));
  }
  // The model's bytes, uploaded.
  void load_model(const std::string& name, Bytes model, const std::string& device = "CPU",
                  const Config& config = {}) {
    const detail::ConfigArrays c(config);
    detail::check(hetero_core_load_model_memory(get(), name.c_str(), model.data(), model.size(), device.c_str(),
                                                c.keys(), c.values(), c.size()));
  }
  void unload_model(const std::string& name) { detail::check(hetero_core_unload_model(get(), name.c_str())); }
  std::string stats(hetero_stats_format format = HETERO_STATS_TEXT) {
    char* text = nullptr;
    detail::check(hetero_core_get_stats(get(), &text, format));
    return detail::take_string(text);
  }
  void reload() { detail::check(hetero_core_reload(get())); }

  hetero_core_t* get() const noexcept { return handle_.get(); }

 private:
  explicit Core(hetero_core_t* handle) noexcept : handle_(handle) {}
  detail::Owned<hetero_core_t, hetero_core_release> handle_;
};

// What a compiled blob says of itself.
inline std::string describe_blob(Bytes blob) {
  char* text = nullptr;
  detail::check(hetero_blob_describe(&text, blob.data(), blob.size()));
  return detail::take_string(text);
}

}  // namespace hetero

#endif  // HETERO_HETERO_HPP
