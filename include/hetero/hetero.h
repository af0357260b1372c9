/* heterod — the public C ABI (libhetero.so).
 *
 * Conventions (oneDNN / ONNX Runtime style):
 *  - Objects are opaque handles. Every function that can fail returns a
 *    hetero_status; HETERO_OK is 0. A few functions that cannot fail (version,
 *    status and dtype names, hetero_last_error, hetero_free) return their value.
 *  - A function that creates a handle takes its `out` parameter first; every
 *    other function takes the handle it acts on first, then its out-params,
 *    then its inputs. Out-params are written only on success: on error they
 *    keep whatever the caller put there.
 *  - On error, hetero_last_error() returns a message naming what was wrong.
 *    It is per thread and stays until the next failing call on that thread
 *    (successful calls leave it alone, like errno), so cleanup after a failure
 *    does not erase the reason.
 *  - No C++ exception ever leaves the library.
 *  - Ownership is written on each function: "caller releases with X" for new
 *    handles and heap memory, "borrowed, valid until ..." for pointers into a
 *    handle. Releasing NULL is a no-op returning HETERO_OK. Handles keep what
 *    they need alive internally (a compiled model keeps its driver loaded), so
 *    they may be released in any order.
 *  - Threads: cores, models and compiled models may be used from several
 *    threads at once. An infer request and a tensor are used from one thread
 *    at a time, except hetero_infer_request_wait().
 *  - Evolution is append-only: released signatures never change; new
 *    functions are added instead. Only hetero_* symbols are exported.
 *
 * Progress: a long compile (a large model, GPU kernel tuning) can report
 * what it is doing to a callback set with hetero_core_set_progress() (see
 * "Progress" below); `hetero compile` draws it on a terminal.
 *
 * Device strings are the same everywhere: "CPU", "OPENCL", "OPENCL.1",
 * "LEVEL_ZERO", and "HETERO:OPENCL,CPU" for a model split across devices in
 * that priority order (see "HETERO" below).
 */
#ifndef HETERO_HETERO_H
#define HETERO_HETERO_H

#include <stddef.h>
#include <stdint.h>

#include "hetero/status.h"

#if defined(HETERO_BUILDING_LIBRARY)
#define HETERO_API __attribute__((visibility("default")))
#else
#define HETERO_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Versions ------------------------------------------------------------ */

#define HETERO_API_VERSION_MAJOR 0
#define HETERO_API_VERSION_MINOR 8
/* (major << 16) | minor, comparable with hetero_api_version(). */
#define HETERO_API_VERSION ((HETERO_API_VERSION_MAJOR << 16) | HETERO_API_VERSION_MINOR)

/* The API version of the loaded library, encoded as HETERO_API_VERSION. A
 * program built against major M runs on a library of major M and a minor at
 * least as high as the one it was built with. */
HETERO_API uint32_t hetero_api_version(void);
/* heterod's release, "0.1.0". Static storage. */
HETERO_API const char* hetero_library_version(void);

/* ---- Errors and memory --------------------------------------------------- */

/* "HETERO_INVALID_ARGUMENT", ...; static storage, never NULL. */
HETERO_API const char* hetero_status_name(hetero_status status);
/* "invalid argument", ...; static storage, never NULL. */
HETERO_API const char* hetero_status_message(hetero_status status);
/* The message of the last failing call on this thread ("" if none). Borrowed,
 * valid until the next failing call on this thread. */
HETERO_API const char* hetero_last_error(void);
/* Frees memory the library allocated for the caller (metric strings, exported
 * blobs). NULL is a no-op. */
HETERO_API void hetero_free(void* ptr);

/* ---- Element types ------------------------------------------------------- */

/* ONNX TensorProto.DataType numbering. */
typedef enum hetero_dtype {
  HETERO_DTYPE_UNDEFINED = 0,
  HETERO_DTYPE_FLOAT32 = 1,
  HETERO_DTYPE_UINT8 = 2,
  HETERO_DTYPE_INT8 = 3,
  HETERO_DTYPE_UINT16 = 4,
  HETERO_DTYPE_INT16 = 5,
  HETERO_DTYPE_INT32 = 6,
  HETERO_DTYPE_INT64 = 7,
  HETERO_DTYPE_STRING = 8, /* models may mention it; tensors cannot hold it */
  HETERO_DTYPE_BOOL = 9,   /* one byte, 0 or 1 */
  HETERO_DTYPE_FLOAT16 = 10,
  HETERO_DTYPE_FLOAT64 = 11,
  HETERO_DTYPE_UINT32 = 12,
  HETERO_DTYPE_UINT64 = 13,
  HETERO_DTYPE_BFLOAT16 = 16
} hetero_dtype;

/* Bytes per element; 0 for UNDEFINED, STRING and unknown values. */
HETERO_API size_t hetero_dtype_size(hetero_dtype dtype);
/* "float32", "int64", ... as NumPy spells them; "undefined" for unknown
 * values. Static storage. */
