// Blobs: export then import computes exactly what the compiled model does,
// without the model; import refuses a damaged blob, a damaged or foreign
// driver section inside an intact container, and a blob for a device this
// machine does not have, each with a reason.
//
// The C ABI hands out blobs whole, so the checks that damage one section and
// keep the container's checksums valid rewrite the blob with core's own
// container code (core/blob_container.h).
#include <algorithm>
#include <cstring>

#include "core/blob_container.h"
#include "core/error.h"
#include "tests/driver_contract/contract.h"
#include "tests/driver_contract/contract_models.h"
#include "tests/unit/model_text.h"

namespace hetero::contract {
namespace {

class Blob : public DeviceTest {
 protected:
  static std::vector<uint8_t> export_blob(const hetero_compiled_model_t* compiled) {
    void* data = nullptr;
    size_t size = 0;
    EXPECT_OK(hetero_compiled_model_export(compiled, &data, &size));
    return take_bytes(data, size);
  }

  hetero_status import(hetero_core_t* core, const std::vector<uint8_t>& blob, CompiledPtr* out = nullptr) const {
    hetero_compiled_model_t* imported = nullptr;
    const hetero_status status =
        hetero_compiled_model_import(&imported, core, blob.data(), blob.size(), nullptr, nullptr, 0);
    if (status != HETERO_OK) {
      EXPECT_EQ(imported, nullptr) << "an out-param written on error";
    }
    if (out) {
      out->reset(imported);
    } else {
      hetero_compiled_model_release(imported);
    }
    return status;
  }

  // `blob` must be refused as damaged (BLOB_CORRUPT, or BLOB_MISMATCH for a
  // field such as the format version) with a reason.
  void expect_damaged(const std::vector<uint8_t>& blob, const std::string& what) const {
    const hetero_status status = import(core(), blob);
    const std::string why = hetero_last_error();
    EXPECT_TRUE(status == HETERO_BLOB_CORRUPT || status == HETERO_BLOB_MISMATCH)
        << what << ": " << hetero_status_name(status) << " " << why;
    EXPECT_FALSE(why.empty()) << what;
  }

  static std::vector<std::string> submodel_devices(const hetero_compiled_model_t* compiled) {
    size_t count = 0;
    EXPECT_OK(hetero_compiled_model_get_submodel_count(compiled, &count));
    std::vector<std::string> out;
    for (size_t i = 0; i < count; ++i) {
      const char* device = nullptr;
      EXPECT_OK(hetero_compiled_model_get_submodel_device(compiled, &device, i));
      out.push_back(device ? device : "");
    }
    return out;
  }

