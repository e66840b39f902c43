/* Ember's C API: tensors and built-in models behind opaque handles, for programs
 * written in C or in any language with a C foreign-function interface.
 *
 * It only translates to the C++ library: every behaviour is the library's.
 * Conventions (docs/capi.md has the full reference and an example):
 *   - Every function that can fail returns an ember_status; EMBER_OK is 0. On any
 *     other status, ember_last_error() gives the message and every output
 *     pointer (`out`, `outputs[i]`) has been set to NULL.
 *   - No C++ exception crosses this boundary.
 *   - A handle comes from one create/load function and is freed exactly once by
 *     its free function (NULL is accepted and ignored). Handles are independent:
 *     freeing a model does not invalidate tensors it produced.
 *   - Getters that cannot fail on a valid handle return their value directly and
 *     return 0 (or EMBER_DTYPE_UNDEFINED) for NULL.
 * Build: #include <ember_c.h> with -I<prefix>/include/ember, link -lember. */
#ifndef EMBER_C_H
#define EMBER_C_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__) || defined(__clang__)
#define EMBER_C_API __attribute__((visibility("default")))
#else
#define EMBER_C_API
#endif

/* ---- status ---- */

/* One code per class of ember::Error, and two of the C layer's own. */
typedef enum ember_status {
  EMBER_OK = 0,
  EMBER_ERROR_DEVICE = 1,           /* ember::DeviceError (also a malformed device string) */
  EMBER_ERROR_DTYPE = 2,            /* ember::DTypeError */
  EMBER_ERROR_SHAPE = 3,            /* ember::ShapeError */
  EMBER_ERROR_INDEX = 4,            /* ember::IndexError */
  EMBER_ERROR_VALUE = 5,            /* ember::ValueError */
  EMBER_ERROR_NOT_IMPLEMENTED = 6,  /* ember::NotImplementedError */
  EMBER_ERROR_OUT_OF_MEMORY = 7,    /* ember::OutOfMemoryError, std::bad_alloc */
  EMBER_ERROR_CUDA = 8,             /* ember::CudaError */
  EMBER_ERROR_FORMAT = 9,           /* ember::FormatError (bad or missing files) */
  EMBER_ERROR_DIST = 10,            /* ember::DistError */
  EMBER_ERROR_INVALID_ARGUMENT = 11, /* found by the C layer: NULL, bad enum, small buffer */
  EMBER_ERROR_INTERNAL = 12,        /* any other exception (a bug: please report it) */
  /* Not statuses. They make every int a value of the type, so a made-up value passed
   * in from C is answered (EMBER_STATUS_UNKNOWN) instead of being undefined in C++. */
  EMBER_STATUS_INT_MIN_ = -2147483647 - 1,
  EMBER_STATUS_INT_MAX_ = 2147483647
} ember_status;

/* "EMBER_OK", "EMBER_ERROR_DEVICE", ...: the enumerator's name; "EMBER_STATUS_UNKNOWN"
 * for a value outside the enum. A static string. Thread-safe. */
EMBER_C_API const char* ember_status_name(ember_status status);

/* The message of the last call that failed on the calling thread, "" if none has.
 * A successful call does not clear it. The string is owned by the library and
 * stays valid until the next failing call on the same thread. Thread-safe (each
 * thread has its own). */
EMBER_C_API const char* ember_last_error(void);

/* ---- version and build ---- */

/* "0.1.0" and its parts. Static. Thread-safe. */
EMBER_C_API const char* ember_version(void);
EMBER_C_API int ember_version_major(void);
EMBER_C_API int ember_version_minor(void);
EMBER_C_API int ember_version_patch(void);

/* One line naming what this build has and what the CPU kernels use now, always in
 * this form and order:
 *   "cuda=off cudnn=off nccl=off mpi=off cpu_kernels=avx2"
 * (each backend "on" or "off"; cpu_kernels is "generic", "avx2", "avx512",
 * "avx512_vnni" or "avx512_bf16", the instruction set chosen at run time). The string belongs to
 * the calling thread and stays valid until its next call of this function. */
EMBER_C_API const char* ember_build_config(void);