HETERO_API const char* hetero_dtype_name(hetero_dtype dtype);

/* ---- Handles ------------------------------------------------------------- */

typedef struct hetero_core hetero_core_t;
typedef struct hetero_model hetero_model_t;
typedef struct hetero_query_result hetero_query_result_t;
typedef struct hetero_compiled_model hetero_compiled_model_t;
typedef struct hetero_infer_request hetero_infer_request_t;
typedef struct hetero_tensor hetero_tensor_t;
typedef struct hetero_model_list hetero_model_list_t;

/* ---- Core: drivers and devices ------------------------------------------- */

/* Creates a core, loading every driver module found. Configuration is given
 * as `config_count` key/value pairs (both arrays may be NULL when the count is
 * 0):
 *   "driver_path"      colon-separated directories searched for driver
 *                      modules before $HETERO_DRIVER_PATH and the install dir;
 *   "cache_dir"        a directory of compiled blobs (created 0750): compiling
 *                      a model imports its blob from there when one is valid,
 *                      else compiles and writes it (atomically; entries 0640,
 *                      shareable between processes). Refused entries are
 *                      logged to stderr and replaced. (API 0.2)
 *   "cache_max_mb"     the directory's size limit in MiB (default 1024); the
 *                      least recently used entries go first;
 *   "DRIVER.key"       a setting of one driver, e.g. "CPU.num_threads" = "4".
 * Unknown keys and bad values fail with HETERO_INVALID_ARGUMENT. A module that
 * fails to load is not an error: see hetero_core_get_driver_failure().
 * Caller releases *out with hetero_core_release(). */
HETERO_API hetero_status hetero_core_create(hetero_core_t** out, const char* const* config_keys,
                                            const char* const* config_values, size_t config_count);
HETERO_API hetero_status hetero_core_release(hetero_core_t* core);

/* Devices of every loaded driver, as listed when the core was created. */
HETERO_API hetero_status hetero_core_get_device_count(const hetero_core_t* core, size_t* out_count);
/* Device string of device `index` ("CPU", "OPENCL.1"). Borrowed, valid until
 * the core is released. */
HETERO_API hetero_status hetero_core_get_device_name(const hetero_core_t* core, const char** out_name,
                                                     size_t index);
/* Its FULL_DEVICE_NAME ("Intel(R) Core(TM) i7 ..."). Borrowed, valid until the
 * core is released. */
HETERO_API hetero_status hetero_core_get_device_full_name(const hetero_core_t* core, const char** out_name,
                                                          size_t index);
/* A metric of a device as text (lists are space-separated), e.g.
 * "OPTIMIZATION_CAPABILITIES". A HETERO list ("HETERO:OPENCL,CPU") answers
 * for its members that are here: the capabilities all of them have, the
 * requests they keep busy together, and their config keys as a HETERO
 * compile takes them ("CPU:num_threads"). Fails with HETERO_NOT_FOUND for an
 * unknown device or metric. Caller frees *out_value with hetero_free(). */
HETERO_API hetero_status hetero_core_get_metric(const hetero_core_t* core, char** out_value, const char* device,
                                                const char* name);

/* Driver modules that loaded: name ("CPU"), version, file. Strings borrowed,
 * valid until the core is released. Any out pointer may be NULL. */
HETERO_API hetero_status hetero_core_get_driver_count(const hetero_core_t* core, size_t* out_count);
HETERO_API hetero_status hetero_core_get_driver(const hetero_core_t* core, const char** out_name,
                                                const char** out_version, const char** out_path, size_t index);
/* Why driver `index` lists no device ("" when it has some): a LEVEL_ZERO
 * driver on a machine without a Level Zero GPU driver says what zeInit found.
 * Borrowed, valid until the core is released. (API 0.3) */
HETERO_API hetero_status hetero_core_get_driver_no_device_reason(const hetero_core_t* core, const char** out_reason,
                                                                 size_t index);
/* Driver modules that were found but could not be used, and why (another ABI
 * version, a missing library, a failed init). Strings borrowed, valid until
 * the core is released. Any out pointer may be NULL. */
HETERO_API hetero_status hetero_core_get_driver_failure_count(const hetero_core_t* core, size_t* out_count);
HETERO_API hetero_status hetero_core_get_driver_failure(const hetero_core_t* core, const char** out_path,
                                                        const char** out_reason, size_t index);

/* ---- Progress (API 0.5) --------------------------------------------------- */

/* Called while a core reads, plans, compiles or imports a model, with what it
 * is doing: `stage` in words ("reading model", "planning HETERO", "compiling
 * HETERO submodels", "building CPU kernels", "building GPU kernels",
 * "building tuning candidates", "timing tuning candidates", "writing blob";
 * drivers may add others; borrowed for the call), and `done` of `total` units
 * of it (nodes, kernel batches, candidates, steps). Within a stage, `done`
 * only increases and the stage ends with done == total; stages nest (a
 * HETERO compile's submodels report their own) and a stage may come again
 * from 0 (the next submodel). It is called on the thread doing the work (the
 * caller's, or a driver's worker while the caller waits), one call at a time
 * for one compile; compiles running at once on several threads call it at
 * once. It must return quickly and must not call into the library with the
 * same core. */
