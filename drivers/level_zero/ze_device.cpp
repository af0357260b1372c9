#include "drivers/level_zero/ze_device.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "core/error.h"

namespace hetero::level_zero {

const char* ze_result_name(ze_result_t result) {
#define X(name) \
  if (result == name) return #name;
    X(ZE_RESULT_ERROR_DEPENDENCY_UNAVAILABLE)
    X(ZE_RESULT_ERROR_DEVICE_IN_LOW_POWER_STATE)
    X(ZE_RESULT_ERROR_DEVICE_LOST)
    X(ZE_RESULT_ERROR_DEVICE_REQUIRES_RESET)
    X(ZE_RESULT_ERROR_HANDLE_OBJECT_IN_USE)
    X(ZE_RESULT_ERROR_INSUFFICIENT_PERMISSIONS)
    X(ZE_RESULT_ERROR_INVALID_ARGUMENT)
    X(ZE_RESULT_ERROR_INVALID_COMMAND_LIST_TYPE)
    X(ZE_RESULT_ERROR_INVALID_ENUMERATION)
    X(ZE_RESULT_ERROR_INVALID_FUNCTION_NAME)
    X(ZE_RESULT_ERROR_INVALID_GLOBAL_NAME)
    X(ZE_RESULT_ERROR_INVALID_GLOBAL_WIDTH_DIMENSION)
    X(ZE_RESULT_ERROR_INVALID_GROUP_SIZE_DIMENSION)
    X(ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_INDEX)
    X(ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_SIZE)
    X(ZE_RESULT_ERROR_INVALID_KERNEL_ATTRIBUTE_VALUE)
    X(ZE_RESULT_ERROR_INVALID_KERNEL_NAME)
    X(ZE_RESULT_ERROR_INVALID_MODULE_UNLINKED)
    X(ZE_RESULT_ERROR_INVALID_NATIVE_BINARY)
    X(ZE_RESULT_ERROR_INVALID_NULL_HANDLE)
    X(ZE_RESULT_ERROR_INVALID_NULL_POINTER)
    X(ZE_RESULT_ERROR_INVALID_SIZE)
    X(ZE_RESULT_ERROR_INVALID_SYNCHRONIZATION_OBJECT)
    X(ZE_RESULT_ERROR_MODULE_BUILD_FAILURE)
    X(ZE_RESULT_ERROR_MODULE_LINK_FAILURE)
    X(ZE_RESULT_ERROR_NOT_AVAILABLE)
    X(ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY)
    X(ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY)
    X(ZE_RESULT_ERROR_OVERLAPPING_REGIONS)
    X(ZE_RESULT_ERROR_UNINITIALIZED)
    X(ZE_RESULT_ERROR_UNKNOWN)
    X(ZE_RESULT_ERROR_UNSUPPORTED_ALIGNMENT)
    X(ZE_RESULT_ERROR_UNSUPPORTED_ENUMERATION)
    X(ZE_RESULT_ERROR_UNSUPPORTED_FEATURE)
    X(ZE_RESULT_ERROR_UNSUPPORTED_IMAGE_FORMAT)
    X(ZE_RESULT_ERROR_UNSUPPORTED_SIZE)
    X(ZE_RESULT_ERROR_UNSUPPORTED_VERSION)
    X(ZE_RESULT_EXP_ERROR_DEVICE_IS_NOT_VERTEX)
    X(ZE_RESULT_EXP_ERROR_REMOTE_DEVICE)
    X(ZE_RESULT_EXP_ERROR_VERTEX_IS_NOT_DEVICE)
    X(ZE_RESULT_NOT_READY)
    X(ZE_RESULT_SUCCESS)
    X(ZE_RESULT_WARNING_ACTION_REQUIRED)
    X(ZE_RESULT_WARNING_DROPPED_DATA)
#undef X
  return "ZE_RESULT_<unknown>";
}

void check(ze_result_t result, const std::string& what) {
  if (result == ZE_RESULT_SUCCESS) return;
  char code[32];
  std::snprintf(code, sizeof code, "0x%x", static_cast<unsigned>(result));
  const hetero_status status =
      result == ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY || result == ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY
          ? HETERO_OUT_OF_MEMORY
          : HETERO_DRIVER_ERROR;
  fail(status, what + ": " + ze_result_name(result) + " (" + code + ")");
}

namespace {

const char* type_name(ze_device_type_t t) {
  switch (t) {
    case ZE_DEVICE_TYPE_GPU: return "GPU";
    case ZE_DEVICE_TYPE_CPU: return "CPU";
    case ZE_DEVICE_TYPE_FPGA: return "FPGA";
    case ZE_DEVICE_TYPE_MCA: return "MCA";
    case ZE_DEVICE_TYPE_VPU: return "VPU";
    default: return "unknown";
  }
}

DeviceInfo describe(ze_driver_handle_t driver, uint32_t driver_version, ze_device_handle_t device) {
  DeviceInfo info;
  info.driver = driver;
  info.device = device;
  info.driver_version = driver_version;
  ze_device_properties_t props{};
  props.stype = ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES;
  check(zeDeviceGetProperties(device, &props), "zeDeviceGetProperties");
  info.name = std::string(props.name, strnlen(props.name, sizeof props.name));
  info.type = type_name(props.type);
  info.vendor_id = props.vendorId;
  info.device_id = props.deviceId;
  info.compute_units = props.numSlices * props.numSubslicesPerSlice * props.numEUsPerSubslice;
  std::copy(std::begin(props.uuid.id), std::end(props.uuid.id), info.uuid.begin());
  ze_device_compute_properties_t compute{};
  compute.stype = ZE_STRUCTURE_TYPE_DEVICE_COMPUTE_PROPERTIES;
  check(zeDeviceGetComputeProperties(device, &compute), "zeDeviceGetComputeProperties");
  info.max_group_size = std::max<uint32_t>(1, compute.maxTotalGroupSize);
  ze_device_module_properties_t module{};
  module.stype = ZE_STRUCTURE_TYPE_DEVICE_MODULE_PROPERTIES;
  check(zeDeviceGetModuleProperties(device, &module), "zeDeviceGetModuleProperties");
  info.fp16 = (module.flags & ZE_DEVICE_MODULE_FLAG_FP16) != 0;
  uint32_t n = 0;
  check(zeDeviceGetMemoryProperties(device, &n, nullptr), "zeDeviceGetMemoryProperties");
  std::vector<ze_device_memory_properties_t> mems(n);
  for (auto& m : mems) m.stype = ZE_STRUCTURE_TYPE_DEVICE_MEMORY_PROPERTIES;
  if (n) check(zeDeviceGetMemoryProperties(device, &n, mems.data()), "zeDeviceGetMemoryProperties");
  for (const auto& m : mems) info.global_mem += m.totalSize;
  return info;
}

class ZeBuffer final : public gpu::Buffer {
 public:
  ZeBuffer(ze_context_handle_t context, void* ptr, size_t size) : context_(context), ptr_(ptr), size_(size) {}
  ~ZeBuffer() override { zeMemFree(context_, ptr_); }
  size_t size() const override { return size_; }
  void* ptr() const { return ptr_; }

