/* The public C ABI exercised from plain C11, as a C program would use it:
 * the happy path on a tiny model (y = Relu(x·W + b)) and the error paths
 * (statuses, last-error text, out-params untouched on error).
 *
 *   test_capi FIXTURE_DIR BAD_DRIVER_MODULE
 *
 * FIXTURE_DIR holds make_test_model's files and is also where this test writes
 * its own (blobs, .npy). BAD_DRIVER_MODULE is a driver module that must fail
 * to load (one built against other core headers). Prints "N passed, N
 * failed"; exits non-zero on any failure. */
#define _POSIX_C_SOURCE 200809L

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hetero/hetero.h"
#include "check.h"

/* A value no successful call would write, to see that out-params stay put. */
#define SENTINEL ((void*)0x5e17)

static const char* fixture_dir;
static char path_buf[4096];

static const char* fixture(const char* name) {
  snprintf(path_buf, sizeof path_buf, "%s/%s", fixture_dir, name);
  return path_buf;
}

static int last_error_mentions(const char* text) { return strstr(hetero_last_error(), text) != NULL; }

static const float kInput[4] = {1, 2, 3, 4};
static const float kExpected[3] = {5.5f, 5.0f, 0.0f};

static int output_matches(hetero_tensor_t* y, const float* expected, size_t count) {
  void* data = NULL;
  size_t n = 0;
  if (hetero_tensor_get_data(y, &data) || hetero_tensor_get_element_count(y, &n) || n != count) return 0;
  for (size_t i = 0; i < count; ++i)
    if (((const float*)data)[i] != expected[i]) return 0;
  return 1;
}

/* One inference of a compiled tiny model on tiny_input.pb, output checked. */
static void check_runs_tiny(hetero_compiled_model_t* compiled) {
  hetero_infer_request_t* request = NULL;
  hetero_tensor_t *x = NULL, *y = NULL;
  CHECK_OK(hetero_tensor_read_file(&x, fixture("tiny_input.pb")));
  CHECK_OK(hetero_infer_request_create(&request, compiled));
  CHECK_OK(hetero_infer_request_set_input(request, 0, x));
  CHECK_OK(hetero_infer_request_infer(request));
  CHECK_OK(hetero_infer_request_get_output(request, &y, 0));
  if (y) CHECK(output_matches(y, kExpected, 3));
  hetero_tensor_release(y);
  hetero_tensor_release(x);
  hetero_infer_request_release(request);
}

static void test_versions_and_names(void) {
  CHECK(hetero_api_version() == HETERO_API_VERSION);
  CHECK(hetero_api_version() >> 16 == HETERO_API_VERSION_MAJOR);
  CHECK(strlen(hetero_library_version()) > 0);
  CHECK(strcmp(hetero_status_name(HETERO_OK), "HETERO_OK") == 0);
  CHECK(strcmp(hetero_status_name(HETERO_BLOB_CORRUPT), "HETERO_BLOB_CORRUPT") == 0);
  CHECK(strcmp(hetero_status_message(HETERO_INVALID_ARGUMENT), "invalid argument") == 0);
  CHECK(hetero_status_name((hetero_status)999) != NULL);
  CHECK(hetero_dtype_size(HETERO_DTYPE_FLOAT32) == 4);
  CHECK(hetero_dtype_size(HETERO_DTYPE_BFLOAT16) == 2);
  CHECK(hetero_dtype_size(HETERO_DTYPE_STRING) == 0);
  CHECK(hetero_dtype_size((hetero_dtype)77) == 0);
  CHECK(strcmp(hetero_dtype_name(HETERO_DTYPE_INT64), "int64") == 0);
  CHECK(strcmp(hetero_dtype_name((hetero_dtype)77), "undefined") == 0);
  hetero_free(NULL);
  CHECK_OK(hetero_core_release(NULL));
  CHECK_OK(hetero_tensor_release(NULL));
  CHECK_OK(hetero_infer_request_release(NULL));
}

static void test_argument_errors(void) {
  CHECK_STATUS(hetero_core_create(NULL, NULL, NULL, 0), HETERO_INVALID_ARGUMENT);
  CHECK(last_error_mentions("hetero_core_create") && last_error_mentions("out"));

  hetero_tensor_t* t = SENTINEL;
  const int64_t dims[2] = {2, -3};
  CHECK_STATUS(hetero_tensor_create(&t, HETERO_DTYPE_FLOAT32, dims, 2), HETERO_INVALID_ARGUMENT);
  CHECK(t == SENTINEL);
  CHECK(strlen(hetero_last_error()) > 0);
  CHECK_STATUS(hetero_tensor_create(&t, (hetero_dtype)77, dims, 1), HETERO_INVALID_ARGUMENT);
  CHECK_STATUS(hetero_tensor_create(&t, HETERO_DTYPE_STRING, dims, 1), HETERO_NOT_SUPPORTED);
  CHECK_STATUS(hetero_tensor_create(&t, HETERO_DTYPE_FLOAT32, NULL, 2), HETERO_INVALID_ARGUMENT);
  CHECK(t == SENTINEL);

  /* The message stays after successful calls (errno-like). */
  CHECK_STATUS(hetero_tensor_create(&t, HETERO_DTYPE_FLOAT32, NULL, 2), HETERO_INVALID_ARGUMENT);
  hetero_tensor_t* ok = NULL;
  CHECK_OK(hetero_tensor_create(&ok, HETERO_DTYPE_FLOAT32, NULL, 0));
  CHECK(last_error_mentions("dims"));
  hetero_tensor_release(ok);
}