typedef void (*hetero_progress_fn)(void* user_data, const char* stage, uint64_t done, uint64_t total);

/* Sets the callback of every later hetero_model_read_*(), hetero_compile*(),
 * hetero_compiled_model_import*(), hetero_compiled_model_open_*() and
 * hetero_partition() on `core` (one already running keeps the callback it
 * started with); NULL `fn` removes it. Without one, nothing is reported and
 * nothing is spent on it. A core connected to a daemon
 * (hetero_core_connect()) accepts a callback and never calls it: the daemon
 * compiles its models itself. */
HETERO_API hetero_status hetero_core_set_progress(hetero_core_t* core, hetero_progress_fn fn, void* user_data);

/* ---- Models -------------------------------------------------------------- */

/* Reads an ONNX model. Optional input shapes fix dynamic dims before shape
 * inference: `shape_count` entries of input name, dims and rank (the arrays
 * may be NULL when the count is 0). Fails with HETERO_NOT_FOUND / IO_ERROR
 * for the file, HETERO_INVALID_MODEL naming the field or node at fault.
 * Caller releases *out with hetero_model_release(). */
HETERO_API hetero_status hetero_model_read_file(hetero_model_t** out, hetero_core_t* core, const char* path,
                                                const char* const* shape_names, const int64_t* const* shape_dims,
                                                const size_t* shape_ranks, size_t shape_count);
/* The same from `size` bytes at `data` (copied as needed; the caller may free
 * them on return). External data is refused. */
HETERO_API hetero_status hetero_model_read_memory(hetero_model_t** out, hetero_core_t* core, const void* data,
                                                  size_t size, const char* const* shape_names,
                                                  const int64_t* const* shape_dims, const size_t* shape_ranks,
                                                  size_t shape_count);
HETERO_API hetero_status hetero_model_release(hetero_model_t* model);

/* Graph inputs (initializers excluded) and outputs, in graph order. Names are
 * borrowed, valid until the model is released. Shapes: *out_rank is -1 when
 * even the rank is unknown (and *out_dims NULL); a dynamic dim is -1. Dims
 * are borrowed, valid until the model is released. */
HETERO_API hetero_status hetero_model_get_input_count(const hetero_model_t* model, size_t* out_count);
HETERO_API hetero_status hetero_model_get_input_name(const hetero_model_t* model, const char** out_name,
                                                     size_t index);
HETERO_API hetero_status hetero_model_get_input_dtype(const hetero_model_t* model, hetero_dtype* out_dtype,
                                                      size_t index);
HETERO_API hetero_status hetero_model_get_input_shape(const hetero_model_t* model, const int64_t** out_dims,
                                                      int64_t* out_rank, size_t index);
HETERO_API hetero_status hetero_model_get_output_count(const hetero_model_t* model, size_t* out_count);
HETERO_API hetero_status hetero_model_get_output_name(const hetero_model_t* model, const char** out_name,
                                                      size_t index);
HETERO_API hetero_status hetero_model_get_output_dtype(const hetero_model_t* model, hetero_dtype* out_dtype,
                                                       size_t index);
HETERO_API hetero_status hetero_model_get_output_shape(const hetero_model_t* model, const int64_t** out_dims,
                                                       int64_t* out_rank, size_t index);
/* What the model file says of itself, as one line of JSON:
 * {"ir_version": 8, "producer": "pytorch", "opsets": {"ai.onnx": 17},
 * "nodes": 212}. Caller frees *out_json with
 * hetero_free(). (API 0.6) */
HETERO_API hetero_status hetero_model_describe_json(const hetero_model_t* model, char** out_json);

/* Which nodes of `model` `device` runs, and why not the others. Config is
 * that of hetero_compile(). Caller releases *out with
 * hetero_query_result_release(). */
HETERO_API hetero_status hetero_query(hetero_query_result_t** out, hetero_core_t* core,
                                      const hetero_model_t* model, const char* device,
                                      const char* const* config_keys, const char* const* config_values,
                                      size_t config_count);
/* One entry per node of the main graph, in graph order. */
HETERO_API hetero_status hetero_query_result_get_node_count(const hetero_query_result_t* result,
                                                            size_t* out_count);
/* Node name, op type, whether the device runs it (1) or not (0), and the
 * reason when not ("" when supported). Strings borrowed, valid until the
 * result is released. Any out pointer may be NULL. */
HETERO_API hetero_status hetero_query_result_get_node(const hetero_query_result_t* result, const char** out_name,
                                                      const char** out_op_type, int* out_supported,
                                                      const char** out_reason, size_t index);