 private:
  ze_context_handle_t context_;
  void* ptr_;
  size_t size_;
};

class ZeExecutable final : public gpu::Executable {
 public:
  ZeExecutable(ze_module_handle_t module, DeviceUuid uuid) : module_(module), uuid_(uuid) {}
  ~ZeExecutable() override { zeModuleDestroy(module_); }
  // The native binary, wrapped with the device's uuid and a checksum
  // (ze_codec.h) so that load() refuses one for another device.
  std::vector<uint8_t> binary() const override {
    size_t size = 0;
    check(zeModuleGetNativeBinary(module_, &size, nullptr), "zeModuleGetNativeBinary");
    std::vector<uint8_t> native(size);
    check(zeModuleGetNativeBinary(module_, &size, native.data()), "zeModuleGetNativeBinary");
    native.resize(size);
    return encode_native_binary(native, uuid_);
  }
  ze_module_handle_t module() const { return module_; }

 private:
  ze_module_handle_t module_;
  DeviceUuid uuid_;
};

class ZeKernel final : public gpu::Kernel {
 public:
  ZeKernel(ze_kernel_handle_t kernel, std::string name) : kernel_(kernel), name_(std::move(name)) {}
  ~ZeKernel() override { zeKernelDestroy(kernel_); }
  // Buffers are passed as the device pointer's value.
  void set_arg(uint32_t index, gpu::Buffer& buffer) override {
    void* ptr = static_cast<ZeBuffer&>(buffer).ptr();
    check(zeKernelSetArgumentValue(kernel_, index, sizeof ptr, &ptr),
          "zeKernelSetArgumentValue(" + name_ + ", " + std::to_string(index) + ")");
  }
  ze_kernel_handle_t handle() const { return kernel_; }
  const std::string& name() const { return name_; }

