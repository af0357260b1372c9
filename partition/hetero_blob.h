// HETERO blobs (core/blob-format.md): a "plan" section (the model's ports,
// each submodel's device, driver and where its inputs come from) and one
// section per submodel holding its own driver's export, so that importing
// compiles nothing: each part is imported by its driver.
#pragma once

#include <memory>
#include <vector>

#include "core/blob_container.h"
#include "core/runtime.h"
#include "partition/hetero_compiled_model.h"

namespace hetero::partition {

inline constexpr const char* kHeteroDriver = "HETERO";

std::vector<uint8_t> export_hetero_blob(const core::Runtime& runtime, const HeteroCompiledModel& model,
                                        const core::BlobOrigin& origin);

// `view` must be a HETERO blob (header driver "HETERO"). Refuses, naming the
// part and field, a part whose device is not here or whose driver or driver
// version differs; `config` is checked against the blob's as for any import.
std::unique_ptr<HeteroCompiledModel> import_hetero_blob(const core::Runtime& runtime, const core::BlobView& view,
                                                        const driver::Config& config);

}  // namespace hetero::partition
