// HETERO as a driver: its device is a list of other devices in priority order
// ("HETERO:OPENCL,CPU", device id "OPENCL,CPU"), and it compiles a model by
// planning it across them (partition/plan.h) and compiling each part through
// the same core::Runtime, by that part's driver. Like OpenVINO's hetero
// plugin, it is built into the library rather than loaded: it needs the core
// it runs inside, which the core hands it when it makes it
// (core::RuntimeOptions::make_hetero_driver).
#pragma once

#include <memory>

#include "core/driver.h"
#include "core/runtime.h"

namespace hetero::partition {

std::unique_ptr<driver::Driver> make_hetero_driver(const core::Runtime& runtime);

}  // namespace hetero::partition
