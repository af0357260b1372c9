// What a HETERO compiled model exports (core/blob-format.md): a "plan"
// section (the model's ports; per part its device, driver and driver version
// and where its inputs come from; where each model output comes from), then
// "part0", "part1", ... in execution order, each its device's own driver
// export, so that importing compiles nothing: each part is imported by its
// driver.
#pragma once

#include <vector>

#include "core/blob_container.h"
#include "core/device_string.h"
#include "core/runtime.h"
#include "partition/hetero_compiled_model.h"

namespace hetero::partition {

std::vector<uint8_t> encode_hetero_plan(const HeteroCompiledModel::Layout& layout);
std::vector<driver::ExportedSection> export_hetero_sections(const HeteroCompiledModel::Layout& layout);

// `blob` holds what export_hetero_sections wrote for `device` (a HETERO
// device). Refuses, naming the part and field, a part whose device is not
// one of `device` or not here, or whose driver or driver version differs;
// each part gets its device's share of `config` (split_device_config).
HeteroCompiledModel::Layout import_hetero_sections(const core::Runtime& runtime, const core::BlobView& blob,
                                                   const core::DeviceString& device, const driver::Config& config);

}  // namespace hetero::partition
