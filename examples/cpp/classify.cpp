// Classifies an image (every pixel 0.5) with the demo model and prints the
// best class: through heterod (classify SOCKET, the daemon's model "demo")
// or in process (classify demo.onnx).
//
//   c++ -std=c++20 classify.cpp $(pkg-config --cflags --libs hetero) -o classify
#include <hetero/hetero.hpp>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  const std::string target = argc > 1 ? argv[1] : "/run/heterod/heterod.sock";
  const bool in_process = target.ends_with(".onnx");
  try {
    hetero::Core core = in_process ? hetero::Core() : hetero::Core::connect(target);
    hetero::CompiledModel model = in_process ? core.compile_file(target, "CPU", {}, {{"image", {1, 3, 32, 32}}})
                                             : core.open_model("demo");
    hetero::InferRequest request = model.create_infer_request();

    std::vector<float> image(3 * 32 * 32, 0.5f);
    request.set_input("image", hetero::Tensor::wrap(std::span(image), {1, 3, 32, 32}));  // not copied
    request.infer();

    const hetero::Tensor output = request.output("probabilities");
    const std::span<float> probabilities = output.data<float>();
    const auto best = std::max_element(probabilities.begin(), probabilities.end());
    std::printf("class %d: %.6f\n", static_cast<int>(best - probabilities.begin()), *best);
  } catch (const hetero::Error& e) {
    std::fprintf(stderr, "classify: %s\n", e.what());
    return 1;
  }
  return 0;
}