static void test_core(const char* bad_module) {
  hetero_core_t* core = SENTINEL;
  const char* bad_key[] = {"no_dot_key"};
  const char* value[] = {"1"};
  CHECK_STATUS(hetero_core_create(&core, bad_key, value, 1), HETERO_INVALID_ARGUMENT);
  CHECK(core == SENTINEL);
  CHECK(last_error_mentions("no_dot_key"));
  const char* unknown_setting[] = {"CPU.no_such_setting"};
  CHECK(hetero_core_create(&core, unknown_setting, value, 1) != HETERO_OK);
  CHECK(core == SENTINEL);
  const char* dup_keys[] = {"driver_path", "driver_path"};
  const char* dup_values[] = {"/a", "/b"};
  CHECK_STATUS(hetero_core_create(&core, dup_keys, dup_values, 2), HETERO_INVALID_ARGUMENT);

  CHECK_OK(hetero_core_create(&core, NULL, NULL, 0));
  if (core == SENTINEL) return;
  size_t count = 0;
  CHECK_OK(hetero_core_get_device_count(core, &count));
  CHECK(count >= 1);
  const char* name = NULL;
  const char* full = NULL;
  CHECK_OK(hetero_core_get_device_name(core, &name, 0));
  CHECK(name && strcmp(name, "CPU") == 0);
  CHECK_OK(hetero_core_get_device_full_name(core, &full, 0));
  CHECK(full && strlen(full) > 0);
  const char* untouched = SENTINEL;
  CHECK_STATUS(hetero_core_get_device_name(core, &untouched, count), HETERO_INVALID_ARGUMENT);
  CHECK(untouched == SENTINEL);

  char* metric = SENTINEL;
  CHECK_OK(hetero_core_get_metric(core, &metric, "CPU", "FULL_DEVICE_NAME"));
  CHECK(metric != SENTINEL && full && strcmp(metric, full) == 0);
  if (metric != SENTINEL) hetero_free(metric);
  metric = SENTINEL;
  CHECK_STATUS(hetero_core_get_metric(core, &metric, "CPU", "NO_SUCH_METRIC"), HETERO_NOT_FOUND);
  CHECK(metric == SENTINEL);
  CHECK(last_error_mentions("NO_SUCH_METRIC"));
  CHECK_STATUS(hetero_core_get_metric(core, &metric, "NOPE", "FULL_DEVICE_NAME"), HETERO_NOT_FOUND);
  CHECK(metric == SENTINEL);

  size_t drivers = 0;
  CHECK_OK(hetero_core_get_driver_count(core, &drivers));
  CHECK(drivers >= 1);
  const char *dname = NULL, *dversion = NULL, *dpath = NULL;
  CHECK_OK(hetero_core_get_driver(core, &dname, &dversion, &dpath, 0));
  CHECK(dname && strcmp(dname, "CPU") == 0 && dversion && strlen(dversion) > 0 && dpath && strstr(dpath, ".so"));
  CHECK_OK(hetero_core_release(core));

  /* A module that cannot load is listed with its reason; the core still works.
   * This one was built against a changed core/tensor.h: its reason names the
   * stamps, its own and this core's. */
  const char* key[] = {"driver_path"};
  const char* dir[] = {bad_module};
  core = NULL;
  CHECK_OK(hetero_core_create(&core, key, dir, 1));
  size_t failures = 0;
  CHECK_OK(hetero_core_get_driver_failure_count(core, &failures));
  CHECK(failures >= 1);
  const char *fpath = NULL, *reason = NULL;
  CHECK_OK(hetero_core_get_driver_failure(core, &fpath, &reason, 0));
  CHECK(fpath && strcmp(fpath, bad_module) == 0);
  CHECK(reason && strstr(reason, "its driver ABI stamp is ") && strstr(reason, ", this core's is "));
  CHECK_STATUS(hetero_core_get_driver_failure(core, &fpath, &reason, failures), HETERO_INVALID_ARGUMENT);
  hetero_core_release(core);
}