/* ---- threads ---- */

/* How many threads later CPU kernels use (ember::set_num_threads): process-wide,
 * for kernels on every thread, whichever thread calls it. n < 1 gives
 * EMBER_ERROR_INVALID_ARGUMENT. */
EMBER_C_API ember_status ember_set_num_threads(int n);
EMBER_C_API int ember_get_num_threads(void);

/* ---- memory ---- */

/* The most CPU tensors may hold at once, in bytes (ember::cpu_set_memory_limit),
 * process-wide: a call whose tensors would pass it fails with
 * EMBER_ERROR_OUT_OF_MEMORY without asking the system. 0 means no limit, the
 * default unless the EMBER_CPU_MEMORY_LIMIT_MB environment variable sets one. A
 * program that runs models it did not write sets one: on Linux an allocation past
 * the machine's memory usually succeeds, and the process is killed later. */
EMBER_C_API void ember_set_cpu_memory_limit(size_t bytes);
EMBER_C_API size_t ember_cpu_memory_limit(void);
/* Bytes CPU tensors hold now (ember::cpu_memory_allocated). */
EMBER_C_API size_t ember_cpu_memory_allocated(void);

/* ---- dtypes ---- */

/* The values match ember::DType. */
typedef enum ember_dtype {
  EMBER_DTYPE_UNDEFINED = -1, /* only returned by ember_tensor_dtype(NULL) */
  EMBER_DTYPE_FLOAT32 = 0,
  EMBER_DTYPE_FLOAT64 = 1,
  EMBER_DTYPE_FLOAT16 = 2,
  EMBER_DTYPE_BFLOAT16 = 3,
  EMBER_DTYPE_INT8 = 4,
  EMBER_DTYPE_UINT8 = 5,
  EMBER_DTYPE_INT32 = 6,
  EMBER_DTYPE_INT64 = 7,
  EMBER_DTYPE_BOOL = 8,
  /* Not dtypes: every int is a value of the type (see ember_status). */
  EMBER_DTYPE_INT_MIN_ = -2147483647 - 1,
  EMBER_DTYPE_INT_MAX_ = 2147483647
} ember_dtype;

/* Bytes per element (4 for float32, 1 for bool); 0 for a value outside the enum. */
EMBER_C_API size_t ember_dtype_size(ember_dtype dtype);

/* ---- tensors ----
 * An ember_tensor is a handle to one Ember tensor. Thread safety: the functions
 * that only read a tensor (getters, ember_tensor_to, ember_tensor_copy_to_buffer,
 * use as a model input) may be called on one handle from several threads at once;
 * ember_tensor_free must not run concurrently with any other use of that handle. */
typedef struct ember_tensor ember_tensor;

/* A new CPU tensor of `shape` (ndim sizes; shape may be NULL when ndim is 0, giving
 * a 0-dim tensor of one element). `data`, when not NULL, holds numel * dtype size
 * bytes, row-major, which are copied: the caller keeps its buffer. NULL data gives
 * zeros. *out receives the handle, freed with ember_tensor_free. */
EMBER_C_API ember_status ember_tensor_create(const void* data, const int64_t* shape, size_t ndim,
                                             ember_dtype dtype, ember_tensor** out);

/* A CPU tensor viewing the caller's row-major buffer `data`, without copying.
 * The buffer must stay valid, and must not be freed by the caller, until
 * `release(data, user)` is called. The library calls it exactly once, when the
 * last tensor viewing the buffer is freed: that is this handle, and any tensor
 * that aliases it (ember_tensor_to onto the CPU returns one). It is called on the
 * thread that frees that last tensor. `release` may be NULL (nothing is called;
 * the caller then decides when the buffer may go, after freeing every tensor).
 * If this function fails, release is not called and the buffer stays the
 * caller's. Writes to the buffer are seen by the tensor. */
EMBER_C_API ember_status ember_tensor_borrow(void* data, const int64_t* shape, size_t ndim, ember_dtype dtype,
                                             void (*release)(void* data, void* user), void* user,
                                             ember_tensor** out);

