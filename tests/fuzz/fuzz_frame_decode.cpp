// libFuzzer target: heterod's frame decoder and message checks on arbitrary
// bytes from a client. The input is cut into reads of varying sizes (as a
// socket delivers them); every frame must decode to a Request or fail with a
// hetero::Failure, and every Infer input must pass or fail decode_tensor's
// checks, never crash, hang or allocate beyond the frame limit.
#include <google/protobuf/stubs/logging.h>

#include <cstddef>
#include <cstdint>
#include <span>

#include "core/error.h"
#include "protocol/frame.h"
#include "protocol/heterod.pb.h"
#include "protocol/tensor_codec.h"

namespace {

// A small limit, so that a length in a header cannot make the decoder ask for
// more memory than the fuzzer allows.
constexpr size_t kMaxFrame = 1 << 20;

void check_request(const hetero::wire::Frame& frame) {
  hetero::wire::Request request;
  if (!request.ParseFromArray(frame.payload.data(), static_cast<int>(frame.payload.size()))) return;
  if (request.body_case() != hetero::wire::Request::kInfer) return;
  for (const hetero::wire::Tensor& tensor : request.infer().inputs()) {
    hetero::wire::TensorMappings mappings;
    try {
      const hetero::wire::TensorView view = hetero::wire::decode_tensor(tensor, frame.fds, mappings, "input");
      // Touch the bytes the view claims: ASan catches a view past its data.
      volatile uint8_t sink = 0;
      for (size_t k = 0; k < view.bytes; k += 4096) sink = sink ^ view.data[k];
      if (view.bytes) sink = sink ^ view.data[view.bytes - 1];
    } catch (const hetero::Failure&) {
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // As in the daemon: protobuf's own complaints (invalid UTF-8) are not logged.
  static const bool quiet = (google::protobuf::SetLogHandler(nullptr), true);
  (void)quiet;
  hetero::wire::FrameDecoder decoder(kMaxFrame);
  std::span<const uint8_t> rest(data, size);
  size_t step = size > 0 ? (data[0] % 61) + 1 : 1;
  try {
    while (!rest.empty()) {
      const size_t n = std::min(step, rest.size());
      decoder.feed(rest.first(n));
      rest = rest.subspan(n);
      step = step * 7 % 4099 + 1;
      while (auto frame = decoder.next()) check_request(*frame);
    }
  } catch (const hetero::Failure&) {
  }
  return 0;
}