static void test_tensors(void) {
  const int64_t dims[2] = {2, 3};
  hetero_tensor_t* t = NULL;
  CHECK_OK(hetero_tensor_create(&t, HETERO_DTYPE_FLOAT32, dims, 2));
  size_t rank = 0, bytes = 0, count = 0;
  const int64_t* shape = NULL;
  hetero_dtype dtype = HETERO_DTYPE_UNDEFINED;
  void* data = NULL;
  CHECK_OK(hetero_tensor_get_rank(t, &rank));
  CHECK(rank == 2);
  CHECK_OK(hetero_tensor_get_shape(t, &shape, &rank));
  CHECK(shape && shape[0] == 2 && shape[1] == 3);
  CHECK_OK(hetero_tensor_get_dtype(t, &dtype));
  CHECK(dtype == HETERO_DTYPE_FLOAT32);
  CHECK_OK(hetero_tensor_get_byte_size(t, &bytes));
  CHECK(bytes == 24);
  CHECK_OK(hetero_tensor_get_element_count(t, &count));
  CHECK(count == 6);
  CHECK_OK(hetero_tensor_get_data(t, &data));
  CHECK(data && ((float*)data)[5] == 0.0f);
  ((float*)data)[5] = 7.5f;

  /* .npy round trip through a file. */
  const char* npy = fixture("capi_roundtrip.npy");
  CHECK_OK(hetero_tensor_write_npy(t, npy));
  hetero_tensor_t* back = NULL;
  CHECK_OK(hetero_tensor_read_file(&back, npy));
  if (back) {
    void* bdata = NULL;
    CHECK_OK(hetero_tensor_get_shape(back, &shape, &rank));
    CHECK(rank == 2 && shape[0] == 2 && shape[1] == 3);
    CHECK_OK(hetero_tensor_get_data(back, &bdata));
    CHECK(bdata && ((float*)bdata)[5] == 7.5f);
  }
  hetero_tensor_release(back);
  hetero_tensor_release(t);

  /* Wrapping caller memory: no copy, size and alignment checked. */
  float buffer[6] = {0, 1, 2, 3, 4, 5};
  hetero_tensor_t* w = SENTINEL;
  CHECK_STATUS(hetero_tensor_wrap(&w, HETERO_DTYPE_FLOAT32, dims, 2, buffer, sizeof buffer - 1),
               HETERO_INVALID_ARGUMENT);
  CHECK(w == SENTINEL);
  CHECK_STATUS(hetero_tensor_wrap(&w, HETERO_DTYPE_FLOAT32, dims, 1, (char*)buffer + 1, 8), HETERO_INVALID_ARGUMENT);
  CHECK(last_error_mentions("aligned"));
  CHECK_OK(hetero_tensor_wrap(&w, HETERO_DTYPE_FLOAT32, dims, 2, buffer, sizeof buffer));
  CHECK_OK(hetero_tensor_get_data(w, &data));
  CHECK(data == (void*)buffer);
  hetero_tensor_release(w);

  /* The TensorProto fixture. */
  hetero_tensor_t* pb = NULL;
  CHECK_OK(hetero_tensor_read_file(&pb, fixture("tiny_input.pb")));
  if (pb) CHECK(output_matches(pb, kInput, 4));
  hetero_tensor_release(pb);

  hetero_tensor_t* missing = SENTINEL;
  CHECK_STATUS(hetero_tensor_read_file(&missing, fixture("no_such_file.npy")), HETERO_NOT_FOUND);
  CHECK(missing == SENTINEL && last_error_mentions("no_such_file.npy"));
  /* A model is neither .npy nor a TensorProto with a valid type. */
  CHECK(hetero_tensor_read_file(&missing, fixture("tiny.onnx")) != HETERO_OK);
  CHECK(missing == SENTINEL && last_error_mentions("tiny.onnx"));
  /* Paths that name no file are refused at once, unread: a FIFO (reading it
   * would wait for a writer), a device (/dev/zero never ends), a directory. */
  const char* fifo = fixture("capi_fifo.npy");
  unlink(fifo);
  CHECK(mkfifo(fifo, 0600) == 0);
  CHECK_STATUS(hetero_tensor_read_file(&missing, fifo), HETERO_IO_ERROR);
  CHECK(missing == SENTINEL && last_error_mentions("capi_fifo.npy is a FIFO, not a regular file"));
  hetero_model_format format = HETERO_MODEL_FORMAT_ONNX;
  CHECK_STATUS(hetero_model_file_format(&format, fixture("capi_fifo.npy")), HETERO_IO_ERROR);
  CHECK(last_error_mentions("is a FIFO, not a regular file"));
  unlink(fixture("capi_fifo.npy"));
  CHECK_STATUS(hetero_tensor_read_file(&missing, "/dev/zero"), HETERO_IO_ERROR);
  CHECK(missing == SENTINEL && last_error_mentions("/dev/zero is a character device, not a regular file"));
  CHECK_STATUS(hetero_tensor_read_file(&missing, fixture_dir), HETERO_IO_ERROR);
  CHECK(missing == SENTINEL && last_error_mentions("is a directory, not a regular file"));
}

static hetero_model_t* read_model(hetero_core_t* core, const char* name) {
  hetero_model_t* model = NULL;
  CHECK_OK(hetero_model_read_file(&model, core, fixture(name), NULL, NULL, NULL, 0));
  return model;
}