  std::vector<uint8_t> small_cnn_blob() const {
    CompiledPtr compiled = compile_text(small_cnn_model().text);
    return compiled ? export_blob(compiled.get()) : std::vector<uint8_t>();
  }
};

TEST_P(Blob, ExportThenImportComputesTheSame) {
  for (const TestModel* m : test_models()) {
    SCOPED_TRACE(m->name);
    CompiledPtr compiled = compile_text(m->text);
    ASSERT_TRUE(compiled);
    const std::vector<uint8_t> blob = export_blob(compiled.get());
    ASSERT_GT(blob.size(), 8u);
    EXPECT_EQ(std::memcmp(blob.data(), "HETEROBL", 8), 0);
    CompiledPtr imported;
    ASSERT_OK(import(core(), blob, &imported));
    const char* device = nullptr;
    ASSERT_OK(hetero_compiled_model_get_device(imported.get(), &device));
    EXPECT_EQ(device, device_case().device);
    EXPECT_EQ(submodel_devices(imported.get()), submodel_devices(compiled.get()));
    // The same code on the same device: equal bit for bit.
    expect_same(infer(imported.get(), m->inputs), infer(compiled.get(), m->inputs), true, "imported vs compiled");
    EXPECT_EQ(export_blob(imported.get()), blob) << "an imported model exports the blob it came from";
    if (device_case().deterministic_blobs) {
      EXPECT_EQ(export_blob(compile_text(m->text).get()), blob) << "two compiles exported different blobs";
    }
  }
}

TEST_P(Blob, ImportRefusesADamagedBlob) {
  const std::vector<uint8_t> blob = small_cnn_blob();
  ASSERT_GT(blob.size(), 64u);
  for (size_t at : {size_t(0), size_t(8), size_t(12), size_t(20), blob.size() / 2, blob.size() - 1}) {
    std::vector<uint8_t> flipped = blob;
    flipped[at] ^= 0x5a;
    expect_damaged(flipped, "byte " + std::to_string(at) + " flipped");
  }
  for (size_t cut : {size_t(0), size_t(5), size_t(40), blob.size() / 2, blob.size() - 1})
    expect_damaged(std::vector<uint8_t>(blob.begin(), blob.begin() + static_cast<ptrdiff_t>(cut)),
                   "cut at " + std::to_string(cut));
}

// Every section cut short, and the source ONNX bytes in its place, inside a
// container whose checksums are right: the section's reader (the driver's,
// or HETERO's plan) must refuse it, not crash or read past it.
TEST_P(Blob, ImportRefusesADamagedOrForeignSectionInAnIntactContainer) {
  const std::vector<uint8_t> blob = small_cnn_blob();
  const core::BlobView view = core::read_blob(blob);
  const std::vector<uint8_t> onnx = test::onnx_bytes(small_cnn_model().text.c_str());
  for (size_t s = 0; s < view.sections.size(); ++s) {
    const std::span<const uint8_t> bytes = view.sections[s].bytes;
    std::vector<std::pair<std::string, std::span<const uint8_t>>> replacements = {{"the source ONNX model", onnx}};
    for (size_t cut : {size_t(0), size_t(5), size_t(40), bytes.size() / 2, bytes.size() - 1})
      if (cut < bytes.size()) replacements.emplace_back("cut at " + std::to_string(cut), bytes.first(cut));
    for (const auto& [what, replacement] : replacements) {
      std::vector<core::BlobSection> sections = view.sections;
      sections[s].bytes = replacement;
      expect_damaged(core::write_blob(view.header, sections), "section '" + view.sections[s].name + "': " + what);
    }
  }
}

TEST_P(Blob, ImportRefusesABlobForAnotherDevice) {
  const std::vector<uint8_t> blob = small_cnn_blob();
  const core::BlobView view = core::read_blob(blob);
  const std::string driver = device_case().driver();
  // A core where the CPU driver lists one device: no CPU.1.
  const std::vector<std::string> members = device_case().members();
  if (std::find(members.begin(), members.end(), "CPU.1") != members.end()) {
    CorePtr one_cpu = make_core({});
    EXPECT_REFUSED(import(one_cpu.get(), blob), HETERO_NOT_FOUND, "CPU.1");
  }
  if (device_case().hetero()) return;  // its parts' devices are checked above, its plan's by tests/partition
  // The header naming a device id the driver does not have, another
  // driver's device, another version of the driver.
  core::BlobHeader header = view.header;
  header.device = driver + ".9";
  EXPECT_REFUSED(import(core(), core::write_blob(header, view.sections)), HETERO_NOT_FOUND, driver + ".9");
  header.device = driver == "CPU" ? "OPENCL" : "CPU";
  EXPECT_REFUSED(import(core(), core::write_blob(header, view.sections)), HETERO_BLOB_MISMATCH, header.device,
                 "driver");
  header = view.header;
  header.driver_version += "-other";
  EXPECT_REFUSED(import(core(), core::write_blob(header, view.sections)), HETERO_BLOB_MISMATCH, "driver_version",
                 header.driver_version);
}

HETERO_CONTRACT_INSTANTIATE(Blob);

}  // namespace
}  // namespace hetero::contract
