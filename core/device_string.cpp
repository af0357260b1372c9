#include "core/device_string.h"

#include <cctype>

#include "core/error.h"

namespace hetero::core {

namespace {

DeviceName parse_plain(const std::string& text, const std::string& whole) {
  if (text.empty()) fail(HETERO_INVALID_ARGUMENT, "device string '" + whole + "' names an empty device");
  DeviceName d;
  const size_t dot = text.find('.');
  d.driver = text.substr(0, dot);
  if (dot != std::string::npos) {
    d.id = text.substr(dot + 1);
    if (d.id.empty())
      fail(HETERO_INVALID_ARGUMENT, "device string '" + whole + "': '" + text + "' has an empty device id");
  }
  for (char c : d.driver) {
    if (!std::isupper(static_cast<unsigned char>(c)) && !std::isdigit(static_cast<unsigned char>(c)) && c != '_')
      fail(HETERO_INVALID_ARGUMENT, "device string '" + whole + "': driver name '" + d.driver +
                                        "' must be upper case letters, digits and '_' (e.g. CPU, OPENCL)");
  }
  for (char c : d.id) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_')
      fail(HETERO_INVALID_ARGUMENT, "device string '" + whole + "': device id '" + d.id + "' is not valid");
  }
  return d;
}

}  // namespace

std::string DeviceString::to_string() const {
  std::string s = hetero ? std::string(kHeteroDriverName) + ":" : "";
  for (size_t i = 0; i < devices.size(); ++i) {
    if (i) s += ',';
    s += devices[i].to_string();
  }
  return s;
}

std::string DeviceString::driver() const { return hetero ? kHeteroDriverName : devices.front().driver; }

std::string DeviceString::id() const {
  if (!hetero) return devices.front().id;
  const std::string s = to_string();
  return s.substr(s.find(':') + 1);
}

DeviceString parse_device_string(const std::string& text) {
  DeviceString ds;
  const std::string prefix = std::string(kHeteroDriverName) + ":";
  if (text.rfind(prefix, 0) == 0) {
    ds.hetero = true;
    const std::string list = text.substr(prefix.size());
    size_t start = 0;
    for (;;) {
      const size_t comma = list.find(',', start);
      ds.devices.push_back(parse_plain(list.substr(start, comma - start), text));
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
    for (size_t i = 0; i < ds.devices.size(); ++i)
      for (size_t j = 0; j < i; ++j)
        if (ds.devices[i].to_string() == ds.devices[j].to_string())
          fail(HETERO_INVALID_ARGUMENT, "device string '" + text + "' names " + ds.devices[i].to_string() + " twice");
  } else {
    if (text == "HETERO") fail(HETERO_INVALID_ARGUMENT, "device string 'HETERO' needs a device list: HETERO:OPENCL,CPU");
    ds.devices.push_back(parse_plain(text, text));
  }
  return ds;
}

void check_blob_device(const std::string& blob_device, const std::string& wanted) {
  if (parse_device_string(wanted).to_string() != parse_device_string(blob_device).to_string())
    fail(HETERO_BLOB_MISMATCH, "the blob is compiled for " + blob_device + ", not " + wanted);
}

}  // namespace hetero::core