static void test_model(hetero_core_t* core) {
  hetero_model_t* bad = SENTINEL;
  CHECK(hetero_model_read_file(&bad, core, fixture("missing.onnx"), NULL, NULL, NULL, 0) != HETERO_OK);
  CHECK(bad == SENTINEL && last_error_mentions("missing.onnx"));
  CHECK_STATUS(hetero_model_read_memory(&bad, core, "garbage!", 8, NULL, NULL, NULL, 0), HETERO_INVALID_MODEL);
  CHECK(bad == SENTINEL);

  hetero_model_t* model = read_model(core, "tiny.onnx");
  if (!model) return;
  size_t count = 0;
  const char* name = NULL;
  hetero_dtype dtype = HETERO_DTYPE_UNDEFINED;
  const int64_t* dims = NULL;
  int64_t rank = -1;
  CHECK_OK(hetero_model_get_input_count(model, &count));
  CHECK(count == 1);
  CHECK_OK(hetero_model_get_input_name(model, &name, 0));
  CHECK(name && strcmp(name, "x") == 0);
  CHECK_OK(hetero_model_get_input_dtype(model, &dtype, 0));
  CHECK(dtype == HETERO_DTYPE_FLOAT32);
  CHECK_OK(hetero_model_get_input_shape(model, &dims, &rank, 0));
  CHECK(rank == 2 && dims && dims[0] == 1 && dims[1] == 4);
  CHECK_OK(hetero_model_get_output_count(model, &count));
  CHECK(count == 1);
  CHECK_OK(hetero_model_get_output_name(model, &name, 0));
  CHECK(name && strcmp(name, "y") == 0);
  CHECK_OK(hetero_model_get_output_shape(model, &dims, &rank, 0));
  CHECK(rank == 2 && dims && dims[0] == 1 && dims[1] == 3);
  name = SENTINEL;
  CHECK_STATUS(hetero_model_get_input_name(model, &name, 1), HETERO_INVALID_ARGUMENT);
  CHECK(name == SENTINEL);

  hetero_query_result_t* query = NULL;
  CHECK_OK(hetero_query(&query, core, model, "CPU", NULL, NULL, 0));
  CHECK_OK(hetero_query_result_get_node_count(query, &count));
  CHECK(count == 3);
  const char *node = NULL, *op = NULL, *reason = NULL;
  int supported = -1;
  CHECK_OK(hetero_query_result_get_node(query, &node, &op, &supported, &reason, 2));
  CHECK(op && strcmp(op, "Relu") == 0 && node && reason);
  CHECK(supported == 1 && reason && reason[0] == '\0');
  CHECK_STATUS(hetero_query_result_get_node(query, &node, &op, &supported, &reason, 3), HETERO_INVALID_ARGUMENT);
  hetero_query_result_release(query);
  hetero_query_result_t* no_query = SENTINEL;
  CHECK_STATUS(hetero_query(&no_query, core, model, "NOPE", NULL, NULL, 0), HETERO_NOT_FOUND);
  CHECK(no_query == SENTINEL);
  hetero_model_release(model);

  /* A dynamic batch reads as -1, and is fixed by an input shape. */
  model = read_model(core, "tiny_dynamic.onnx");
  CHECK_OK(hetero_model_get_input_shape(model, &dims, &rank, 0));
  CHECK(rank == 2 && dims && dims[0] == -1 && dims[1] == 4);
  hetero_model_release(model);
  const char* names[] = {"x"};
  const int64_t shape[] = {3, 4};
  const int64_t* shapes[] = {shape};
  const size_t ranks[] = {2};
  model = NULL;
  CHECK_OK(hetero_model_read_file(&model, core, fixture("tiny_dynamic.onnx"), names, shapes, ranks, 1));
  CHECK_OK(hetero_model_get_output_shape(model, &dims, &rank, 0));
  CHECK(rank == 2 && dims && dims[0] == 3 && dims[1] == 3);
  hetero_model_release(model);
}

/* Results of the async callbacks, written on a worker thread. */
typedef struct async_probe {
  atomic_int calls;
  atomic_int status;
  atomic_int nested_wait;  /* what hetero_infer_request_wait said inside the callback */
  hetero_infer_request_t* request;
} async_probe;

static void on_done(void* user_data, hetero_status status) {
  async_probe* p = user_data;
  atomic_store(&p->status, (int)status);
  atomic_store(&p->nested_wait, (int)hetero_infer_request_wait(p->request));
  atomic_fetch_add(&p->calls, 1);
}

