/* hetero [--connect SOCKET] stream MODEL AUDIO.wav: a WAV file through a
 * stateful model (a pipeline's windows are state too) chunk by chunk, as one
 * sequence whose state heterod keeps, or in process the compiled model
 * (docs/streams.md), one line per chunk with its outputs. The file is read a
 * chunk at a time, however long it is. */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

enum { OPT_CHUNK = CLI_OPT_COMMAND, OPT_AUDIO, OPT_SCALAR, OPT_INPUT };

static const cli_opt kOptions[] = {
    {OPT_CHUNK, 0, "chunk", "N", "samples per call (default: the audio input's last dim,\nwhen the model fixes it)"},
    {OPT_AUDIO, 0, "audio", "NAME",
     "the input the samples go to (default: the model's\nfirst float32 input that is not state nor given)"},
    {OPT_INPUT, 0, "input", "NAME=FILE", "an input from a .npy or .pb file, given with every call"},
    {OPT_SCALAR, 0, "scalar", "NAME=NUMBER", "a scalar input of the model's type, as sr=16000"},
    {0},
};

static const cli_command kCommand = {
    "stream",
    "MODEL AUDIO.wav [--connect SOCKET] [options]",
    "Streams a WAV file (mono, 16-bit PCM or 32-bit float, samples scaled to\n"
    "[-1, 1)) through MODEL, a stateful model, as one sequence: with --connect\n"
    "MODEL is a model heterod serves, which keeps its state; without, a model\n"
    "file (ONNX, a blob or a pipeline .yaml) run on the CPU in process. The\n"
    "state goes from chunk to chunk, so each call gives the chunk and the\n"
    "other inputs only. Prints one line per chunk: its start time in seconds,\n"
    "then each output that is not state (up to 8 values).\n"
    "A last partial chunk is padded with zeros.\n",
    kOptions,
    "Silero VAD (16 kHz), 512 samples a call:\n"
    "\n"
    "  hetero --connect stream vad speech.wav --chunk 512 --scalar sr=16000\n"
    "  hetero stream silero_vad.yaml speech.wav --chunk 1600    # the shipped pipeline\n",
};

typedef struct stream_args {
  const char* model;
  const char* wav;
  long chunk;
  const char* audio;
  cli_strings inputs;  /* NAME=FILE */
  cli_strings scalars; /* NAME=NUMBER */
} stream_args;

static int take(void* ctx, int id, const char* v) {
  stream_args* a = ctx;
  switch (id) {
    case CLI_OPERAND:
      if (!a->model) a->model = v;
      else if (!a->wav) a->wav = v;
      else return cli_usage_error("stream", "unexpected argument '%s'", v);
      return CLI_OK;
    case OPT_CHUNK:
      return cli_parse_count("stream", "--chunk", v, &a->chunk) && a->chunk > 0
                 ? CLI_OK
                 : cli_usage_error("stream", "--chunk must be at least 1");
    case OPT_AUDIO: a->audio = v; return CLI_OK;
    default: {
      const char* eq = strchr(v, '=');
      if (!eq || eq == v || !eq[1])
        return cli_usage_error("stream", "%s '%s' is not NAME=%s", id == OPT_INPUT ? "--input" : "--scalar", v,
                               id == OPT_INPUT ? "FILE" : "NUMBER");
      return cli_strings_push(id == OPT_INPUT ? &a->inputs : &a->scalars, v) ? CLI_OK : CLI_FAILED;
    }
  }
}

/* ---- WAV ------------------------------------------------------------------ */

typedef struct wav {
  FILE* file;
  unsigned format;     /* 1: PCM, 3: IEEE float */
  unsigned bits;       /* 16 or 32 */
  unsigned rate;
  uint64_t remaining;  /* bytes of samples left in the data chunk */
} wav;