HETERO_API hetero_status hetero_query_result_release(hetero_query_result_t* result);

/* ---- Compiled models ----------------------------------------------------- */

/* Compiles `model` for `device`. Config keys are the driver's own
 * ("num_threads" for CPU; for a HETERO device see "HETERO" below); unknown
 * keys fail with HETERO_INVALID_ARGUMENT. The model may be released
 * afterwards. Caller releases *out with hetero_compiled_model_release(). */
HETERO_API hetero_status hetero_compile(hetero_compiled_model_t** out, hetero_core_t* core,
                                        const hetero_model_t* model, const char* device,
                                        const char* const* config_keys, const char* const* config_values,
                                        size_t config_count);
/* hetero_model_read_file() and hetero_compile() in one call (shapes, device
 * and config as there). With a core "cache_dir", a valid cached blob of this
 * model, device and config is imported without reading the model at all:
 * only its bytes are hashed. What a service calls at start-up. (API 0.2) */
HETERO_API hetero_status hetero_compile_file(hetero_compiled_model_t** out, hetero_core_t* core, const char* path,
                                             const char* const* shape_names, const int64_t* const* shape_dims,
                                             const size_t* shape_ranks, size_t shape_count, const char* device,
                                             const char* const* config_keys, const char* const* config_values,
                                             size_t config_count);
/* Imports a blob written by hetero_compiled_model_export*(). The blob names
 * its device; a blob for another driver version, device or a corrupt one
 * fails with HETERO_BLOB_MISMATCH / HETERO_BLOB_CORRUPT saying which field.
 * Bytes are copied as needed. Caller releases *out with
 * hetero_compiled_model_release(). */
HETERO_API hetero_status hetero_compiled_model_import(hetero_compiled_model_t** out, hetero_core_t* core,
                                                      const void* data, size_t size,
                                                      const char* const* config_keys,
                                                      const char* const* config_values, size_t config_count);
HETERO_API hetero_status hetero_compiled_model_import_file(hetero_compiled_model_t** out, hetero_core_t* core,
                                                           const char* path, const char* const* config_keys,
                                                           const char* const* config_values,
                                                           size_t config_count);
/* What a blob says of itself, in words: format, library and driver versions,
 * device, compile config, source model hash, sections. Works for a blob of
 * another library or driver version too; a corrupt one fails with
 * HETERO_BLOB_CORRUPT naming the field. Caller frees *out_text with
 * hetero_free(). (API 0.2) */
HETERO_API hetero_status hetero_blob_describe(char** out_text, const void* data, size_t size);
/* The same as one JSON object, for programs: "format_version", "size",
 * "library_version", "this_library" (bool), "driver", "driver_version",
 * "device", "config" [{"key", "value"}], "model_sha256" (hex), "sections"
 * [{"name", "device", "size"}]. Caller frees *out_json with hetero_free().
 * (API 0.4) */
HETERO_API hetero_status hetero_blob_describe_json(char** out_json, const void* data, size_t size);
/* What a model file holds: a pipeline (models made into one, described in
 * YAML: docs/streams.md) when its name ends in .yaml or .yml (API 0.8);
 * else, told by its first bytes, a blob when they are the blob magic, and
 * ONNX otherwise. (API 0.4) */
typedef enum hetero_model_format {
  HETERO_MODEL_FORMAT_ONNX = 0,
  HETERO_MODEL_FORMAT_BLOB = 1,
  HETERO_MODEL_FORMAT_PIPELINE = 2
} hetero_model_format;
/* The format of the file at `path`. Fails with HETERO_NOT_FOUND / IO_ERROR
 * for the file. (API 0.4) */
HETERO_API hetero_status hetero_model_file_format(hetero_model_format* out_format, const char* path);
/* Opens the model at `path`, whichever format it is: an ONNX model is
 * compiled for `device` as by hetero_compile_file() (shapes, config and the
 * core's cache as there); a blob is imported as by
 * hetero_compiled_model_import_file(), its config being the import's. For a
 * blob, `device` may be NULL (the blob's own device) or must name the blob's
 * device, each given shape must agree with that input's in the blob (a
 * dynamic dim agrees with any), else HETERO_BLOB_MISMATCH; a "policy" key is
 * ignored (the blob holds its plan). What a service that is given "a model"
 * calls. Caller releases *out with hetero_compiled_model_release().
 * (API 0.4) */
HETERO_API hetero_status hetero_compiled_model_open_file(hetero_compiled_model_t** out, hetero_core_t* core,
                                                         const char* path, const char* const* shape_names,
                                                         const int64_t* const* shape_dims, const size_t* shape_ranks,
                                                         size_t shape_count, const char* device,
                                                         const char* const* config_keys,
                                                         const char* const* config_values, size_t config_count);
/* The same from `size` bytes at `data` (an ONNX model read as by
 * hetero_model_read_memory(), never cached). Bytes are copied as needed.
 * (API 0.4) */