static void test_infer(hetero_core_t* core, hetero_compiled_model_t* compiled) {
  hetero_infer_request_t* request = NULL;
  CHECK_OK(hetero_infer_request_create(&request, compiled));
  if (!request) return;

  const int64_t dims[2] = {1, 4};
  hetero_tensor_t* x = NULL;
  float* data = NULL;
  CHECK_OK(hetero_tensor_create(&x, HETERO_DTYPE_FLOAT32, dims, 2));
  CHECK_OK(hetero_tensor_get_data(x, (void**)&data));
  memcpy(data, kInput, sizeof kInput);

  /* Wrong dtype, wrong shape, unknown name, bad index. */
  hetero_tensor_t* wrong = NULL;
  CHECK_OK(hetero_tensor_create(&wrong, HETERO_DTYPE_INT64, dims, 2));
  CHECK_STATUS(hetero_infer_request_set_input(request, 0, wrong), HETERO_INVALID_ARGUMENT);
  CHECK(last_error_mentions("float32"));
  hetero_tensor_release(wrong);
  const int64_t bad_dims[2] = {1, 5};
  CHECK_OK(hetero_tensor_create(&wrong, HETERO_DTYPE_FLOAT32, bad_dims, 2));
  CHECK_STATUS(hetero_infer_request_set_input(request, 0, wrong), HETERO_INVALID_ARGUMENT);
  hetero_tensor_release(wrong);
  CHECK_STATUS(hetero_infer_request_set_input_by_name(request, "nope", x), HETERO_NOT_FOUND);
  CHECK(last_error_mentions("'x'"));
  CHECK_STATUS(hetero_infer_request_set_input(request, 1, x), HETERO_INVALID_ARGUMENT);

  /* Sync: bound by name, the handle released at once (the request keeps it). */
  CHECK_OK(hetero_infer_request_set_input_by_name(request, "x", x));
  hetero_tensor_release(x);
  CHECK_OK(hetero_infer_request_infer(request));
  hetero_tensor_t* y = NULL;
  CHECK_OK(hetero_infer_request_get_output(request, &y, 0));
  if (y) CHECK(output_matches(y, kExpected, 3));
  hetero_tensor_release(y);
  y = SENTINEL;
  CHECK_STATUS(hetero_infer_request_get_output(request, &y, 1), HETERO_INVALID_ARGUMENT);
  CHECK(y == SENTINEL);
  CHECK_STATUS(hetero_infer_request_get_output_by_name(request, &y, "nope"), HETERO_NOT_FOUND);

  /* Async, with wrapped caller memory: the callback runs once, reports OK, and
   * is refused a wait on its own request instead of deadlocking. */
  float input[4] = {1, 2, 3, 4};
  hetero_tensor_t* wrapped = NULL;
  CHECK_OK(hetero_tensor_wrap(&wrapped, HETERO_DTYPE_FLOAT32, dims, 2, input, sizeof input));
  CHECK_OK(hetero_infer_request_set_input(request, 0, wrapped));
  async_probe probe = {.request = request};
  atomic_init(&probe.calls, 0);
  atomic_init(&probe.status, -1);
  atomic_init(&probe.nested_wait, -1);
  CHECK_OK(hetero_infer_request_start_async(request, on_done, &probe));
  CHECK_OK(hetero_infer_request_wait(request));
  CHECK(atomic_load(&probe.calls) == 1);
  CHECK(atomic_load(&probe.status) == HETERO_OK);
  CHECK(atomic_load(&probe.nested_wait) == HETERO_BUSY);
  y = NULL;
  CHECK_OK(hetero_infer_request_get_output_by_name(request, &y, "y"));
  if (y) CHECK(output_matches(y, kExpected, 3));

  /* Restarting right away (no wait) works, and so does a NULL callback. */
  CHECK_OK(hetero_infer_request_start_async(request, NULL, NULL));
  CHECK_OK(hetero_infer_request_wait(request));
  CHECK_OK(hetero_infer_request_wait(request));  /* nothing running: the last status */

  /* Releasing the request (and the core) leaves an output handle valid. */
  CHECK_OK(hetero_infer_request_release(request));
  hetero_tensor_release(wrapped);
  if (y) CHECK(output_matches(y, kExpected, 3));
  hetero_tensor_release(y);
  (void)core;
}

static void test_blobs(hetero_core_t* core, hetero_compiled_model_t* compiled) {
  void* blob = NULL;
  size_t size = 0;
  CHECK_OK(hetero_compiled_model_export(compiled, &blob, &size));
  CHECK(blob && size > 8 && memcmp(blob, "HETEROBL", 8) == 0);
  if (!blob) return;

  /* What it says of itself, for programs (tests/capi/test_cli_json.py parses it). */
  char* json = SENTINEL;
  CHECK_OK(hetero_blob_describe_json(&json, blob, size));
  CHECK(json != SENTINEL && json[0] == '{' && strstr(json, "\"device\": \"CPU\"") &&
        strstr(json, "\"sections\": [{\"name\": \"driver\""));
  if (json != SENTINEL) hetero_free(json);
  json = SENTINEL;
  CHECK_STATUS(hetero_blob_describe_json(&json, "nonsense", 8), HETERO_BLOB_CORRUPT);
  CHECK(json == SENTINEL && last_error_mentions("magic"));

  hetero_compiled_model_t* imported = NULL;
  CHECK_OK(hetero_compiled_model_import(&imported, core, blob, size, NULL, NULL, 0));
  const char* device = NULL;
  if (imported) {
    CHECK_OK(hetero_compiled_model_get_device(imported, &device));
    CHECK(device && strcmp(device, "CPU") == 0);
    check_runs_tiny(imported);
    hetero_compiled_model_release(imported);
  }

  /* A flipped payload byte fails the checksum; a cut blob is truncated. */
  unsigned char* corrupt = malloc(size);
  memcpy(corrupt, blob, size);
  corrupt[size - 1] ^= 0x5a;
  imported = SENTINEL;
  CHECK_STATUS(hetero_compiled_model_import(&imported, core, corrupt, size, NULL, NULL, 0), HETERO_BLOB_CORRUPT);
  CHECK(imported == SENTINEL && strlen(hetero_last_error()) > 0);
  CHECK_STATUS(hetero_compiled_model_import(&imported, core, blob, size / 2, NULL, NULL, 0), HETERO_BLOB_CORRUPT);
  CHECK_STATUS(hetero_compiled_model_import(&imported, core, "nonsense", 8, NULL, NULL, 0), HETERO_BLOB_CORRUPT);
  CHECK(imported == SENTINEL);
  free(corrupt);
  hetero_free(blob);

  /* Through a file. */
  char path[4096];
  snprintf(path, sizeof path, "%s", fixture("capi_tiny.blob"));
  CHECK_OK(hetero_compiled_model_export_file(compiled, path));
  imported = NULL;
  CHECK_OK(hetero_compiled_model_import_file(&imported, core, path, NULL, NULL, 0));
  size_t count = 0;
  if (imported) {
    CHECK_OK(hetero_compiled_model_get_output_count(imported, &count));
    CHECK(count == 1);
  }
  hetero_compiled_model_release(imported);
  imported = SENTINEL;
  CHECK_STATUS(hetero_compiled_model_import_file(&imported, core, fixture("tiny.onnx"), NULL, NULL, 0),
               HETERO_BLOB_CORRUPT);
  CHECK(imported == SENTINEL && last_error_mentions("tiny.onnx"));
}

