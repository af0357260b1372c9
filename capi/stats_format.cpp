#include "capi/stats_format.h"

#include <cstdio>

#include "core/error.h"
#include "core/json.h"

namespace hetero::capi {

namespace {

std::string number(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f", value);
  return text;
}

// Model names are [A-Za-z0-9._-] (the daemon checks), so they need no
// escaping in the text table or as Prometheus label values; JSON escapes
// whatever it is given.
std::string text(const StatsSnapshot& s) {
  std::string out = "uptime " + std::to_string(s.uptime_ms / 1000) + " s, " + std::to_string(s.connections) +
                    " connection" + (s.connections == 1 ? "" : "s") + "\n";
  out += "model                     requests   errors     busy timeouts  p50 us   p90 us   p99 us  queue running\n";
  for (const ModelStatsEntry& m : s.models) {
    char line[256];
    std::snprintf(line, sizeof line, "%-24s %9llu %8llu %8llu %8llu %7.1f %8.1f %8.1f %6u %7u\n", m.name.c_str(),
                  static_cast<unsigned long long>(m.requests), static_cast<unsigned long long>(m.errors),
                  static_cast<unsigned long long>(m.busy), static_cast<unsigned long long>(m.timeouts), m.p50_us,
                  m.p90_us, m.p99_us, m.queue_depth, m.in_flight);
    out += line;
  }
  return out;
}

std::string json(const StatsSnapshot& s) {
  namespace js = core::json;
  const js::Value doc = js::object();
  js::set(doc.get(), "uptime_ms", js::integer(static_cast<int64_t>(s.uptime_ms)));
  js::set(doc.get(), "connections", js::integer(s.connections));
  js::Value models = js::array();
  for (const ModelStatsEntry& m : s.models) {
    js::Value entry = js::object();
    js::set(entry.get(), "name", js::string(m.name));
    js::set(entry.get(), "requests", js::integer(static_cast<int64_t>(m.requests)));
    js::set(entry.get(), "errors", js::integer(static_cast<int64_t>(m.errors)));
    js::set(entry.get(), "busy", js::integer(static_cast<int64_t>(m.busy)));
    js::set(entry.get(), "timeouts", js::integer(static_cast<int64_t>(m.timeouts)));
    js::set(entry.get(), "latency_p50_us", js::number(m.p50_us, 1));
    js::set(entry.get(), "latency_p90_us", js::number(m.p90_us, 1));
    js::set(entry.get(), "latency_p99_us", js::number(m.p99_us, 1));
    js::set(entry.get(), "queue_depth", js::integer(m.queue_depth));
    js::set(entry.get(), "in_flight", js::integer(m.in_flight));
    js::append(models.get(), std::move(entry));
  }
  js::set(doc.get(), "models", std::move(models));
  return js::dump(doc.get());
}

std::string prometheus(const StatsSnapshot& s) {
  std::string out;
  auto family = [&](const char* name, const char* type, const char* help) {
    out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
  };
  auto per_model = [&](const char* name, const char* type, const char* help, auto value) {
    family(name, type, help);
    for (const ModelStatsEntry& m : s.models) out += std::string(name) + "{model=\"" + m.name + "\"} " + value(m) + "\n";
  };
  family("heterod_uptime_seconds", "gauge", "Seconds since the daemon started.");
  out += "heterod_uptime_seconds " + number(static_cast<double>(s.uptime_ms) / 1000.0) + "\n";
  family("heterod_connections", "gauge", "Clients connected.");
  out += "heterod_connections " + std::to_string(s.connections) + "\n";
  per_model("heterod_requests_total", "counter", "Infer requests answered.",
            [](const ModelStatsEntry& m) { return std::to_string(m.requests); });
  per_model("heterod_request_errors_total", "counter", "Infer requests answered with an error.",
            [](const ModelStatsEntry& m) { return std::to_string(m.errors); });
  per_model("heterod_busy_total", "counter", "Infer requests refused because the model's queue was full.",
            [](const ModelStatsEntry& m) { return std::to_string(m.busy); });
  per_model("heterod_timeouts_total", "counter", "Infer requests that waited too long in the queue.",
            [](const ModelStatsEntry& m) { return std::to_string(m.timeouts); });
  family("heterod_request_latency_seconds", "summary", "Receipt to reply, over the last 1024 requests.");
  for (const ModelStatsEntry& m : s.models)
    for (auto [q, v] : {std::pair{"0.5", m.p50_us}, {"0.9", m.p90_us}, {"0.99", m.p99_us}}) {
      char value[32];
      std::snprintf(value, sizeof value, "%.9f", v / 1e6);
      out += "heterod_request_latency_seconds{model=\"" + m.name + "\",quantile=\"" + q + "\"} " + value + "\n";
    }
  per_model("heterod_queue_depth", "gauge", "Requests waiting for an infer request.",
            [](const ModelStatsEntry& m) { return std::to_string(m.queue_depth); });
  per_model("heterod_in_flight", "gauge", "Inferences running.",
            [](const ModelStatsEntry& m) { return std::to_string(m.in_flight); });
  return out;
}

}  // namespace

std::string format_stats(const StatsSnapshot& stats, hetero_stats_format format) {
  switch (format) {
    case HETERO_STATS_TEXT:
      return text(stats);
    case HETERO_STATS_JSON:
      return json(stats);
    case HETERO_STATS_PROMETHEUS:
      return prometheus(stats);
  }
  fail(HETERO_INVALID_ARGUMENT, "unknown stats format " + std::to_string(static_cast<int>(format)));
}

}  // namespace hetero::capi