HETERO_API hetero_status hetero_compiled_model_open_memory(hetero_compiled_model_t** out, hetero_core_t* core,
                                                           const void* data, size_t size,
                                                           const char* const* shape_names,
                                                           const int64_t* const* shape_dims,
                                                           const size_t* shape_ranks, size_t shape_count,
                                                           const char* device, const char* const* config_keys,
                                                           const char* const* config_values, size_t config_count);
/* The blob as bytes. Caller frees *out_data with hetero_free(). */
HETERO_API hetero_status hetero_compiled_model_export(const hetero_compiled_model_t* compiled, void** out_data,
                                                      size_t* out_size);
/* The blob written to `path`, atomically: the file is complete or absent. */
HETERO_API hetero_status hetero_compiled_model_export_file(const hetero_compiled_model_t* compiled,
                                                           const char* path);
/* The device it runs on ("CPU"). Borrowed, valid until it is released. */
HETERO_API hetero_status hetero_compiled_model_get_device(const hetero_compiled_model_t* compiled,
                                                          const char** out_device);
/* Inputs and outputs as the compiled model sees them (same conventions as
 * the hetero_model_get_* functions; borrowed until it is released). */
HETERO_API hetero_status hetero_compiled_model_get_input_count(const hetero_compiled_model_t* compiled,
                                                               size_t* out_count);
HETERO_API hetero_status hetero_compiled_model_get_input_name(const hetero_compiled_model_t* compiled,
                                                              const char** out_name, size_t index);
HETERO_API hetero_status hetero_compiled_model_get_input_dtype(const hetero_compiled_model_t* compiled,
                                                               hetero_dtype* out_dtype, size_t index);
HETERO_API hetero_status hetero_compiled_model_get_input_shape(const hetero_compiled_model_t* compiled,
                                                               const int64_t** out_dims, int64_t* out_rank,
                                                               size_t index);
HETERO_API hetero_status hetero_compiled_model_get_output_count(const hetero_compiled_model_t* compiled,
                                                                size_t* out_count);
HETERO_API hetero_status hetero_compiled_model_get_output_name(const hetero_compiled_model_t* compiled,
                                                               const char** out_name, size_t index);
HETERO_API hetero_status hetero_compiled_model_get_output_dtype(const hetero_compiled_model_t* compiled,
                                                                hetero_dtype* out_dtype, size_t index);
HETERO_API hetero_status hetero_compiled_model_get_output_shape(const hetero_compiled_model_t* compiled,
                                                                const int64_t** out_dims, int64_t* out_rank,
                                                                size_t index);
HETERO_API hetero_status hetero_compiled_model_release(hetero_compiled_model_t* compiled);
/* *out_cached is 1 when hetero_compile_file() (or _open_file) imported the
 * core's cached blob instead of compiling, else 0. (API 0.6) */
HETERO_API hetero_status hetero_compiled_model_is_cached(const hetero_compiled_model_t* compiled,
                                                         int* out_cached);

/* ---- HETERO: one model across several devices (API 0.2) ------------------ */

/* A HETERO device string lists devices in priority order. Each node goes to
 * the first device that runs it, unless an affinity policy pins it; the
 * nodes are then grouped into subgraphs, one submodel each, compiled by its
 * device's driver and run in turn. Config of a HETERO compile, query or
 * partition:
 *   "policy"       path of a YAML affinity policy (conf/policy-example.yaml);
 *                  its devices must be the device string's, in order;
 *   "DEVICE:key"   a key of one device of the list ("CPU.1:ops") or of every
 *                  device of a driver ("CPU:num_threads").
 * A HETERO compiled model exports to one blob holding the plan and each
 * submodel's own driver export; importing it compiles nothing, and needs the
 * plan's devices (not the policy file). */

typedef enum hetero_plan_format {
  HETERO_PLAN_TEXT = 0, /* for people */
  HETERO_PLAN_JSON = 1, /* {"subgraphs": [{"device", "nodes", "inputs", "outputs"}], "transfers", ...} */
  HETERO_PLAN_DOT = 2   /* Graphviz: nodes coloured by device, subgraphs as clusters */
} hetero_plan_format;

/* Plans `model` for the HETERO device `device` without compiling it: the
 * subgraphs in execution order, their devices, nodes and the tensors passed
 * between them. Devices that are not present on this machine are planned
 * for from the policy's pins alone (planning for another box). Caller frees
 * *out_text with hetero_free(). */
HETERO_API hetero_status hetero_partition(hetero_core_t* core, char** out_text, const hetero_model_t* model,
                                          const char* device, hetero_plan_format format,
                                          const char* const* config_keys, const char* const* config_values,
                                          size_t config_count);

/* The submodels a compiled model runs: 1 for a plain device, one per
 * subgraph for HETERO (in execution order). */