/* Number of dimensions; 0 for NULL (and for a 0-dim tensor). */
EMBER_C_API size_t ember_tensor_ndim(const ember_tensor* tensor);
/* Writes the ndim sizes into shape[0..ndim). capacity < ndim gives
 * EMBER_ERROR_INVALID_ARGUMENT and writes nothing. */
EMBER_C_API ember_status ember_tensor_shape(const ember_tensor* tensor, int64_t* shape, size_t capacity);
/* Number of elements; 0 for NULL. */
EMBER_C_API int64_t ember_tensor_numel(const ember_tensor* tensor);
/* The element type; EMBER_DTYPE_UNDEFINED for NULL. */
EMBER_C_API ember_dtype ember_tensor_dtype(const ember_tensor* tensor);
/* Writes the device as Ember prints it ("cpu", "cuda:0", "meta", "emu:1") with its
 * terminating NUL. capacity too small gives EMBER_ERROR_INVALID_ARGUMENT
 * (16 bytes is always enough). */
EMBER_C_API ember_status ember_tensor_device(const ember_tensor* tensor, char* buf, size_t capacity);

/* A tensor with the same values on `device` ("cpu", "cuda", "cuda:N", "meta",
 * "emu", "emu:N"). When the tensor is already there, the result aliases it (shares
 * its memory) as ember::Tensor::to does. A malformed device string or a device
 * that is not available gives EMBER_ERROR_DEVICE. */
EMBER_C_API ember_status ember_tensor_to(const ember_tensor* tensor, const char* device, ember_tensor** out);

/* Copies the values into dst as contiguous row-major bytes, from any device (the
 * call waits for the copy). nbytes must equal numel * dtype size, else
 * EMBER_ERROR_INVALID_ARGUMENT. dst may be NULL only when nbytes is 0. */
EMBER_C_API ember_status ember_tensor_copy_to_buffer(const ember_tensor* tensor, void* dst, size_t nbytes);

/* Frees the handle (NULL is ignored). */
EMBER_C_API void ember_tensor_free(ember_tensor* tensor);

/* ---- models ----
 * An ember_model is a built-in architecture with weights from a safetensors file,
 * in eval mode on one device. Thread safety: ember_model_run may be called on one
 * model from several threads at once (each call runs on its calling thread with
 * gradient recording off and changes nothing in the model); the getters too.
 * ember_model_free must not run concurrently with any other use of the model. */
typedef struct ember_model ember_model;

/* Builds `architecture` and loads its state dict from the safetensors file at
 * weights_path (every parameter must be present, with its shape), then moves it
 * to `device` (NULL means "cpu"). Architectures:
 *   "seed_network"  the FashionMNIST CNN (ember::nn::Network): one input
 *                   [N, 1, 28, 28] float32, one output, logits [N, 10].
 * An unknown architecture gives EMBER_ERROR_VALUE, a missing or bad file
 * EMBER_ERROR_FORMAT (the message names the file). */
EMBER_C_API ember_status ember_model_load(const char* architecture, const char* weights_path, const char* device,
                                          ember_model** out);

/* How many tensors ember_model_run takes and gives; 0 for NULL. */
EMBER_C_API size_t ember_model_num_inputs(const ember_model* model);
EMBER_C_API size_t ember_model_num_outputs(const ember_model* model);

/* Runs the model: n_inputs must equal ember_model_num_inputs and n_outputs
 * ember_model_num_outputs (else EMBER_ERROR_INVALID_ARGUMENT). Inputs on another
 * device are copied to the model's. Each outputs[i] receives a new tensor on the
 * model's device, which the caller frees. Errors of the model itself (an input of
 * the wrong shape: EMBER_ERROR_SHAPE, of the wrong dtype: EMBER_ERROR_DTYPE) are
 * the library's. */
EMBER_C_API ember_status ember_model_run(ember_model* model, const ember_tensor* const* inputs, size_t n_inputs,
                                         ember_tensor** outputs, size_t n_outputs);

/* Frees the model (NULL is ignored). Tensors it produced stay valid. */
EMBER_C_API void ember_model_free(ember_model* model);

#ifdef __cplusplus
}  /* extern "C" */
#endif

#endif /* EMBER_C_H */