 private:
  ze_kernel_handle_t kernel_;
  std::string name_;
};

// An event pool, destroyed once the queue has moved on to a newer pool and
// the last event made from it is gone.
struct EventPool {
  ze_event_pool_handle_t pool = nullptr;
  ~EventPool() {
    if (pool) zeEventPoolDestroy(pool);
  }
};

// Each command signals a fresh event of the queue's current pool; it keeps
// its pool alive.
class ZeEvent final : public gpu::Event {
 public:
  ZeEvent(ze_event_handle_t event, std::shared_ptr<EventPool> pool) : event_(event), pool_(std::move(pool)) {}
  ~ZeEvent() override { zeEventDestroy(event_); }
  ze_event_handle_t handle() const { return event_; }

 private:
  ze_event_handle_t event_;
  std::shared_ptr<EventPool> pool_;
};

class ZeQueue final : public gpu::Queue {
 public:
  explicit ZeQueue(ZeDevice& device) : device_(device) {
    try {
      create();
    } catch (...) {
      release();
      throw;
    }
  }
  ~ZeQueue() override { release(); }

  // The queue, its command list and fence; release() undoes what was made.
  void create() {
    ze_command_queue_desc_t qd{};
    qd.stype = ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC;
    qd.ordinal = 0;
    qd.mode = ZE_COMMAND_QUEUE_MODE_ASYNCHRONOUS;
    check(zeCommandQueueCreate(device_.context(), device_.handle(), &qd, &queue_), "zeCommandQueueCreate");
    ze_command_list_desc_t ld{};
    ld.stype = ZE_STRUCTURE_TYPE_COMMAND_LIST_DESC;
    check(zeCommandListCreate(device_.context(), device_.handle(), &ld, &list_), "zeCommandListCreate");
    ze_fence_desc_t fd{};
    fd.stype = ZE_STRUCTURE_TYPE_FENCE_DESC;
    check(zeFenceCreate(queue_, &fd, &fence_), "zeFenceCreate");
    new_pool();
  }
  void release() {
    if (fence_) zeFenceDestroy(fence_);
    if (list_) zeCommandListDestroy(list_);
    if (queue_) zeCommandQueueDestroy(queue_);
    fence_ = nullptr;
    list_ = nullptr;
    queue_ = nullptr;
  }