/* An ONNX file or a blob, told apart by the library (test_blobs wrote the
 * blob). */
static void test_open_either(hetero_core_t* core) {
  char blob_path[4096], onnx_path[4096];
  snprintf(blob_path, sizeof blob_path, "%s", fixture("capi_tiny.blob"));
  snprintf(onnx_path, sizeof onnx_path, "%s", fixture("tiny.onnx"));
  hetero_model_format format = (hetero_model_format)-1;
  CHECK_OK(hetero_model_file_format(&format, blob_path));
  CHECK(format == HETERO_MODEL_FORMAT_BLOB);
  CHECK_OK(hetero_model_file_format(&format, onnx_path));
  CHECK(format == HETERO_MODEL_FORMAT_ONNX);
  CHECK_STATUS(hetero_model_file_format(&format, fixture("missing.onnx")), HETERO_NOT_FOUND);
  CHECK(format == HETERO_MODEL_FORMAT_ONNX && last_error_mentions("missing.onnx"));

  /* Both open with one call and run alike; a blob may leave the device to itself. */
  const char* const paths[] = {blob_path, onnx_path, blob_path};
  const char* const devices[] = {NULL, "CPU", "CPU"};
  for (size_t k = 0; k < 3; ++k) {
    hetero_compiled_model_t* compiled = NULL;
    CHECK_OK(hetero_compiled_model_open_file(&compiled, core, paths[k], NULL, NULL, NULL, 0, devices[k], NULL, NULL, 0));
    if (compiled) check_runs_tiny(compiled);
    hetero_compiled_model_release(compiled);
  }

  /* A blob that is not what was asked for, and an ONNX model without a device. */
  hetero_compiled_model_t* compiled = SENTINEL;
  CHECK_STATUS(hetero_compiled_model_open_file(&compiled, core, blob_path, NULL, NULL, NULL, 0, "CPU.1", NULL, NULL, 0),
               HETERO_BLOB_MISMATCH);
  CHECK(compiled == SENTINEL && last_error_mentions("compiled for CPU, not CPU.1") &&
        last_error_mentions("capi_tiny.blob"));
  const char* shape_names[] = {"x"};
  const int64_t batch_of_two[] = {2, 4};
  const int64_t* shape_dims[] = {batch_of_two};
  const size_t shape_ranks[] = {2};
  CHECK_STATUS(hetero_compiled_model_open_file(&compiled, core, blob_path, shape_names, shape_dims, shape_ranks, 1,
                                               NULL, NULL, NULL, 0),
               HETERO_BLOB_MISMATCH);
  CHECK(compiled == SENTINEL && last_error_mentions("input 'x' of the blob is 1x4, not 2x4"));
  CHECK_STATUS(hetero_compiled_model_open_file(&compiled, core, onnx_path, NULL, NULL, NULL, 0, NULL, NULL, NULL, 0),
               HETERO_INVALID_ARGUMENT);
  CHECK(compiled == SENTINEL && last_error_mentions("device is NULL"));
  CHECK_STATUS(hetero_compiled_model_open_file(&compiled, core, fixture("missing.onnx"), NULL, NULL, NULL, 0, "CPU",
                                               NULL, NULL, 0),
               HETERO_NOT_FOUND);
  CHECK(compiled == SENTINEL);

  /* From memory: the blob's bytes, then the ONNX model's. */
  void* blob = NULL;
  size_t size = 0;
  hetero_compiled_model_t* from_file = NULL;
  CHECK_OK(hetero_compiled_model_open_file(&from_file, core, onnx_path, NULL, NULL, NULL, 0, "CPU", NULL, NULL, 0));
  if (from_file) CHECK_OK(hetero_compiled_model_export(from_file, &blob, &size));
  hetero_compiled_model_release(from_file);
  if (!blob) return;
  compiled = NULL;
  CHECK_OK(hetero_compiled_model_open_memory(&compiled, core, blob, size, NULL, NULL, NULL, 0, NULL, NULL, NULL, 0));
  const char* device = NULL;
  if (compiled) CHECK_OK(hetero_compiled_model_get_device(compiled, &device));
  CHECK(device && strcmp(device, "CPU") == 0);
  hetero_compiled_model_release(compiled);
  hetero_free(blob);
  compiled = SENTINEL;
  CHECK_STATUS(hetero_compiled_model_open_memory(&compiled, core, "not a model", 11, NULL, NULL, NULL, 0, "CPU", NULL,
                                                 NULL, 0),
               HETERO_INVALID_MODEL);
  CHECK(compiled == SENTINEL);
}

