// A daemon's statistics as text for people, JSON, or Prometheus's text
// exposition format (hetero_core_get_stats).
#pragma once

#include <string>

#include "capi/backend.h"

namespace hetero::capi {

std::string format_stats(const StatsSnapshot& stats, hetero_stats_format format);

}  // namespace hetero::capi