  gpu::EventPtr write(gpu::Buffer& dst, const void* host, size_t bytes, const std::vector<gpu::EventPtr>& deps) override {
    return record(deps, [&](ze_event_handle_t signal, uint32_t n, ze_event_handle_t* waits) {
      return zeCommandListAppendMemoryCopy(list_, static_cast<ZeBuffer&>(dst).ptr(), host, bytes, signal, n, waits);
    }, "zeCommandListAppendMemoryCopy (write)");
  }
  gpu::EventPtr read(gpu::Buffer& src, void* host, size_t bytes, const std::vector<gpu::EventPtr>& deps) override {
    return record(deps, [&](ze_event_handle_t signal, uint32_t n, ze_event_handle_t* waits) {
      return zeCommandListAppendMemoryCopy(list_, host, static_cast<ZeBuffer&>(src).ptr(), bytes, signal, n, waits);
    }, "zeCommandListAppendMemoryCopy (read)");
  }
  gpu::EventPtr launch(gpu::Kernel& kernel, const gpu::Range& range, const std::vector<gpu::EventPtr>& deps) override {
    auto& k = static_cast<ZeKernel&>(kernel);
    // The runtime's suggestion only where the plan leaves a group size open
    // (launch_geometry() takes the plan's where it sets one).
    std::array<uint32_t, 3> suggested{0, 0, 0};
    bool open = false;
    for (uint32_t d = 0; d < range.dims && d < 3; ++d) open = open || range.local[d] == 0;
    if (open) {
      std::array<uint32_t, 3> global{1, 1, 1};
      for (uint32_t d = 0; d < range.dims && d < 3; ++d) global[d] = static_cast<uint32_t>(std::min<size_t>(range.global[d], UINT32_MAX));
      check(zeKernelSuggestGroupSize(k.handle(), global[0], global[1], global[2], &suggested[0], &suggested[1],
                                     &suggested[2]),
            "zeKernelSuggestGroupSize(" + k.name() + ")");
    }
    const Launch l = launch_geometry(range, suggested);
    check(zeKernelSetGroupSize(k.handle(), l.group_size[0], l.group_size[1], l.group_size[2]),
          "zeKernelSetGroupSize(" + k.name() + ")");
    const ze_group_count_t count{l.group_count[0], l.group_count[1], l.group_count[2]};
    return record(deps, [&](ze_event_handle_t signal, uint32_t n, ze_event_handle_t* waits) {
      return zeCommandListAppendLaunchKernel(list_, k.handle(), &count, signal, n, waits);
    }, "zeCommandListAppendLaunchKernel(" + k.name() + ")");
  }
  // Closes and submits what was recorded, waits on the fence, then checks
  // the events.
  void wait(const std::vector<gpu::EventPtr>& events) override {
    if (recorded_) {
      check(zeCommandListClose(list_), "zeCommandListClose");
      check(zeCommandQueueExecuteCommandLists(queue_, 1, &list_, fence_), "zeCommandQueueExecuteCommandLists");
      check(zeFenceHostSynchronize(fence_, UINT64_MAX), "zeFenceHostSynchronize");
      check(zeFenceReset(fence_), "zeFenceReset");
      check(zeCommandListReset(list_), "zeCommandListReset");
      recorded_ = 0;
    }
    for (const gpu::EventPtr& e : events)
      if (e) check(zeEventHostSynchronize(static_cast<ZeEvent&>(*e).handle(), UINT64_MAX), "zeEventHostSynchronize");
  }

 private:
  static constexpr uint32_t kPoolEvents = 4096;

  void new_pool() {
    ze_event_pool_desc_t pd{};
    pd.stype = ZE_STRUCTURE_TYPE_EVENT_POOL_DESC;
    pd.flags = ZE_EVENT_POOL_FLAG_HOST_VISIBLE;
    pd.count = kPoolEvents;
    ze_device_handle_t dev = device_.handle();
    auto pool = std::make_shared<EventPool>();
    check(zeEventPoolCreate(device_.context(), &pd, 1, &dev, &pool->pool), "zeEventPoolCreate");
    pool_ = std::move(pool);
    next_ = 0;
  }

  template <typename Append>
  gpu::EventPtr record(const std::vector<gpu::EventPtr>& deps, Append append, const std::string& what) {
    if (next_ == kPoolEvents) new_pool();
    ze_event_desc_t ed{};
    ed.stype = ZE_STRUCTURE_TYPE_EVENT_DESC;
    ed.index = next_++;
    ed.signal = ZE_EVENT_SCOPE_FLAG_HOST;
    ed.wait = ZE_EVENT_SCOPE_FLAG_HOST;
    ze_event_handle_t ev = nullptr;
    check(zeEventCreate(pool_->pool, &ed, &ev), "zeEventCreate");
    auto event = std::make_shared<ZeEvent>(ev, pool_);
    std::vector<ze_event_handle_t> waits;
    for (const gpu::EventPtr& d : deps)
      if (d) waits.push_back(static_cast<ZeEvent&>(*d).handle());
    check(append(ev, static_cast<uint32_t>(waits.size()), waits.empty() ? nullptr : waits.data()), what);
    ++recorded_;
    return event;
  }