static uint32_t le32(const unsigned char* p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Opens `path` and reads up to its data chunk; prints why not. */
static bool wav_open(wav* w, const char* path) {
  memset(w, 0, sizeof *w);
  if (!(w->file = fopen(path, "rb"))) {
    cli_error("cannot open %s: %s", path, strerror(errno));
    return false;
  }
  unsigned char riff[12];
  if (fread(riff, 1, 12, w->file) != 12 || memcmp(riff, "RIFF", 4) != 0 || memcmp(riff + 8, "WAVE", 4) != 0) {
    cli_error("%s: not a WAV file (no RIFF/WAVE header)", path);
    return false;
  }
  bool have_format = false;
  for (;;) {
    unsigned char header[8];
    if (fread(header, 1, 8, w->file) != 8) {
      cli_error("%s: no data chunk", path);
      return false;
    }
    const uint32_t size = le32(header + 4);
    if (memcmp(header, "fmt ", 4) == 0) {
      unsigned char fmt[16];
      if (size < 16 || fread(fmt, 1, 16, w->file) != 16 || fseek(w->file, (long)(size - 16 + (size & 1)), SEEK_CUR)) {
        cli_error("%s: its fmt chunk is cut short", path);
        return false;
      }
      w->format = (unsigned)(fmt[0] | fmt[1] << 8);
      const unsigned channels = (unsigned)(fmt[2] | fmt[3] << 8);
      w->rate = le32(fmt + 4);
      w->bits = (unsigned)(fmt[14] | fmt[15] << 8);
      if (w->format == 0xFFFE && size >= 26) w->format = 1;  /* WAVE_FORMAT_EXTENSIBLE: treated by its bits */
      if (channels != 1 || !((w->format == 1 && w->bits == 16) || (w->format == 3 && w->bits == 32))) {
        cli_error("%s: %u channel(s) of %u-bit %s; stream reads mono 16-bit PCM or 32-bit float", path, channels,
                  w->bits, w->format == 3 ? "float" : w->format == 1 ? "PCM" : "samples of an unknown format");
        return false;
      }
      have_format = true;
    } else if (memcmp(header, "data", 4) == 0) {
      if (!have_format) {
        cli_error("%s: its data chunk comes before its fmt chunk", path);
        return false;
      }
      w->remaining = size;
      return true;
    } else if (fseek(w->file, (long)size + (long)(size & 1), SEEK_CUR)) {
      cli_error("%s: a chunk is cut short", path);
      return false;
    }
  }
}

/* Reads up to `count` samples as floats; how many it read (0 at the end). */
static size_t wav_read(wav* w, float* out, size_t count) {
  const size_t width = w->bits / 8;
  size_t n = 0;
  unsigned char buf[4];
  while (n < count && w->remaining >= width && fread(buf, 1, width, w->file) == width) {
    w->remaining -= width;
    if (w->format == 1) {
      out[n++] = (float)(int16_t)(buf[0] | buf[1] << 8) / 32768.0f;
    } else {
      const uint32_t bits = le32(buf);
      memcpy(&out[n++], &bits, 4);
    }
  }
  return n;
}

/* ---- The stream ----------------------------------------------------------- */

/* Input `name`'s index among the model's, or -1 (after an error naming
 * `what`) when it has none. */
static long input_index(hetero_compiled_model_t* compiled, const char* name, size_t len, const char* what) {
  size_t count = 0;
  hetero_compiled_model_get_input_count(compiled, &count);
  for (size_t k = 0; k < count; ++k) {
    const char* n = NULL;
    if (!hetero_compiled_model_get_input_name(compiled, &n, k) && strlen(n) == len && strncmp(n, name, len) == 0)
      return (long)k;
  }
  cli_error("%s: the model has no input '%.*s'", what, (int)len, name);
  return -1;
}

static bool is_state_input(hetero_compiled_model_t* compiled, const char* name) {
  size_t pairs = 0;
  hetero_compiled_model_get_state_pair_count(compiled, &pairs);
  for (size_t k = 0; k < pairs; ++k) {
    const char *output = NULL, *input = NULL;
    if (!hetero_compiled_model_get_state_pair(compiled, &output, &input, k) && strcmp(input, name) == 0) return true;
  }
  return false;
}

/* A scalar of input k's type holding `text`'s number. */
static int scalar_tensor(hetero_compiled_model_t* compiled, size_t k, const char* arg, hetero_tensor_t** out) {
  const char* text = strchr(arg, '=') + 1;
  hetero_dtype dtype = HETERO_DTYPE_UNDEFINED;
  hetero_compiled_model_get_input_dtype(compiled, &dtype, k);
  char* end = NULL;
  errno = 0;
  const double value = strtod(text, &end);
  if (*end || errno || end == text) return cli_usage_error("stream", "--scalar '%s': '%s' is not a number", arg, text);
  if (hetero_tensor_create(out, dtype, NULL, 0)) return cli_call_failed("cannot make a scalar input");
  void* data = NULL;
  hetero_tensor_get_data(*out, &data);
  switch (dtype) {
    case HETERO_DTYPE_FLOAT32: *(float*)data = (float)value; break;
    case HETERO_DTYPE_FLOAT64: *(double*)data = value; break;
    case HETERO_DTYPE_INT64: *(int64_t*)data = (int64_t)value; break;
    case HETERO_DTYPE_INT32: *(int32_t*)data = (int32_t)value; break;
    default:
      hetero_tensor_release(*out);
      *out = NULL;
      return cli_usage_error("stream", "--scalar '%s': the input is %s; --scalar takes float and int inputs", arg,
                             hetero_dtype_name(dtype));
  }
  return CLI_OK;
}

/* Binds every --input and --scalar; marks them in `given`. */
static int bind_given(hetero_compiled_model_t* compiled, hetero_infer_request_t* request, const stream_args* a,
                      bool* given) {
  for (int pass = 0; pass < 2; ++pass) {
    const cli_strings* list = pass == 0 ? &a->inputs : &a->scalars;
    for (size_t j = 0; j < list->count; ++j) {
      const char* arg = list->items[j];
      const char* eq = strchr(arg, '=');
      const long k = input_index(compiled, arg, (size_t)(eq - arg), pass == 0 ? "--input" : "--scalar");
      if (k < 0) return CLI_FAILED;
      hetero_tensor_t* t = NULL;
      if (pass == 0 && hetero_tensor_read_file(&t, eq + 1)) return cli_call_failed("cannot read an --input");
      if (pass == 1 && scalar_tensor(compiled, (size_t)k, arg, &t) != CLI_OK) return CLI_FAILED;
      const hetero_status status = hetero_infer_request_set_input(request, (size_t)k, t);
      hetero_tensor_release(t);
      if (status) return cli_call_failed(arg);
      given[k] = true;
    }
  }
  return CLI_OK;
}

/* The audio input: --audio, else the first float32 input neither state nor given. */
static long audio_input(hetero_compiled_model_t* compiled, const stream_args* a, const bool* given) {
  if (a->audio) return input_index(compiled, a->audio, strlen(a->audio), "--audio");
  size_t count = 0;
  hetero_compiled_model_get_input_count(compiled, &count);
  for (size_t k = 0; k < count; ++k) {
    const char* name = NULL;
    hetero_dtype dtype = HETERO_DTYPE_UNDEFINED;
    hetero_compiled_model_get_input_name(compiled, &name, k);
    hetero_compiled_model_get_input_dtype(compiled, &dtype, k);
    if (!given[k] && dtype == HETERO_DTYPE_FLOAT32 && !is_state_input(compiled, name)) return (long)k;
  }
  cli_error("the model has no float32 input left for the audio: name it with --audio");
  return -1;
}

/* Prints the outputs that came back (the state stays in the daemon). */
static void print_outputs(hetero_compiled_model_t* compiled, hetero_infer_request_t* request, double seconds) {
  printf("%.3f", seconds);
  size_t count = 0;
  hetero_compiled_model_get_output_count(compiled, &count);
  for (size_t k = 0; k < count; ++k) {
    const char* name = NULL;
    hetero_tensor_t* t = NULL;
    if (hetero_compiled_model_get_output_name(compiled, &name, k) || hetero_infer_request_get_output(request, &t, k))
      continue;
    hetero_dtype dtype = HETERO_DTYPE_UNDEFINED;
    void* data = NULL;
    size_t n = 0;
    hetero_tensor_get_dtype(t, &dtype);
    hetero_tensor_get_data(t, &data);
    hetero_tensor_get_element_count(t, &n);
    printf(" %s=", name);
    for (size_t i = 0; i < n && i < 8; ++i) {
      if (dtype == HETERO_DTYPE_FLOAT32) printf("%s%.6g", i ? "," : "", (double)((const float*)data)[i]);
      else if (dtype == HETERO_DTYPE_INT64) printf("%s%" PRId64, i ? "," : "", ((const int64_t*)data)[i]);
      else printf("%s(%s)", i ? "," : "", hetero_dtype_name(dtype));
    }
    if (n > 8) fputs(",...", stdout);
    hetero_tensor_release(t);
  }
  putchar('\n');
}

static int stream(const stream_args* a) {
  wav w;
  if (!wav_open(&w, a->wav)) {
    if (w.file) fclose(w.file);
    return CLI_FAILED;
  }
  hetero_core_t* core = NULL;
  hetero_compiled_model_t* compiled = NULL;
  hetero_infer_request_t* request = NULL;
  float* samples = NULL;
  bool* given = NULL;
  size_t inputs = 0;
  int rc = cli_core_open(&core, NULL);
  if (rc == CLI_OK && (cli_connect ? hetero_compiled_model_open(&compiled, core, a->model)
                                   : hetero_compiled_model_open_file(&compiled, core, a->model, NULL, NULL, NULL, 0,
                                                                     "CPU", NULL, NULL, 0)))
    rc = cli_call_failed(a->model);
  size_t pairs = 0;
  if (rc == CLI_OK && !hetero_compiled_model_get_state_pair_count(compiled, &pairs) && pairs == 0) {
    cli_error("model '%s' keeps no state (no state pairs were found in it): run it with 'hetero run'", a->model);
    rc = CLI_FAILED;
  }
  if (rc == CLI_OK && hetero_infer_request_create(&request, compiled)) rc = cli_call_failed("infer request");
  if (rc == CLI_OK) {
    hetero_compiled_model_get_input_count(compiled, &inputs);
    if (!(given = calloc(inputs ? inputs : 1, sizeof *given))) rc = CLI_FAILED;
  }
  if (rc == CLI_OK) rc = bind_given(compiled, request, a, given);
  const long audio = rc == CLI_OK ? audio_input(compiled, a, given) : -1;
  if (rc == CLI_OK && audio < 0) rc = CLI_FAILED;
  /* The chunk's shape: the input's own, its free dims 1 and its last the chunk. */
  int64_t dims[8] = {1, 0};
  size_t rank = 2;
  if (rc == CLI_OK) {
    const int64_t* port = NULL;
    int64_t port_rank = -1;
    hetero_compiled_model_get_input_shape(compiled, &port, &port_rank, (size_t)audio);
    if (port_rank >= 1 && port_rank <= 8) {
      rank = (size_t)port_rank;
      for (size_t d = 0; d < rank; ++d) dims[d] = port[d] < 0 ? 1 : port[d];
      for (size_t d = 0; d + 1 < rank && rc == CLI_OK; ++d)
        if (dims[d] != 1) {
          char shape[256];
          const char* name = "?";
          hetero_compiled_model_get_input_name(compiled, &name, (size_t)audio);
          cli_error("input '%s' is %s: stream feeds one row of samples (a shape of 1s and then the chunk)", name,
                    cli_format_dims(port, port_rank, shape, sizeof shape));
          rc = CLI_FAILED;
        }
    }
    long chunk = a->chunk;
    if (!chunk && port_rank >= 1 && port[port_rank - 1] > 0) chunk = (long)port[port_rank - 1];
    if (rc == CLI_OK && !chunk)
      rc = cli_usage_error("stream", "the audio input's length is not fixed by the model: give --chunk N");
    dims[rank - 1] = chunk;
    if (rc == CLI_OK && !(samples = calloc((size_t)chunk, sizeof *samples))) rc = CLI_FAILED;
  }
  uint64_t calls = 0;
  const size_t chunk = rc == CLI_OK ? (size_t)dims[rank - 1] : 0;
  for (size_t got; rc == CLI_OK && (got = wav_read(&w, samples, chunk)) > 0; ++calls) {
    if (got < chunk) memset(samples + got, 0, (chunk - got) * sizeof *samples);
    hetero_tensor_t* t = NULL;
    hetero_status status = hetero_tensor_wrap(&t, HETERO_DTYPE_FLOAT32, dims, rank, samples, chunk * sizeof *samples);
    if (!status) status = hetero_infer_request_set_input(request, (size_t)audio, t);
    hetero_tensor_release(t);
    const bool last = w.remaining < w.bits / 8;
    const uint32_t flags = (calls == 0 ? HETERO_SEQUENCE_START : 0) | (last ? HETERO_SEQUENCE_END : 0);
    if (!status) status = hetero_infer_request_set_sequence(request, 1, flags);
    if (!status) status = hetero_infer_request_infer(request);
    if (status) {
      char what[64];
      snprintf(what, sizeof what, "chunk %" PRIu64, calls);
      rc = cli_call_failed(what);
    } else {
      print_outputs(compiled, request, (double)(calls * chunk) / (w.rate ? w.rate : 1));
    }
  }
  if (rc == CLI_OK && calls == 0) cli_warning("%s has no samples", a->wav);
  free(samples);
  free(given);
  fclose(w.file);
  hetero_infer_request_release(request);
  hetero_compiled_model_release(compiled);
  hetero_core_release(core);
  return rc;
}

int cmd_stream(int argc, char** argv) {
  stream_args a;
  memset(&a, 0, sizeof a);
  int rc = cli_parse(&kCommand, argc, argv, take, &a);
  if (rc == CLI_OK && (!a.model || !a.wav)) rc = cli_usage_error("stream", "MODEL and AUDIO.wav are required");
  if (rc == CLI_OK) rc = stream(&a);
  cli_strings_free(&a.inputs);
  cli_strings_free(&a.scalars);
  return rc == CLI_HELP ? CLI_OK : rc;
}