HETERO_API hetero_status hetero_compiled_model_get_submodel_count(const hetero_compiled_model_t* compiled,
                                                                  size_t* out_count);
/* The device of submodel `index` ("CPU.1"). Borrowed, valid until the
 * compiled model is released. */
HETERO_API hetero_status hetero_compiled_model_get_submodel_device(const hetero_compiled_model_t* compiled,
                                                                   const char** out_device, size_t index);

/* ---- Tensors ------------------------------------------------------------- */

/* A new zero-filled tensor owning 64-byte aligned memory. `dims` may be NULL
 * when `rank` is 0 (a scalar). Caller releases *out with
 * hetero_tensor_release(). */
HETERO_API hetero_status hetero_tensor_create(hetero_tensor_t** out, hetero_dtype dtype, const int64_t* dims,
                                              size_t rank);
/* A tensor over caller memory, not copied: `data` must hold at least the
 * tensor's byte size (`size` says how much it holds), be aligned to the
 * element size, and stay valid until this tensor is released AND no infer
 * request it was bound to can still read it (the request is released, another
 * tensor is bound in its place, or, for a running inference, it finished).
 * Caller releases *out with hetero_tensor_release(); the memory stays the
 * caller's. */
HETERO_API hetero_status hetero_tensor_wrap(hetero_tensor_t** out, hetero_dtype dtype, const int64_t* dims,
                                            size_t rank, void* data, size_t size);
/* Reads a tensor file: NumPy .npy (v1-v3 headers, C order, little-endian
 * numeric and bool dtypes) or a serialized ONNX TensorProto (.pb). Errors name
 * the file and the field at fault. Caller releases *out with
 * hetero_tensor_release(). */
HETERO_API hetero_status hetero_tensor_read_file(hetero_tensor_t** out, const char* path);
/* Writes the tensor as a .npy file, atomically (complete or absent).
 * bfloat16 has no NumPy type and fails with HETERO_NOT_SUPPORTED. */
HETERO_API hetero_status hetero_tensor_write_npy(const hetero_tensor_t* tensor, const char* path);

/* Element data (row-major). Borrowed, valid until the tensor is released;
 * for an output, see hetero_infer_request_get_output(). NULL only for a
 * tensor of zero elements. */
HETERO_API hetero_status hetero_tensor_get_data(hetero_tensor_t* tensor, void** out_data);
HETERO_API hetero_status hetero_tensor_get_dtype(const hetero_tensor_t* tensor, hetero_dtype* out_dtype);
HETERO_API hetero_status hetero_tensor_get_rank(const hetero_tensor_t* tensor, size_t* out_rank);
/* Dims borrowed, valid until the tensor is released (NULL allowed for rank 0).
 * `out_rank` may be NULL. */
HETERO_API hetero_status hetero_tensor_get_shape(const hetero_tensor_t* tensor, const int64_t** out_dims,
                                                 size_t* out_rank);
HETERO_API hetero_status hetero_tensor_get_element_count(const hetero_tensor_t* tensor, size_t* out_count);
HETERO_API hetero_status hetero_tensor_get_byte_size(const hetero_tensor_t* tensor, size_t* out_size);
HETERO_API hetero_status hetero_tensor_release(hetero_tensor_t* tensor);

/* ---- Infer requests ------------------------------------------------------ */

/* Called once per hetero_infer_request_start_async(), from a worker thread,
 * when the inference has finished; `status` is its result and, when not
 * HETERO_OK, hetero_last_error() on that thread says why. On the CPU that
 * thread is the stream that ran the inference, which runs nothing else until
 * the callback returns: keep it short. The callback may
 * read outputs and bind inputs of its request, but must not start, wait on
 * or release it (those fail with HETERO_BUSY there): hand the request to
 * another thread for that. */
typedef void (*hetero_callback)(void* user_data, hetero_status status);

/* Caller releases *out with hetero_infer_request_release(). Requests of one
 * compiled model run independently; use several to keep a device busy. */
HETERO_API hetero_status hetero_infer_request_create(hetero_infer_request_t** out,
                                                     hetero_compiled_model_t* compiled);
/* Binds a tensor to input `index` (compiled model order) or to the input
 * named `name`. The tensor is referenced, not copied: later writes to its data
 * are seen by later inferences, and the tensor handle may be released at once
 * (owned memory stays alive while bound; wrapped memory see
 * hetero_tensor_wrap()). A wrong dtype or shape fails with
 * HETERO_INVALID_ARGUMENT; a request with an inference running, HETERO_BUSY. */
HETERO_API hetero_status hetero_infer_request_set_input(hetero_infer_request_t* request, size_t index,
                                                        hetero_tensor_t* tensor);
HETERO_API hetero_status hetero_infer_request_set_input_by_name(hetero_infer_request_t* request, const char* name,
                                                                hetero_tensor_t* tensor);