static void test_compile(hetero_core_t* core) {
  hetero_model_t* model = read_model(core, "tiny.onnx");
  if (!model) return;
  hetero_compiled_model_t* compiled = SENTINEL;
  CHECK_STATUS(hetero_compile(&compiled, core, model, "NOPE", NULL, NULL, 0), HETERO_NOT_FOUND);
  CHECK(compiled == SENTINEL && last_error_mentions("NOPE"));
  CHECK_STATUS(hetero_compile(&compiled, core, model, "HETERO:", NULL, NULL, 0), HETERO_INVALID_ARGUMENT);
  const char* key[] = {"no_such_option"};
  const char* value[] = {"1"};
  CHECK_STATUS(hetero_compile(&compiled, core, model, "CPU", key, value, 1), HETERO_INVALID_ARGUMENT);
  CHECK(compiled == SENTINEL && last_error_mentions("no_such_option"));

  const char* threads_key[] = {"num_threads"};
  const char* threads_value[] = {"2"};
  compiled = NULL;
  CHECK_OK(hetero_compile(&compiled, core, model, "CPU", threads_key, threads_value, 1));
  hetero_model_release(model); /* the compiled model does not need it */
  if (!compiled) return;

  const char* name = NULL;
  const int64_t* dims = NULL;
  int64_t rank = -1;
  hetero_dtype dtype = HETERO_DTYPE_UNDEFINED;
  CHECK_OK(hetero_compiled_model_get_input_name(compiled, &name, 0));
  CHECK(name && strcmp(name, "x") == 0);
  CHECK_OK(hetero_compiled_model_get_input_shape(compiled, &dims, &rank, 0));
  CHECK(rank == 2 && dims && dims[1] == 4);
  CHECK_OK(hetero_compiled_model_get_output_dtype(compiled, &dtype, 0));
  CHECK(dtype == HETERO_DTYPE_FLOAT32);

  test_infer(core, compiled);
  test_blobs(core, compiled);
  test_open_either(core);
  hetero_compiled_model_release(compiled);
}

/* HETERO plans through the C ABI: the CPU listed as two devices, CPU.1 kept
 * to MatMul. (Compiling, running and exporting HETERO models, and releasing
 * handles in any order, are the driver contract's: tests/driver_contract.) */
static void test_hetero(void) {
  const char* core_keys[] = {"CPU.device_count"};
  const char* core_values[] = {"2"};
  hetero_core_t* core = NULL;
  CHECK_OK(hetero_core_create(&core, core_keys, core_values, 1));
  if (!core) return;
  hetero_model_t* model = read_model(core, "tiny.onnx");
  const char* keys[] = {"CPU.1:ops"};
  const char* values[] = {"MatMul"};
  const char* device = "HETERO:CPU.1,CPU";

  char* json = NULL;
  CHECK_OK(hetero_partition(core, &json, model, device, HETERO_PLAN_JSON, keys, values, 1));
  CHECK(json && strstr(json, "\"subgraphs\": [{\"device\": \"CPU.1\"") && strstr(json, "\"transfers\": 1"));
  hetero_free(json);
  char* untouched = (char*)SENTINEL;
  CHECK_STATUS(hetero_partition(core, &untouched, model, device, (hetero_plan_format)9, keys, values, 1),
               HETERO_INVALID_ARGUMENT);
  CHECK(untouched == (char*)SENTINEL && last_error_mentions("plan format"));
  const char* bad_keys[] = {"ops"};
  CHECK_STATUS(hetero_partition(core, &untouched, model, device, HETERO_PLAN_TEXT, bad_keys, values, 1),
               HETERO_INVALID_ARGUMENT);
  CHECK(last_error_mentions("'ops'"));

  hetero_model_release(model);
  hetero_core_release(core);
}

/* Runs stream_lstm.onnx on `steps` steps of x from `first`, with the state
 * tensors bound as they are; returns the request (outputs y, hn, cn). */
static hetero_infer_request_t* stream_call(hetero_compiled_model_t* compiled, hetero_infer_request_t* request,
                                           const float* x, int64_t steps, hetero_tensor_t* h, hetero_tensor_t* c) {
  hetero_tensor_t* xt = NULL;
  const int64_t dims[3] = {steps, 1, 2};
  CHECK_OK(hetero_tensor_wrap(&xt, HETERO_DTYPE_FLOAT32, dims, 3, (void*)x, (size_t)steps * 2 * sizeof(float)));
  if (!request) CHECK_OK(hetero_infer_request_create(&request, compiled));
  CHECK_OK(hetero_infer_request_set_input_by_name(request, "x", xt));
  CHECK_OK(hetero_infer_request_set_input_by_name(request, "h", h));
  CHECK_OK(hetero_infer_request_set_input_by_name(request, "c", c));
  CHECK_OK(hetero_infer_request_infer(request));
  hetero_tensor_release(xt);
  return request;
}

