/* The C API's test, in plain C11 as an embedding program would be written: every
 * entry point, each error path with its status (and the exact text for the C
 * layer's own messages, as docs/errors.md lists them), the borrow/release
 * contract, and the seed network against a reference computed here in double from
 * the safetensors file read byte by byte (not through Ember's loader).
 * Usage: test-capi <path to tests/nn/data> */
#include <ember_c.h>

#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- a tiny harness ---- */

static int checks, failures;

#define CHECK(cond)                                                             \
  do {                                                                          \
    ++checks;                                                                   \
    if (!(cond)) {                                                              \
      ++failures;                                                               \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
    }                                                                           \
  } while (0)

/* A call that must return `expected`; on a mismatch the last error is printed. */
#define CHECK_STATUS(call, expected)                                                                   \
  do {                                                                                                 \
    ember_status got_ = (call);                                                                        \
    ++checks;                                                                                          \
    if (got_ != (expected)) {                                                                          \
      ++failures;                                                                                      \
      fprintf(stderr, "%s:%d: %s returned %s, expected %s (last error: %s)\n", __FILE__, __LINE__,     \
              #call, ember_status_name(got_), ember_status_name(expected), ember_last_error());        \
    }                                                                                                  \
  } while (0)

#define CHECK_OK(call) CHECK_STATUS(call, EMBER_OK)

/* The last error's text, compared exactly. */
#define CHECK_MESSAGE(text)                                                                            \
  do {                                                                                                 \
    ++checks;                                                                                          \
    if (strcmp(ember_last_error(), (text)) != 0) {                                                     \
      ++failures;                                                                                      \
      fprintf(stderr, "%s:%d: last error is\n  \"%s\"\nexpected\n  \"%s\"\n", __FILE__, __LINE__,       \
              ember_last_error(), (text));                                                             \
    }                                                                                                  \
  } while (0)

/* A pointer no call hands out: an output set to it must come back NULL on failure. */
static ember_tensor* const kPoison = (ember_tensor*)&checks;

/* ---- helpers ---- */

/* Deterministic values in [-1, 1): a 32-bit LCG. */
static void fill_pseudo_random(float* x, size_t n, uint32_t seed) {
  uint32_t s = seed;
  for (size_t i = 0; i < n; ++i) {
    s = s * 1664525u + 1013904223u;
    x[i] = (float)((double)(s >> 8) / (double)(1u << 24) * 2.0 - 1.0);
  }
}

static ember_tensor* make_f32(const float* data, const int64_t* shape, size_t ndim) {
  ember_tensor* t = NULL;
  CHECK_OK(ember_tensor_create(data, shape, ndim, EMBER_DTYPE_FLOAT32, &t));
  return t;
}

/* The tensor's device, as a string the caller does not free. */
static const char* device_of(const ember_tensor* t) {
  static char buf[32];
  if (ember_tensor_device(t, buf, sizeof buf) != EMBER_OK) return "(error)";
  return buf;
}

/* ---- status, version, build, threads, dtypes ---- */

static void* read_error_on_new_thread(void* arg) {
  const char** seen = (const char**)arg;
  *seen = ember_last_error(); /* this thread has failed nothing yet */
  return NULL;
}

static void test_status(void) {
  static const char* const names[] = {
      "EMBER_OK", "EMBER_ERROR_DEVICE", "EMBER_ERROR_DTYPE", "EMBER_ERROR_SHAPE", "EMBER_ERROR_INDEX",
      "EMBER_ERROR_VALUE", "EMBER_ERROR_NOT_IMPLEMENTED", "EMBER_ERROR_OUT_OF_MEMORY", "EMBER_ERROR_CUDA",
      "EMBER_ERROR_FORMAT", "EMBER_ERROR_DIST", "EMBER_ERROR_INVALID_ARGUMENT", "EMBER_ERROR_INTERNAL"};
  int i;
  for (i = 0; i <= 12; ++i) CHECK(strcmp(ember_status_name((ember_status)i), names[i]) == 0);
  CHECK(EMBER_OK == 0 && EMBER_ERROR_INTERNAL == 12);
  CHECK(strcmp(ember_status_name((ember_status)13), "EMBER_STATUS_UNKNOWN") == 0);
  CHECK(strcmp(ember_status_name((ember_status)-1), "EMBER_STATUS_UNKNOWN") == 0);

  /* Nothing has failed yet in this process. */
  CHECK(strcmp(ember_last_error(), "") == 0);
  CHECK_STATUS(ember_set_num_threads(0), EMBER_ERROR_INVALID_ARGUMENT);
  CHECK_MESSAGE("ember_set_num_threads: n must be at least 1, got 0");
  /* A success does not clear it; another thread has its own. */
  CHECK(ember_get_num_threads() >= 1);
  CHECK_MESSAGE("ember_set_num_threads: n must be at least 1, got 0");
  {
    pthread_t th;
    const char* seen = NULL;
    CHECK(pthread_create(&th, NULL, read_error_on_new_thread, (void*)&seen) == 0);
    pthread_join(th, NULL);
    CHECK(seen != NULL && strcmp(seen, "") == 0);
  }
}

static void test_version_and_build(void) {
  char expected[64];
  const char* config = ember_build_config();
  const char* isa;
  CHECK(strcmp(ember_version(), EXPECTED_VERSION) == 0);
  CHECK(ember_version_major() == EXPECTED_VERSION_MAJOR);
  CHECK(ember_version_minor() == EXPECTED_VERSION_MINOR);
  CHECK(ember_version_patch() == EXPECTED_VERSION_PATCH);

  /* The backends as Meson configured them, then the kernels' instruction set. */
  snprintf(expected, sizeof expected, "%s cpu_kernels=", EXPECTED_BACKENDS);
  CHECK(strncmp(config, expected, strlen(expected)) == 0);
  isa = config + strlen(expected);
  CHECK(strcmp(isa, "generic") == 0 || strcmp(isa, "avx2") == 0 || strcmp(isa, "avx512") == 0 ||
        strcmp(isa, "avx512_vnni") == 0 || strcmp(isa, "avx512_bf16") == 0);
  CHECK(strchr(config, '\n') == NULL);
#if defined(__x86_64__)
  /* Run-time choice: the widest level whose features the CPU lists (Linux's
   * /proc/cpuinfo leaves out features the OS does not enable). */
  {
    FILE* f = fopen("/proc/cpuinfo", "r");
    char line[8192];
    if (f) {
      while (fgets(line, sizeof line, f))
        if (strncmp(line, "flags", 5) == 0) break;
      fclose(f);
#define HAS(flag) (strstr(line, " " flag " ") != NULL || strstr(line, " " flag "\n") != NULL)
      {
        int avx2 = HAS("avx2") && HAS("fma") && HAS("f16c");
        int avx512 = avx2 && HAS("avx512f") && HAS("avx512vl") && HAS("avx512bw") && HAS("avx512dq");
        int vnni = avx512 && HAS("avx512_vnni");
        int bf16 = vnni && HAS("avx512_bf16");
        const char* widest = bf16   ? "avx512_bf16"
                             : vnni ? "avx512_vnni"
                             : avx512 ? "avx512"
                             : avx2   ? "avx2"
                                      : "generic";
        CHECK(strcmp(isa, widest) == 0);
        if (strcmp(isa, widest) != 0) fprintf(stderr, "  cpu_kernels=%s, /proc/cpuinfo says %s\n", isa, widest);
      }
#undef HAS
    }
  }
#endif
}

static void test_threads(void) {
  int before = ember_get_num_threads();
  CHECK(before >= 1);
  CHECK_OK(ember_set_num_threads(3));
  CHECK(ember_get_num_threads() == 3);
  CHECK_STATUS(ember_set_num_threads(-2), EMBER_ERROR_INVALID_ARGUMENT);
  CHECK_MESSAGE("ember_set_num_threads: n must be at least 1, got -2");
  CHECK(ember_get_num_threads() == 3); /* unchanged by the failed call */
  CHECK_OK(ember_set_num_threads(before));
  CHECK(ember_get_num_threads() == before);
}

/* The CPU memory limit: a tensor past it is refused with EMBER_ERROR_OUT_OF_MEMORY
 * and the documented message, and nothing stays charged. */
static void test_memory_limit(void) {
  const size_t before = ember_cpu_memory_limit(), held = ember_cpu_memory_allocated();
  const int64_t shape[1] = {1 << 20}; /* 4 MiB of float32 */
  ember_tensor* t = NULL;
  ember_tensor* bad = kPoison;
  char want[256];
  CHECK_OK(ember_tensor_create(NULL, shape, 1, EMBER_DTYPE_FLOAT32, &t));
  CHECK(ember_cpu_memory_allocated() == held + 4194304);
  ember_set_cpu_memory_limit(held + 4194304 + 1000);
  CHECK(ember_cpu_memory_limit() == held + 4194304 + 1000);
  CHECK_STATUS(ember_tensor_create(NULL, shape, 1, EMBER_DTYPE_FLOAT32, &bad), EMBER_ERROR_OUT_OF_MEMORY);
  snprintf(want, sizeof want,
           "CPU out of memory: tried to allocate 4194304 bytes with %zu bytes already allocated, over the limit "
           "of %zu bytes (cpu_set_memory_limit)",
           held + 4194304, held + 4194304 + 1000);
  CHECK_MESSAGE(want);
  CHECK(bad == NULL);
  CHECK(ember_cpu_memory_allocated() == held + 4194304);
  ember_tensor_free(t);
  CHECK(ember_cpu_memory_allocated() == held);
  CHECK_OK(ember_tensor_create(NULL, shape, 1, EMBER_DTYPE_FLOAT32, &t)); /* fits once freed */
  ember_tensor_free(t);
  ember_set_cpu_memory_limit(before);
}

static void test_dtypes(void) {
  CHECK(ember_dtype_size(EMBER_DTYPE_FLOAT32) == 4);
  CHECK(ember_dtype_size(EMBER_DTYPE_FLOAT64) == 8);
  CHECK(ember_dtype_size(EMBER_DTYPE_FLOAT16) == 2);
  CHECK(ember_dtype_size(EMBER_DTYPE_BFLOAT16) == 2);
  CHECK(ember_dtype_size(EMBER_DTYPE_INT8) == 1);
  CHECK(ember_dtype_size(EMBER_DTYPE_UINT8) == 1);
  CHECK(ember_dtype_size(EMBER_DTYPE_INT32) == 4);
  CHECK(ember_dtype_size(EMBER_DTYPE_INT64) == 8);
  CHECK(ember_dtype_size(EMBER_DTYPE_BOOL) == 1);
  CHECK(ember_dtype_size(EMBER_DTYPE_UNDEFINED) == 0);
  CHECK(ember_dtype_size((ember_dtype)9) == 0);
}

/* ---- tensors ---- */

static void test_tensor_create(void) {
  float values[6] = {0, 1, 2, 3, 4, 5}, out_values[6];
  const int64_t shape[2] = {2, 3};
  int64_t got_shape[4] = {0, 0, 0, 0};
  ember_tensor* t = make_f32(values, shape, 2);
  ember_tensor* z = NULL;
  ember_tensor* bad = kPoison;

  CHECK(ember_tensor_ndim(t) == 2);
  CHECK_OK(ember_tensor_shape(t, got_shape, 4));
  CHECK(got_shape[0] == 2 && got_shape[1] == 3 && got_shape[2] == 0);
  CHECK_OK(ember_tensor_shape(t, got_shape, 2)); /* exactly enough */
  CHECK(ember_tensor_numel(t) == 6);
  CHECK(ember_tensor_dtype(t) == EMBER_DTYPE_FLOAT32);
  CHECK(strcmp(device_of(t), "cpu") == 0);

  /* The data was copied: changing the caller's buffer does not change the tensor. */
  values[0] = 100;
  values[5] = -7;
  CHECK_OK(ember_tensor_copy_to_buffer(t, out_values, sizeof out_values));
  CHECK(out_values[0] == 0 && out_values[1] == 1 && out_values[5] == 5);

  /* NULL data gives zeros. */
  {
    const int64_t n4[1] = {4};
    int64_t zeros[4] = {9, 9, 9, 9};
    CHECK_OK(ember_tensor_create(NULL, n4, 1, EMBER_DTYPE_INT64, &z));
    CHECK(ember_tensor_dtype(z) == EMBER_DTYPE_INT64);
    CHECK_OK(ember_tensor_copy_to_buffer(z, zeros, sizeof zeros));
    CHECK(zeros[0] == 0 && zeros[1] == 0 && zeros[2] == 0 && zeros[3] == 0);
    ember_tensor_free(z);
  }
  /* ndim 0 with no shape: a 0-dim tensor of one element. */
  {
    const double pi = 3.25;
    double back = 0;
    CHECK_OK(ember_tensor_create(&pi, NULL, 0, EMBER_DTYPE_FLOAT64, &z));
    CHECK(ember_tensor_ndim(z) == 0 && ember_tensor_numel(z) == 1);
    CHECK_OK(ember_tensor_shape(z, NULL, 0));
    CHECK_OK(ember_tensor_copy_to_buffer(z, &back, sizeof back));
    CHECK(back == 3.25);
    ember_tensor_free(z);
  }
  /* Each dtype's bytes come back as given. */
  {
    static const unsigned char bytes[24] = {0, 0, 128, 63, 2, 3, 4, 5, 6, 7, 8, 9,
                                            10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21};
    static const unsigned char bools[24] = {1, 0, 1, 0, 0, 1, 1, 0, 0, 0, 0, 1, 1, 1, 0, 1, 0, 1, 0, 0, 1, 0, 1, 1};
    unsigned char back[24];
    int d;
    for (d = EMBER_DTYPE_FLOAT32; d <= EMBER_DTYPE_BOOL; ++d) {
      const size_t size = ember_dtype_size((ember_dtype)d);
      const int64_t n[1] = {(int64_t)(24 / size)};
      const unsigned char* given = d == EMBER_DTYPE_BOOL ? bools : bytes; /* a bool byte is 0 or 1 */
      memset(back, 0xAB, sizeof back);
      CHECK_OK(ember_tensor_create(given, n, 1, (ember_dtype)d, &z));
      CHECK(ember_tensor_dtype(z) == (ember_dtype)d);
      CHECK(ember_tensor_numel(z) == n[0]);
      CHECK_OK(ember_tensor_copy_to_buffer(z, back, sizeof back));
      CHECK(memcmp(back, given, sizeof back) == 0);
      ember_tensor_free(z);
    }
  }

  /* Errors of the C layer, with *out set to NULL. */
  CHECK_STATUS(ember_tensor_create(values, shape, 2, EMBER_DTYPE_FLOAT32, NULL), EMBER_ERROR_INVALID_ARGUMENT);
  CHECK_MESSAGE("ember_tensor_create: out is NULL");
  CHECK_STATUS(ember_tensor_create(values, NULL, 2, EMBER_DTYPE_FLOAT32, &bad), EMBER_ERROR_INVALID_ARGUMENT);
  CHECK_MESSAGE("ember_tensor_create: shape is NULL");
  CHECK(bad == NULL);
  bad = kPoison;
  CHECK_STATUS(ember_tensor_create(values, shape, 2, (ember_dtype)42, &bad), EMBER_ERROR_INVALID_ARGUMENT);
  CHECK_MESSAGE("ember_tensor_create: invalid dtype 42");
  CHECK(bad == NULL);
  CHECK_STATUS(ember_tensor_create(values, shape, 2, EMBER_DTYPE_UNDEFINED, &bad), EMBER_ERROR_INVALID_ARGUMENT);
  CHECK_MESSAGE("ember_tensor_create: invalid dtype -1");
  /* The library's own check of the shape. */
  {
    const int64_t negative[2] = {2, -1};
    CHECK_STATUS(ember_tensor_create(NULL, negative, 2, EMBER_DTYPE_FLOAT32, &bad), EMBER_ERROR_VALUE);
    CHECK_MESSAGE("empty: negative dimension -1 in shape [2, -1]");
  }
  {
    const int64_t huge[2] = {(int64_t)1 << 62, 8};
    CHECK_STATUS(ember_tensor_create(NULL, huge, 2, EMBER_DTYPE_FLOAT32, &bad), EMBER_ERROR_SHAPE);
    CHECK_MESSAGE("shape [4611686018427387904, 8] has more elements than int64 can count");
    CHECK(bad == NULL);
    CHECK_STATUS(ember_tensor_create(NULL, huge, 1, EMBER_DTYPE_FLOAT32, &bad), EMBER_ERROR_OUT_OF_MEMORY);
    CHECK_MESSAGE("tensor of shape [4611686018427387904] and dtype float32 is too large to allocate "
                  "(its size in bytes overflows 64 bits)");
    CHECK(bad == NULL);
  }

  CHECK_STATUS(ember_tensor_shape(t, got_shape, 1), EMBER_ERROR_INVALID_ARGUMENT);
  CHECK_MESSAGE("ember_tensor_shape: capacity 1 is less than ndim 2");
  CHECK_STATUS(ember_tensor_shape(t, NULL, 2), EMBER_ERROR_INVALID_ARGUMENT);
  CHECK_MESSAGE("ember_tensor_shape: shape is NULL");
  CHECK_STATUS(ember_tensor_shape(NULL, got_shape, 4), EMBER_ERROR_INVALID_ARGUMENT);
  CHECK_MESSAGE("ember_tensor_shape: tensor is NULL");
  {
    char small[3];
    CHECK_STATUS(ember_tensor_device(t, small, sizeof small), EMBER_ERROR_INVALID_ARGUMENT);
    CHECK_MESSAGE("ember_tensor_device: capacity 3 is less than the 4 bytes of \"cpu\"");
    CHECK_STATUS(ember_tensor_device(t, NULL, 16), EMBER_ERROR_INVALID_ARGUMENT);
    CHECK_MESSAGE("ember_tensor_device: buf is NULL");
    CHECK_STATUS(ember_tensor_device(NULL, small, sizeof small), EMBER_ERROR_INVALID_ARGUMENT);
    CHECK_MESSAGE("ember_tensor_device: tensor is NULL");
  }
  CHECK_STATUS(ember_tensor_copy_to_buffer(t, out_values, 20), EMBER_ERROR_INVALID_ARGUMENT);
  CHECK_MESSAGE("ember_tensor_copy_to_buffer: nbytes is 20 but the tensor holds 24 bytes (6 elements of float32)");
  CHECK_STATUS(ember_tensor_copy_to_buffer(t, NULL, 24), EMBER_ERROR_INVALID_ARGUMENT);
  CHECK_MESSAGE("ember_tensor_copy_to_buffer: dst is NULL");
  CHECK_STATUS(ember_tensor_copy_to_buffer(NULL, out_values, 24), EMBER_ERROR_INVALID_ARGUMENT);
  CHECK_MESSAGE("ember_tensor_copy_to_buffer: tensor is NULL");
  {
    const int64_t empty_shape[2] = {0, 3};
    CHECK_OK(ember_tensor_create(NULL, empty_shape, 2, EMBER_DTYPE_FLOAT32, &z));
    CHECK(ember_tensor_numel(z) == 0);
    CHECK_OK(ember_tensor_copy_to_buffer(z, NULL, 0)); /* nothing to copy, no buffer needed */
    ember_tensor_free(z);
  }

  /* Getters on NULL. */
  CHECK(ember_tensor_ndim(NULL) == 0);
  CHECK(ember_tensor_numel(NULL) == 0);
  CHECK(ember_tensor_dtype(NULL) == EMBER_DTYPE_UNDEFINED);
  ember_tensor_free(NULL);
  ember_tensor_free(t);
}

static void test_tensor_to(void) {
  const float values[4] = {1.5f, -2, 3, 4};
  const int64_t shape[2] = {2, 2};
  float back[4];
  ember_tensor* t = make_f32(values, shape, 2);
  ember_tensor* e = NULL;
  ember_tensor* c = NULL;
  ember_tensor* bad = kPoison;

  /* emu: an accelerator emulated in host memory, a real second device. */
  CHECK_OK(ember_tensor_to(t, "emu:1", &e));
  CHECK(strcmp(device_of(e), "emu:1") == 0);
  CHECK(ember_tensor_numel(e) == 4 && ember_tensor_dtype(e) == EMBER_DTYPE_FLOAT32);
  memset(back, 0, sizeof back);
  CHECK_OK(ember_tensor_copy_to_buffer(e, back, sizeof back)); /* from a device */
  CHECK(memcmp(back, values, sizeof back) == 0);
  CHECK_OK(ember_tensor_to(e, "cpu", &c));
  CHECK(strcmp(device_of(c), "cpu") == 0);
  memset(back, 0, sizeof back);
  CHECK_OK(ember_tensor_copy_to_buffer(c, back, sizeof back));
  CHECK(memcmp(back, values, sizeof back) == 0);
  ember_tensor_free(c);
  ember_tensor_free(e);

  /* meta has shapes but no data. */
  CHECK_OK(ember_tensor_to(t, "meta", &e));
  CHECK(strcmp(device_of(e), "meta") == 0);
  CHECK_STATUS(ember_tensor_copy_to_buffer(e, back, sizeof back), EMBER_ERROR_DEVICE);
  CHECK_MESSAGE("Cannot copy out of meta tensor; no data!");
  ember_tensor_free(e);

  /* Malformed device strings are device errors, with the parser's message. */
  CHECK_STATUS(ember_tensor_to(t, "cuda:banana", &bad), EMBER_ERROR_DEVICE);
  CHECK_MESSAGE("invalid device string: 'cuda:banana' (expected cpu, cuda, cuda:N, meta, emu or emu:N)");
  CHECK(bad == NULL);
  CHECK_STATUS(ember_tensor_to(t, "tpu", &bad), EMBER_ERROR_DEVICE);
  CHECK_MESSAGE("invalid device string: 'tpu' (expected cpu, cuda, cuda:N, meta, emu or emu:N)");
  CHECK_STATUS(ember_tensor_to(t, "emu:2", &bad), EMBER_ERROR_DEVICE);
  CHECK_MESSAGE("emu: invalid device ordinal 2 (2 devices)");
  CHECK_STATUS(ember_tensor_to(t, NULL, &bad), EMBER_ERROR_INVALID_ARGUMENT);
  CHECK_MESSAGE("ember_tensor_to: device is NULL");
  CHECK_STATUS(ember_tensor_to(NULL, "cpu", &bad), EMBER_ERROR_INVALID_ARGUMENT);
  CHECK_MESSAGE("ember_tensor_to: tensor is NULL");
  CHECK(bad == NULL);
  CHECK_STATUS(ember_tensor_to(t, "cpu", NULL), EMBER_ERROR_INVALID_ARGUMENT);
  CHECK_MESSAGE("ember_tensor_to: out is NULL");
  ember_tensor_free(t);
}

/* ---- borrowing caller memory ---- */

struct release_log {
  int calls;
  void* data;
};

static void count_release(void* data, void* user) {
  struct release_log* log = (struct release_log*)user;
  ++log->calls;
  log->data = data;
}

static void test_tensor_borrow(void) {
  float buffer[6] = {1, 2, 3, 4, 5, 6}, back[6];
  const int64_t shape[2] = {3, 2};
  struct release_log log = {0, NULL};
  ember_tensor* b = NULL;
  ember_tensor* alias = NULL;
  ember_tensor* copy = NULL;
  ember_tensor* bad = kPoison;

  CHECK_OK(ember_tensor_borrow(buffer, shape, 2, EMBER_DTYPE_FLOAT32, count_release, &log, &b));
  CHECK(ember_tensor_ndim(b) == 2 && ember_tensor_numel(b) == 6);
  /* No copy: the tensor sees writes to the buffer. */
  buffer[4] = 50;
  CHECK_OK(ember_tensor_copy_to_buffer(b, back, sizeof back));
  CHECK(back[4] == 50 && back[0] == 1);

  CHECK_OK(ember_tensor_to(b, "cpu", &alias)); /* already there: shares the buffer */
  CHECK_OK(ember_tensor_to(b, "emu:0", &copy)); /* a copy with memory of its own */
  ember_tensor_free(b);
  CHECK(log.calls == 0); /* `alias` still views the buffer */
  buffer[0] = -1;
  CHECK_OK(ember_tensor_copy_to_buffer(alias, back, sizeof back));
  CHECK(back[0] == -1);
  ember_tensor_free(alias);
  CHECK(log.calls == 1 && log.data == buffer);
  ember_tensor_free(copy);
  CHECK(log.calls == 1); /* exactly once */
  memset(back, 0, sizeof back);

  /* release may be NULL: the caller frees the buffer after the last tensor. */
  CHECK_OK(ember_tensor_borrow(buffer, shape, 2, EMBER_DTYPE_INT32, NULL, NULL, &b));
  CHECK(ember_tensor_dtype(b) == EMBER_DTYPE_INT32);
  ember_tensor_free(b);

  /* A failed borrow never calls release: the buffer stays the caller's. */
  log.calls = 0;
  CHECK_STATUS(ember_tensor_borrow(NULL, shape, 2, EMBER_DTYPE_FLOAT32, count_release, &log, &bad),
               EMBER_ERROR_VALUE);
  CHECK_MESSAGE("from_blob: data is null but the shape has elements");
  CHECK(bad == NULL);
  CHECK_STATUS(ember_tensor_borrow(buffer, shape, 2, (ember_dtype)77, count_release, &log, &bad),
               EMBER_ERROR_INVALID_ARGUMENT);
  CHECK_MESSAGE("ember_tensor_borrow: invalid dtype 77");
  CHECK_STATUS(ember_tensor_borrow(buffer, NULL, 2, EMBER_DTYPE_FLOAT32, count_release, &log, &bad),
               EMBER_ERROR_INVALID_ARGUMENT);
  CHECK_MESSAGE("ember_tensor_borrow: shape is NULL");
  CHECK_STATUS(ember_tensor_borrow(buffer, shape, 2, EMBER_DTYPE_FLOAT32, count_release, &log, NULL),
               EMBER_ERROR_INVALID_ARGUMENT);
  CHECK_MESSAGE("ember_tensor_borrow: out is NULL");
  CHECK(log.calls == 0);
}

/* ---- the seed network, and an independent reference for it ---- */

/* The whole file, or NULL. */
static unsigned char* read_file(const char* path, size_t* size) {
  FILE* f = fopen(path, "rb");
  unsigned char* bytes;
  long n;
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  n = ftell(f);
  fseek(f, 0, SEEK_SET);
  bytes = (unsigned char*)malloc(n > 0 ? (size_t)n : 1);
  if (bytes && fread(bytes, 1, (size_t)n, f) != (size_t)n) {
    free(bytes);
    bytes = NULL;
  }
  fclose(f);
  *size = (size_t)n;
  return bytes;
}

/* The F32 tensor `name` of a safetensors file, as `count` doubles (malloc'd), found
 * by reading the JSON header's text: {"name":{"dtype":"F32","shape":[...],
 * "data_offsets":[begin,end]}, ...}. NULL when absent or not as expected. */
static double* safetensors_f32(const unsigned char* file, size_t size, const char* name, size_t count) {
  uint64_t header_len = 0;
  char key[64], *header, *entry, *entry_end, *offsets;
  unsigned long long begin, end;
  double* values = NULL;
  size_t i;
  int k;
  if (size < 8) return NULL;
  for (k = 7; k >= 0; --k) header_len = header_len << 8 | file[k]; /* little-endian */
  if (header_len > size - 8) return NULL;
  header = (char*)malloc((size_t)header_len + 1);
  memcpy(header, file + 8, (size_t)header_len);
  header[header_len] = '\0';
  snprintf(key, sizeof key, "\"%s\":{", name);
  entry = strstr(header, key);
  entry_end = entry ? strchr(entry, '}') : NULL;
  offsets = entry ? strstr(entry, "\"data_offsets\":[") : NULL;
  if (entry && entry_end && offsets && offsets < entry_end && strstr(entry, "\"dtype\":\"F32\"") < entry_end &&
      sscanf(offsets, "\"data_offsets\":[%llu,%llu]", &begin, &end) == 2 && end - begin == count * 4 &&
      8 + header_len + end <= size) {
    const unsigned char* data = file + 8 + header_len + begin;
    values = (double*)malloc(count * sizeof(double));
    for (i = 0; i < count; ++i) {
      float f;
      memcpy(&f, data + 4 * i, 4); /* the file is little-endian, as x86 and ARM hosts are */
      values[i] = f;
    }
  }
  free(header);
  return values;
}

struct seed_weights {
  double *conv1_w, *conv1_b, *conv2_w, *conv2_b, *fc1_w, *fc1_b, *fc2_w, *fc2_b, *out_w, *out_b;
};

static int load_seed_weights(const char* path, struct seed_weights* w) {
  size_t size = 0;
  unsigned char* file = read_file(path, &size);
  if (!file) return 0;
  w->conv1_w = safetensors_f32(file, size, "conv1.weight", 6 * 1 * 5 * 5);
  w->conv1_b = safetensors_f32(file, size, "conv1.bias", 6);
  w->conv2_w = safetensors_f32(file, size, "conv2.weight", 12 * 6 * 5 * 5);
  w->conv2_b = safetensors_f32(file, size, "conv2.bias", 12);
  w->fc1_w = safetensors_f32(file, size, "fc1.weight", 120 * 192);
  w->fc1_b = safetensors_f32(file, size, "fc1.bias", 120);
  w->fc2_w = safetensors_f32(file, size, "fc2.weight", 60 * 120);
  w->fc2_b = safetensors_f32(file, size, "fc2.bias", 60);
  w->out_w = safetensors_f32(file, size, "out.weight", 10 * 60);
  w->out_b = safetensors_f32(file, size, "out.bias", 10);
  free(file);
  return w->conv1_w && w->conv1_b && w->conv2_w && w->conv2_b && w->fc1_w && w->fc1_b && w->fc2_w && w->fc2_b &&
         w->out_w && w->out_b;
}

static void free_seed_weights(struct seed_weights* w) {
  free(w->conv1_w); free(w->conv1_b); free(w->conv2_w); free(w->conv2_b); free(w->fc1_w);
  free(w->fc1_b); free(w->fc2_w); free(w->fc2_b); free(w->out_w); free(w->out_b);
}

/* 5x5 "valid" convolution, then ReLU, then 2x2 max pooling:
 * in [cin][h][h] -> out [cout][(h-4)/2][(h-4)/2]. */
static void conv_relu_pool(const double* in, int cin, int h, const double* w, const double* b, int cout,
                           double* out) {
  const int hc = h - 4, hp = hc / 2;
  int o, y, x, c, i, j;
  for (o = 0; o < cout; ++o)
    for (y = 0; y < hp; ++y)
      for (x = 0; x < hp; ++x) {
        double best = 0; /* after ReLU every value is >= 0 */
        int dy, dx;
        for (dy = 0; dy < 2; ++dy)
          for (dx = 0; dx < 2; ++dx) {
            const int yy = 2 * y + dy, xx = 2 * x + dx;
            double s = b[o];
            for (c = 0; c < cin; ++c)
              for (i = 0; i < 5; ++i)
                for (j = 0; j < 5; ++j)
                  s += w[((o * cin + c) * 5 + i) * 5 + j] * in[(c * h + yy + i) * h + xx + j];
            if (s > best) best = s;
          }
        out[(o * hp + y) * hp + x] = best;
      }
}

/* y = W x + b, with ReLU when asked. W is [n_out][n_in]. */
static void linear(const double* x, int n_in, const double* w, const double* b, int n_out, int relu, double* y) {
  int o, i;
  for (o = 0; o < n_out; ++o) {
    double s = b[o];
    for (i = 0; i < n_in; ++i) s += w[o * n_in + i] * x[i];
    y[o] = relu && s < 0 ? 0 : s;
  }
}

/* The seed network on one [1][28][28] image: logits[10]. */
static void seed_forward(const struct seed_weights* w, const float* image, double* logits) {
  double in[28 * 28], a1[6 * 12 * 12], a2[12 * 4 * 4], h1[120], h2[60];
  int i;
  for (i = 0; i < 28 * 28; ++i) in[i] = image[i];
  conv_relu_pool(in, 1, 28, w->conv1_w, w->conv1_b, 6, a1);
  conv_relu_pool(a1, 6, 12, w->conv2_w, w->conv2_b, 12, a2);
  linear(a2, 192, w->fc1_w, w->fc1_b, 120, 1, h1); /* a2 is already flattened as [c][y][x] */
  linear(h1, 120, w->fc2_w, w->fc2_b, 60, 1, h2);
  linear(h2, 60, w->out_w, w->out_b, 10, 0, logits);
}

#define BATCH 3
#define IMAGE (28 * 28)

static ember_tensor* run_seed(ember_model* model, const ember_tensor* input) {
  ember_tensor* out = NULL;
  CHECK_OK(ember_model_run(model, &input, 1, &out, 1));
  return out;
}

/* The model's logits for `images` against the C reference, within 1e-4. */
static void check_against_reference(ember_model* model, const struct seed_weights* w, const float* images,
                                    const char* input_device, const char* model_device) {
  const int64_t shape[4] = {BATCH, 1, 28, 28};
  float logits[BATCH * 10];
  double expected[10], worst = 0;
  int n, k;
  int64_t out_shape[2] = {0, 0};
  ember_tensor* input = make_f32(images, shape, 4);
  ember_tensor* moved = NULL;
  ember_tensor* out;
  if (strcmp(input_device, "cpu") != 0) {
    CHECK_OK(ember_tensor_to(input, input_device, &moved));
    ember_tensor_free(input);
    input = moved;
  }
  out = run_seed(model, input);
  CHECK_OK(ember_tensor_shape(out, out_shape, 2));
  CHECK(out_shape[0] == BATCH && out_shape[1] == 10);
  CHECK(ember_tensor_dtype(out) == EMBER_DTYPE_FLOAT32);
  CHECK(strcmp(device_of(out), model_device) == 0);
  CHECK_OK(ember_tensor_copy_to_buffer(out, logits, sizeof logits));
  for (n = 0; n < BATCH; ++n) {
    seed_forward(w, images + n * IMAGE, expected);
    for (k = 0; k < 10; ++k) {
      const double d = fabs(logits[n * 10 + k] - expected[k]);
      if (d > worst || d != d) worst = d;
    }
  }
  CHECK(worst <= 1e-4);
  if (!(worst <= 1e-4)) fprintf(stderr, "  seed network vs reference: max |difference| %g\n", worst);
  ember_tensor_free(out);
  ember_tensor_free(input);
}

static void test_model_errors(const char* weights, const char* other_file) {
  ember_model* m = (ember_model*)&checks;
  ember_tensor* out = kPoison;
  CHECK_STATUS(ember_model_load("resnet50", weights, "cpu", &m), EMBER_ERROR_VALUE);
  CHECK_MESSAGE("ember_model_load: unknown architecture 'resnet50' (known: seed_network)");
  CHECK(m == NULL);
  CHECK_STATUS(ember_model_load("seed_network", "/nonexistent/ember_capi_missing.safetensors", "cpu", &m),
               EMBER_ERROR_FORMAT);
  CHECK_MESSAGE("/nonexistent/ember_capi_missing.safetensors: cannot open for reading: No such file or directory");
  /* A valid safetensors file holding other tensors: the state dict does not fit. */
  CHECK_STATUS(ember_model_load("seed_network", other_file, "cpu", &m), EMBER_ERROR_VALUE);
  CHECK(strncmp(ember_last_error(), "Error(s) in loading state_dict for Network:", 43) == 0);
  CHECK_STATUS(ember_model_load("seed_network", weights, "tpu", &m), EMBER_ERROR_DEVICE);
  CHECK_MESSAGE("invalid device string: 'tpu' (expected cpu, cuda, cuda:N, meta, emu or emu:N)");
  CHECK_STATUS(ember_model_load(NULL, weights, "cpu", &m), EMBER_ERROR_INVALID_ARGUMENT);
  CHECK_MESSAGE("ember_model_load: architecture is NULL");
  CHECK_STATUS(ember_model_load("seed_network", NULL, "cpu", &m), EMBER_ERROR_INVALID_ARGUMENT);
  CHECK_MESSAGE("ember_model_load: weights_path is NULL");
  CHECK_STATUS(ember_model_load("seed_network", weights, "cpu", NULL), EMBER_ERROR_INVALID_ARGUMENT);
  CHECK_MESSAGE("ember_model_load: out is NULL");
  CHECK(m == NULL);

  CHECK(ember_model_num_inputs(NULL) == 0 && ember_model_num_outputs(NULL) == 0);
  CHECK_STATUS(ember_model_run(NULL, NULL, 1, &out, 1), EMBER_ERROR_INVALID_ARGUMENT);
  CHECK_MESSAGE("ember_model_run: model is NULL");
  CHECK(out == NULL);
  ember_model_free(NULL);
}

static void test_model_run_errors(ember_model* model) {
  const int64_t good[4] = {1, 1, 28, 28}, three_channels[4] = {1, 3, 28, 28};
  ember_tensor* x = NULL;
  ember_tensor* wrong = NULL;
  ember_tensor* outs[2] = {kPoison, kPoison};
  const ember_tensor* two[2];
  const ember_tensor* none[1] = {NULL};
  CHECK_OK(ember_tensor_create(NULL, good, 4, EMBER_DTYPE_FLOAT32, &x));
  two[0] = two[1] = x;

  CHECK_STATUS(ember_model_run(model, two, 2, outs, 1), EMBER_ERROR_INVALID_ARGUMENT);
  CHECK_MESSAGE("ember_model_run: n_inputs is 2 but the model takes 1 input");
  CHECK(outs[0] == NULL && outs[1] == kPoison);
  CHECK_STATUS(ember_model_run(model, two, 0, outs, 1), EMBER_ERROR_INVALID_ARGUMENT);
  CHECK_MESSAGE("ember_model_run: n_inputs is 0 but the model takes 1 input");
  outs[1] = kPoison;
  CHECK_STATUS(ember_model_run(model, two, 1, outs, 2), EMBER_ERROR_INVALID_ARGUMENT);
  CHECK_MESSAGE("ember_model_run: n_outputs is 2 but the model gives 1 output");
  CHECK(outs[0] == NULL && outs[1] == NULL);
  CHECK_STATUS(ember_model_run(model, none, 1, outs, 1), EMBER_ERROR_INVALID_ARGUMENT);
  CHECK_MESSAGE("ember_model_run: inputs[0] is NULL");
  CHECK_STATUS(ember_model_run(model, NULL, 1, outs, 1), EMBER_ERROR_INVALID_ARGUMENT);
  CHECK_MESSAGE("ember_model_run: inputs is NULL");
  CHECK_STATUS(ember_model_run(model, two, 1, NULL, 1), EMBER_ERROR_INVALID_ARGUMENT);
  CHECK_MESSAGE("ember_model_run: outputs is NULL");

  /* The library's errors for inputs the network cannot take. */
  CHECK_OK(ember_tensor_create(NULL, three_channels, 4, EMBER_DTYPE_FLOAT32, &wrong));
  outs[0] = kPoison;
  CHECK_STATUS(ember_model_run(model, (const ember_tensor* const*)&wrong, 1, outs, 1), EMBER_ERROR_SHAPE);
  CHECK_MESSAGE("Given groups=1, weight of size [6, 1, 5, 5], expected input[1, 3, 28, 28] to have 1 channels, "
                "but got 3 channels instead");
  CHECK(outs[0] == NULL);
  ember_tensor_free(wrong);
  CHECK_OK(ember_tensor_create(NULL, good, 4, EMBER_DTYPE_FLOAT64, &wrong));
  CHECK_STATUS(ember_model_run(model, (const ember_tensor* const*)&wrong, 1, outs, 1), EMBER_ERROR_DTYPE);
  CHECK_MESSAGE("conv2d: expected input, weight and bias to have the same dtype, but got float64, float32 and float32");
  ember_tensor_free(wrong);
  ember_tensor_free(x);
}

/* ---- several threads on one model ---- */

#define THREADS 4
#define RUNS 20

struct worker {
  ember_model* model;
  const ember_tensor* input;
  const float* expected; /* the serial run's logits */
  int errors, mismatches;
};

static void* worker_main(void* arg) {
  struct worker* w = (struct worker*)arg;
  float logits[2 * 10];
  int r;
  for (r = 0; r < RUNS; ++r) {
    ember_tensor* out = NULL;
    if (ember_model_run(w->model, &w->input, 1, &out, 1) != EMBER_OK ||
        ember_tensor_copy_to_buffer(out, logits, sizeof logits) != EMBER_OK)
      ++w->errors;
    else if (memcmp(logits, w->expected, sizeof logits) != 0)
      ++w->mismatches;
    ember_tensor_free(out);
  }
  return NULL;
}

static void test_model_threads(ember_model* model) {
  const int64_t shape[4] = {2, 1, 28, 28};
  static float images[THREADS][2 * IMAGE], serial[THREADS][2 * 10];
  ember_tensor* inputs[THREADS];
  struct worker workers[THREADS];
  pthread_t threads[THREADS];
  int i;
  for (i = 0; i < THREADS; ++i) {
    ember_tensor* out;
    fill_pseudo_random(images[i], 2 * IMAGE, 100u + (uint32_t)i);
    inputs[i] = make_f32(images[i], shape, 4);
    out = run_seed(model, inputs[i]);
    CHECK_OK(ember_tensor_copy_to_buffer(out, serial[i], sizeof serial[i]));
    ember_tensor_free(out);
  }
  for (i = 0; i < THREADS; ++i) {
    workers[i].model = model;
    workers[i].input = inputs[i];
    workers[i].expected = serial[i];
    workers[i].errors = workers[i].mismatches = 0;
    CHECK(pthread_create(&threads[i], NULL, worker_main, &workers[i]) == 0);
  }
  for (i = 0; i < THREADS; ++i) {
    pthread_join(threads[i], NULL);
    CHECK(workers[i].errors == 0);
    CHECK(workers[i].mismatches == 0);
    ember_tensor_free(inputs[i]);
  }
}

/* ---- CUDA, where a GPU is present ---- */

static void test_cuda(const char* weights, const struct seed_weights* w, const float* images) {
  const float values[3] = {1, 2, 3};
  const int64_t n3[1] = {3};
  float back[3] = {0, 0, 0};
  ember_tensor* t = make_f32(values, n3, 1);
  ember_tensor* g = NULL;
  ember_model* model = NULL;
  ember_status s = ember_tensor_to(t, "cuda", &g);
  if (strstr(ember_build_config(), "cuda=off") != NULL) {
    CHECK(s == EMBER_ERROR_DEVICE);
    CHECK_MESSAGE("CUDA is not available: Ember was built without CUDA support or no CUDA device is present");
    printf("capi: this build has no CUDA: CUDA part skipped\n");
  } else if (s != EMBER_OK) {
    CHECK(s == EMBER_ERROR_DEVICE);
    printf("capi: no CUDA device (%s): CUDA part skipped\n", ember_last_error());
  } else {
    CHECK(strcmp(device_of(g), "cuda:0") == 0);
    CHECK_OK(ember_tensor_copy_to_buffer(g, back, sizeof back));
    CHECK(memcmp(back, values, sizeof back) == 0);
    CHECK_OK(ember_model_load("seed_network", weights, "cuda", &model));
    check_against_reference(model, w, images, "cpu", "cuda:0"); /* input moved to the GPU */
    ember_model_free(model);
  }
  ember_tensor_free(g);
  ember_tensor_free(t);
}

int main(int argc, char** argv) {
  char weights[1024], other_file[1024];
  struct seed_weights w;
  static float images[BATCH * IMAGE];
  ember_model* model = NULL;
  if (argc != 2) {
    fprintf(stderr, "usage: %s <tests/nn/data>\n", argv[0]);
    return 1;
  }
  snprintf(weights, sizeof weights, "%s/safetensors_seed_net.safetensors", argv[1]);
  snprintf(other_file, sizeof other_file, "%s/safetensors_dtypes.safetensors", argv[1]);

  test_status(); /* first: it asserts that nothing has failed yet */
  test_version_and_build();
  test_threads();
  test_memory_limit();
  test_dtypes();
  test_tensor_create();
  test_tensor_to();
  test_tensor_borrow();
  test_model_errors(weights, other_file);

  memset(&w, 0, sizeof w);
  CHECK(load_seed_weights(weights, &w));
  fill_pseudo_random(images, BATCH * IMAGE, 7u);
  CHECK_OK(ember_model_load("seed_network", weights, "cpu", &model));
  if (model) {
    CHECK(ember_model_num_inputs(model) == 1 && ember_model_num_outputs(model) == 1);
    check_against_reference(model, &w, images, "cpu", "cpu");
    check_against_reference(model, &w, images, "emu:0", "cpu"); /* moved to the model's device */
    test_model_run_errors(model);
    test_model_threads(model);
    ember_model_free(model);
  }
  /* A model on another device: input from the CPU, output left on the device. */
  model = NULL;
  CHECK_OK(ember_model_load("seed_network", weights, "emu:1", &model));
  if (model) check_against_reference(model, &w, images, "cpu", "emu:1");
  ember_model_free(model);
  test_cuda(weights, &w, images);
  free_seed_weights(&w);

  printf("capi: %d checks, %d failures\n", checks, failures);
  return failures ? 1 : 0;
}