/* Output `index` (or named `name`) of the last finished inference, as a new
 * handle sharing the result memory (no copy). The handle keeps that memory
 * as it is: while it is held, later inferences on this request write their
 * results elsewhere. An output that is a graph input passed through is that
 * input's memory, and one that is a model constant must not be written.
 * Caller releases *out with hetero_tensor_release() (any time, also after
 * the request). Fails with HETERO_BUSY while an inference runs, and with
 * HETERO_INVALID_ARGUMENT when none has finished or the last one failed. */
HETERO_API hetero_status hetero_infer_request_get_output(hetero_infer_request_t* request, hetero_tensor_t** out,
                                                         size_t index);
HETERO_API hetero_status hetero_infer_request_get_output_by_name(hetero_infer_request_t* request,
                                                                 hetero_tensor_t** out, const char* name);
/* Runs one inference on the bound inputs and returns when it has finished. */
HETERO_API hetero_status hetero_infer_request_infer(hetero_infer_request_t* request);
/* Starts one inference and returns at once; `callback` (may be NULL) is
 * called when it has finished. Fails with HETERO_BUSY when one is running. */
HETERO_API hetero_status hetero_infer_request_start_async(hetero_infer_request_t* request,
                                                          hetero_callback callback, void* user_data);
/* Blocks until the inference started last has finished (its callback
 * included) and returns its status (HETERO_OK when none was started). May be
 * called from any thread. */
HETERO_API hetero_status hetero_infer_request_wait(hetero_infer_request_t* request);
/* Asks the inference running on `request` to stop and returns at once: it
 * ends at its next node boundary (CPU; a GPU device finishes the work it has
 * queued) and then fails with HETERO_CANCELLED, unless it finished first.
 * With nothing running it does nothing. The request is usable again as soon
 * as the inference has ended; a daemon's model stops its inference the same
 * way. Any thread may call it, the request's callback included. (API 0.5) */
HETERO_API hetero_status hetero_infer_request_cancel(hetero_infer_request_t* request);
/* Gives back the memory `request` keeps between inferences for the next one
 * (a CPU model's intermediate values: tens of MiB for a large model), for a
 * request that will idle; the next inference allocates it again. Outputs
 * already read stay valid. Fails with HETERO_BUSY while an inference runs.
 * (API 0.6) */
HETERO_API hetero_status hetero_infer_request_release_memory(hetero_infer_request_t* request);
/* Waits for a running inference, then frees the request. */
HETERO_API hetero_status hetero_infer_request_release(hetero_infer_request_t* request);

/* ---- Sequences (API 0.7) ------------------------------------------------- */

/* A model that carries state from call to call (Silero VAD's `state` input
 * and `stateN` output) can be called as a sequence: the daemon, or in
 * process the compiled model (API 0.8), keeps the state and feeds each
 * call's state output back as the next call's state input, so the caller
 * binds only the other inputs and is not sent the state outputs
 * (docs/streams.md). Sequences are a core's connection's, or a compiled
 * model's in process, named by ids their caller chooses. In process the
 * state pairs are found by their names only, and there are no limits: the
 * caller ends its sequences, or they go with the compiled model. */
#define HETERO_SEQUENCE_START 1u /* the call starts the sequence, or starts it again, with zero state */
#define HETERO_SEQUENCE_END 2u   /* the sequence ends once the call has run */
#define HETERO_SEQUENCE_STATE_OUTPUTS 4u /* the call returns its state outputs too (an LSTM's h) */

/* The next inferences of `request` are calls of sequence `sequence_id` (0:
 * of none); `flags` (HETERO_SEQUENCE_*) apply to the next inference only.
 * Other inputs stay bound as usual, but a state input is the sequence's: one
 * left unbound comes from the daemon, and one bound is sent with the next
 * call alone, replacing the sequence's state (an initial state of the
 * caller's). The state outputs are not returned unless the call's flags
 * ask for them: hetero_infer_request_get_output() fails for them with
 * HETERO_INVALID_ARGUMENT. A model without state pairs fails with
 * HETERO_INVALID_ARGUMENT. The daemon (and the compiled model) answers
 * HETERO_NOT_FOUND for a call of a sequence not started (or ended, or idle
 * past its limit), HETERO_BUSY while another call of it runs or past the
 * client's limit of sequences, HETERO_CANCELLED once its model was reloaded
 * with changes. Fails with HETERO_BUSY while an inference runs. */
HETERO_API hetero_status hetero_infer_request_set_sequence(hetero_infer_request_t* request, uint64_t sequence_id,
                                                           uint32_t flags);
/* Ends sequence `sequence_id` of `compiled` now, giving back its state.
 * HETERO_NOT_FOUND when there is none. */
HETERO_API hetero_status hetero_compiled_model_end_sequence(hetero_compiled_model_t* compiled, uint64_t sequence_id);
/* A model's state pairs: what a sequence of it carries, output `out_output`
 * fed back as input `out_input`: a daemon's model's as the daemon serves it,
 * a local core's found by their names (API 0.8; none before). None for a
 * model of no state. Strings borrowed, valid until the compiled model is
 * released. */
