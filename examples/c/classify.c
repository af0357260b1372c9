/* Classifies an image (every pixel 0.5) with the demo model and prints the
 * best class: through heterod (classify SOCKET, the daemon's model "demo")
 * or in process (classify demo.onnx).
 *
 *   cc -std=c11 classify.c $(pkg-config --cflags --libs hetero) -o classify
 */
#include <hetero/hetero.h>

#include <stdio.h>
#include <string.h>

#define CHECK(call)                                                \
  do {                                                             \
    if ((call) != HETERO_OK) {                                     \
      fprintf(stderr, "classify: %s\n", hetero_last_error());      \
      goto done;                                                   \
    }                                                              \
  } while (0)

int main(int argc, char** argv) {
  const char* target = argc > 1 ? argv[1] : "/run/heterod/heterod.sock";
  const size_t len = strlen(target);
  const int in_process = len > 5 && strcmp(target + len - 5, ".onnx") == 0;
  static const int64_t dims[4] = {1, 3, 32, 32};
  static float image[3 * 32 * 32];
  hetero_core_t* core = NULL;
  hetero_compiled_model_t* model = NULL;
  hetero_infer_request_t* request = NULL;
  hetero_tensor_t* input = NULL;
  hetero_tensor_t* output = NULL;
  int status = 1;

  for (size_t i = 0; i < sizeof image / sizeof image[0]; ++i) image[i] = 0.5f;
  if (in_process) {
    const char* names[1] = {"image"};
    const int64_t* shapes[1] = {dims};
    const size_t ranks[1] = {4};
    CHECK(hetero_core_create(&core, NULL, NULL, 0));
    CHECK(hetero_compile_file(&model, core, target, names, shapes, ranks, 1, "CPU", NULL, NULL, 0));
  } else {
    CHECK(hetero_core_connect(&core, target));
    CHECK(hetero_compiled_model_open(&model, core, "demo"));
  }
  CHECK(hetero_infer_request_create(&request, model));
  CHECK(hetero_tensor_wrap(&input, HETERO_DTYPE_FLOAT32, dims, 4, image, sizeof image)); /* not copied */
  CHECK(hetero_infer_request_set_input_by_name(request, "image", input));
  CHECK(hetero_infer_request_infer(request));
  CHECK(hetero_infer_request_get_output_by_name(request, &output, "probabilities"));

  void* data = NULL;
  size_t count = 0;
  CHECK(hetero_tensor_get_data(output, &data));
  CHECK(hetero_tensor_get_element_count(output, &count));
  const float* probabilities = data;
  size_t best = 0;
  for (size_t i = 1; i < count; ++i)
    if (probabilities[i] > probabilities[best]) best = i;
  printf("class %zu: %.6f\n", best, probabilities[best]);
  status = 0;

done:
  /* Any order: each handle keeps what it needs alive. */
  hetero_tensor_release(output);
  hetero_tensor_release(input);
  hetero_infer_request_release(request);
  hetero_compiled_model_release(model);
  hetero_core_release(core);
  return status;
}