static int close_to(hetero_tensor_t* t, const float* want, size_t count) {
  void* data = NULL;
  size_t n = 0;
  if (hetero_tensor_get_data(t, &data) || hetero_tensor_get_element_count(t, &n) || n != count) return 0;
  for (size_t i = 0; i < count; ++i) {
    const float d = ((const float*)data)[i] - want[i];
    if (d > 1e-5f || d < -1e-5f) return 0;
  }
  return 1;
}

/* A streaming model as an application runs one: each call's state outputs
 * (hn, cn) are bound, as they are, as the next call's state inputs (h, c).
 * Three calls of two steps give what one call of six steps gives. */
static void test_streaming(hetero_core_t* core) {
  hetero_compiled_model_t* compiled = NULL;
  CHECK_OK(hetero_compile_file(&compiled, core, fixture("stream_lstm.onnx"), NULL, NULL, NULL, 0, "CPU", NULL, NULL,
                               0));
  if (!compiled) return;
  float x[12];
  for (int i = 0; i < 12; ++i) x[i] = (float)(i % 5) * 0.4f - 0.8f;
  const int64_t state_dims[3] = {1, 1, 3};
  hetero_tensor_t *h0 = NULL, *c0 = NULL;
  CHECK_OK(hetero_tensor_create(&h0, HETERO_DTYPE_FLOAT32, state_dims, 3));
  CHECK_OK(hetero_tensor_create(&c0, HETERO_DTYPE_FLOAT32, state_dims, 3));
  void* zero = NULL;
  if (h0 && !hetero_tensor_get_data(h0, &zero)) memset(zero, 0, 3 * sizeof(float));
  if (c0 && !hetero_tensor_get_data(c0, &zero)) memset(zero, 0, 3 * sizeof(float));

  /* The whole sequence at once: y for 6 steps, the final state. */
  float y_whole[18], h_whole[3], c_whole[3];
  hetero_infer_request_t* whole = stream_call(compiled, NULL, x, 6, h0, c0);
  hetero_tensor_t *y = NULL, *hn = NULL, *cn = NULL;
  void* data = NULL;
  CHECK_OK(hetero_infer_request_get_output_by_name(whole, &y, "y"));
  CHECK_OK(hetero_infer_request_get_output_by_name(whole, &hn, "hn"));
  CHECK_OK(hetero_infer_request_get_output_by_name(whole, &cn, "cn"));
  if (!y || !hn || !cn) return;
  CHECK_OK(hetero_tensor_get_data(y, &data));
  memcpy(y_whole, data, sizeof y_whole);
  CHECK_OK(hetero_tensor_get_data(hn, &data));
  memcpy(h_whole, data, sizeof h_whole);
  CHECK_OK(hetero_tensor_get_data(cn, &data));
  memcpy(c_whole, data, sizeof c_whole);
  hetero_tensor_release(y);
  hetero_tensor_release(hn);
  hetero_tensor_release(cn);
  hetero_infer_request_release(whole);

  /* Chunk by chunk, each state output fed back without a copy. */
  hetero_infer_request_t* request = NULL;
  hetero_tensor_t* h = h0;
  hetero_tensor_t* c = c0;
  for (int chunk = 0; chunk < 3; ++chunk) {
    request = stream_call(compiled, request, x + chunk * 4, 2, h, c);
    if (h != h0) hetero_tensor_release(h);
    if (c != c0) hetero_tensor_release(c);
    y = h = c = NULL;
    CHECK_OK(hetero_infer_request_get_output_by_name(request, &y, "y"));
    CHECK_OK(hetero_infer_request_get_output_by_name(request, &h, "hn"));
    CHECK_OK(hetero_infer_request_get_output_by_name(request, &c, "cn"));
    CHECK(y && close_to(y, y_whole + chunk * 6, 6));
    hetero_tensor_release(y);
    if (!h || !c) break;
  }
  CHECK(h && close_to(h, h_whole, 3));
  CHECK(c && close_to(c, c_whole, 3));
  if (h != h0) hetero_tensor_release(h);
  if (c != c0) hetero_tensor_release(c);
  hetero_tensor_release(h0);
  hetero_tensor_release(c0);
  hetero_infer_request_release(request);
  hetero_compiled_model_release(compiled);
}

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: test_capi FIXTURE_DIR BAD_DRIVER_MODULE\n");
    return 2;
  }
  fixture_dir = argv[1];
  test_versions_and_names();
  test_argument_errors();
  test_core(argv[2]);
  test_tensors();
  hetero_core_t* core = NULL;
  CHECK_OK(hetero_core_create(&core, NULL, NULL, 0));
  if (core) {
    test_model(core);
    test_compile(core);
    test_streaming(core);
    hetero_core_release(core);
  }
  test_hetero();
  printf("%d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