  ZeDevice& device_;
  ze_command_queue_handle_t queue_ = nullptr;
  ze_command_list_handle_t list_ = nullptr;
  ze_fence_handle_t fence_ = nullptr;
  std::shared_ptr<EventPool> pool_;
  uint32_t next_ = 0;
  size_t recorded_ = 0;
};

}  // namespace

std::vector<DeviceInfo> enumerate_devices(std::string& why) {
  std::vector<DeviceInfo> out;
  const ze_result_t init = zeInit(ZE_INIT_FLAG_GPU_ONLY);
  if (init != ZE_RESULT_SUCCESS) {
    why = std::string("no Level Zero driver: zeInit failed with ") + ze_result_name(init) +
          " (the loader found no GPU driver; install one, e.g. intel-level-zero-gpu)";
    return out;
  }
  uint32_t count = 0;
  const ze_result_t got = zeDriverGet(&count, nullptr);
  if (got != ZE_RESULT_SUCCESS || count == 0) {
    why = got != ZE_RESULT_SUCCESS ? std::string("no Level Zero driver: zeDriverGet failed with ") + ze_result_name(got)
                                   : std::string("no Level Zero driver: zeDriverGet found none");
    return out;
  }
  std::vector<ze_driver_handle_t> drivers(count);
  check(zeDriverGet(&count, drivers.data()), "zeDriverGet");
  for (ze_driver_handle_t drv : drivers) {
    ze_driver_properties_t dp{};
    dp.stype = ZE_STRUCTURE_TYPE_DRIVER_PROPERTIES;
    check(zeDriverGetProperties(drv, &dp), "zeDriverGetProperties");
    uint32_t n = 0;
    check(zeDeviceGet(drv, &n, nullptr), "zeDeviceGet");
    std::vector<ze_device_handle_t> devs(n);
    if (n) check(zeDeviceGet(drv, &n, devs.data()), "zeDeviceGet");
    for (ze_device_handle_t d : devs) out.push_back(describe(drv, dp.driverVersion, d));
  }
  if (out.empty()) why = "no Level Zero device: zeDeviceGet found none on " + std::to_string(count) + " driver(s)";
  return out;
}

ZeDevice::ZeDevice(DeviceInfo info, std::string name)
    : info_(std::move(info)), name_(std::move(name)), tools_(SpirvToolchain::from_build()) {
  ze_context_desc_t cd{};
  cd.stype = ZE_STRUCTURE_TYPE_CONTEXT_DESC;
  check(zeContextCreate(info_.driver, &cd, &context_), name_ + ": zeContextCreate");
  ze_command_queue_desc_t qd{};
  qd.stype = ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC;
  qd.mode = ZE_COMMAND_QUEUE_MODE_SYNCHRONOUS;
  const ze_result_t r = zeCommandQueueCreate(context_, info_.device, &qd, &upload_queue_);
  if (r != ZE_RESULT_SUCCESS) {
    zeContextDestroy(context_);
    check(r, name_ + ": zeCommandQueueCreate");
  }
}

ZeDevice::~ZeDevice() {
  if (upload_queue_) zeCommandQueueDestroy(upload_queue_);
  if (context_) zeContextDestroy(context_);
}

void ZeDevice::run_now(const std::function<void(ze_command_list_handle_t)>& record) {
  ze_command_list_desc_t ld{};
  ld.stype = ZE_STRUCTURE_TYPE_COMMAND_LIST_DESC;
  ze_command_list_handle_t list = nullptr;
  check(zeCommandListCreate(context_, info_.device, &ld, &list), name_ + ": zeCommandListCreate");
  std::unique_ptr<_ze_command_list_handle_t, ze_result_t (*)(ze_command_list_handle_t)> guard(list, zeCommandListDestroy);
  record(list);
  check(zeCommandListClose(list), name_ + ": zeCommandListClose");
  std::lock_guard lock(upload_mutex_);
  check(zeCommandQueueExecuteCommandLists(upload_queue_, 1, &list, nullptr), name_ + ": zeCommandQueueExecuteCommandLists");
  check(zeCommandQueueSynchronize(upload_queue_, UINT64_MAX), name_ + ": zeCommandQueueSynchronize");
}

std::shared_ptr<gpu::Buffer> ZeDevice::allocate(size_t bytes, const void* init) {
  ze_device_mem_alloc_desc_t md{};
  md.stype = ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC;
  void* ptr = nullptr;
  check(zeMemAllocDevice(context_, &md, std::max<size_t>(bytes, 4), 64, info_.device, &ptr),
        name_ + ": zeMemAllocDevice(" + std::to_string(bytes) + " bytes)");
  auto buffer = std::make_shared<ZeBuffer>(context_, ptr, bytes);
  if (init && bytes)
    run_now([&](ze_command_list_handle_t list) {
      check(zeCommandListAppendMemoryCopy(list, ptr, init, bytes, nullptr, 0, nullptr),
            name_ + ": zeCommandListAppendMemoryCopy (upload)");
    });
  return buffer;
}

std::shared_ptr<gpu::Executable> ZeDevice::create_module(ze_module_format_t format, const uint8_t* data, size_t size,
                                                         const char* what) {
  ze_module_desc_t desc{};
  desc.stype = ZE_STRUCTURE_TYPE_MODULE_DESC;
  desc.format = format;
  desc.inputSize = size;
  desc.pInputModule = data;
  desc.pBuildFlags = "";
  ze_module_handle_t module = nullptr;
  ze_module_build_log_handle_t log = nullptr;
  const ze_result_t r = zeModuleCreate(context_, info_.device, &desc, &module, &log);
  std::string text;
  if (log) {
    size_t n = 0;
    if (zeModuleBuildLogGetString(log, &n, nullptr) == ZE_RESULT_SUCCESS && n > 1) {
      text.resize(n);
      zeModuleBuildLogGetString(log, &n, text.data());
      text.resize(strnlen(text.c_str(), n));
    }
    zeModuleBuildLogDestroy(log);
  }
  if (r != ZE_RESULT_SUCCESS) {
    if (module) zeModuleDestroy(module);
    check(r, name_ + ": zeModuleCreate from " + what + (text.empty() ? "" : " (build log: " + text + ")"));
  }
  return std::make_shared<ZeExecutable>(module, info_.uuid);
}

std::shared_ptr<gpu::Executable> ZeDevice::build(const std::string& source, const std::string& options) {
  const std::vector<uint8_t> spirv = compile_to_spirv(tools_, source, options);
  ++source_builds_;
  return create_module(ZE_MODULE_FORMAT_IL_SPIRV, spirv.data(), spirv.size(), "SPIR-V");
}

std::shared_ptr<gpu::Executable> ZeDevice::load(std::span<const uint8_t> binary, const std::string& /*options*/) {
  const std::vector<uint8_t> native = decode_native_binary(binary, info_.uuid);
  return create_module(ZE_MODULE_FORMAT_NATIVE, native.data(), native.size(), "a native binary");
}

std::unique_ptr<gpu::Kernel> ZeDevice::kernel(const gpu::Executable& executable, const std::string& name) {
  ze_kernel_desc_t kd{};
  kd.stype = ZE_STRUCTURE_TYPE_KERNEL_DESC;
  kd.pKernelName = name.c_str();
  ze_kernel_handle_t k = nullptr;
  check(zeKernelCreate(static_cast<const ZeExecutable&>(executable).module(), &kd, &k),
        name_ + ": zeKernelCreate(" + name + ")");
  return std::make_unique<ZeKernel>(k, name);
}

std::unique_ptr<gpu::Queue> ZeDevice::queue() { return std::make_unique<ZeQueue>(*this); }

}  // namespace hetero::level_zero