HETERO_API hetero_status hetero_compiled_model_get_state_pair_count(const hetero_compiled_model_t* compiled,
                                                                    size_t* out_count);
HETERO_API hetero_status hetero_compiled_model_get_state_pair(const hetero_compiled_model_t* compiled,
                                                              const char** out_output, const char** out_input,
                                                              size_t index);
/* Whether the daemon's config gives input `index` a value (its `defaults:`,
 * a stream's constants such as a sample rate), so that an inference may
 * leave it unbound: *out_given 1 or 0 (always 0 for a local core's). */
HETERO_API hetero_status hetero_compiled_model_get_input_given(const hetero_compiled_model_t* compiled,
                                                               int* out_given, size_t index);

/* ---- A daemon's models (API 0.3) ----------------------------------------- */

/* A core may also be a client of heterod: created with hetero_core_connect(),
 * it runs everything through the daemon's socket. Devices, drivers and
 * metrics are the daemon's; models are the ones it serves, by name
 * (hetero_compiled_model_open()), and their infer requests work as local ones
 * do, synchronously and asynchronously (large tensors travel as sealed
 * memfds, not copies). Reading, compiling, querying, partitioning, importing
 * and exporting models run in process only and fail with
 * HETERO_NOT_SUPPORTED on such a core. The functions below need one and fail
 * with HETERO_NOT_SUPPORTED on a local core. */

/* Connects to the daemon listening on `socket_path`. Fails with
 * HETERO_CONNECTION_ERROR (nothing answering), HETERO_PERMISSION_DENIED (the
 * socket's permissions or the daemon's access lists), HETERO_NOT_SUPPORTED
 * (no common protocol version). Caller releases *out with
 * hetero_core_release(). */
HETERO_API hetero_status hetero_core_connect(hetero_core_t** out, const char* socket_path);

/* The models the daemon serves, now: name, device, state ("ready",
 * "loading", "failed") and why a failed one failed ("" otherwise). Caller
 * releases *out with hetero_model_list_release(). */
HETERO_API hetero_status hetero_core_list_models(hetero_model_list_t** out, hetero_core_t* core);
HETERO_API hetero_status hetero_model_list_get_count(const hetero_model_list_t* list, size_t* out_count);
/* Strings borrowed, valid until the list is released. Any out pointer may be
 * NULL. */
HETERO_API hetero_status hetero_model_list_get(const hetero_model_list_t* list, const char** out_name,
                                               const char** out_device, const char** out_state,
                                               const char** out_error, size_t index);
HETERO_API hetero_status hetero_model_list_release(hetero_model_list_t* list);

/* The served model `name`, ready for infer requests. Fails with
 * HETERO_NOT_FOUND when the daemon serves no such model (or it failed to
 * load), HETERO_BUSY while it is loading. Caller releases *out with
 * hetero_compiled_model_release(). */
HETERO_API hetero_status hetero_compiled_model_open(hetero_compiled_model_t** out, hetero_core_t* core,
                                                    const char* name);

/* Asks the daemon to serve the model at `path` (an .onnx file or a blob,
 * under one of the directories its config allows) as `name`, compiled for
 * `device` with the given config; returns when it is ready. */
HETERO_API hetero_status hetero_core_load_model(hetero_core_t* core, const char* name, const char* path,
                                                const char* device, const char* const* config_keys,
                                                const char* const* config_values, size_t config_count);
/* The same with the model's `size` bytes uploaded (up to the daemon's
 * limit; copied as needed). */
HETERO_API hetero_status hetero_core_load_model_memory(hetero_core_t* core, const char* name, const void* data,
                                                       size_t size, const char* device,
                                                       const char* const* config_keys,
                                                       const char* const* config_values, size_t config_count);
/* Stops serving `name`. Requests already sent are still answered. */
HETERO_API hetero_status hetero_core_unload_model(hetero_core_t* core, const char* name);

typedef enum hetero_stats_format {
  HETERO_STATS_TEXT = 0,      /* for people */
  HETERO_STATS_JSON = 1,      /* {"uptime_ms", "connections", "models": [{"name", "requests", ...}]} */
  HETERO_STATS_PROMETHEUS = 2 /* text exposition format, for node_exporter's textfile collector */
} hetero_stats_format;

/* Per model: requests answered, errors, "busy" replies, timeouts, latency
 * percentiles (receipt to reply, last 1024 requests), queue depth, requests
 * in flight. Caller frees *out_text with hetero_free(). */
HETERO_API hetero_status hetero_core_get_stats(hetero_core_t* core, char** out_text, hetero_stats_format format);

/* Makes the daemon re-read its config (as SIGHUP does) and returns when the
 * reload has finished. Only root and the daemon's own user may. */
HETERO_API hetero_status hetero_core_reload(hetero_core_t* core);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* HETERO_HETERO_H */
