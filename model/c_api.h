/* Tessera's embeddable runtime: load a model compiled by `tessera compile` and run it from C
 * (docs/models.md "The runtime"). Link with libtessera_runtime (pkg-config tessera-runtime);
 * model/runtime.h is a C++ wrapper over it, python/tessera a Python one.
 *
 * Every function that can fail returns a tessera_status (TESSERA_OK, or one of abseil's
 * canonical codes, which Tessera uses throughout) and leaves a message naming what was wrong in
 * tessera_last_error(), per thread. No function throws or aborts on bad input.
 *
 * A model is not safe for concurrent tessera_model_run calls (it owns one set of buffers);
 * load it once per thread instead (the kernels are loaded once per process). */
#ifndef TESSERA_MODEL_C_API_H_
#define TESSERA_MODEL_C_API_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(TESSERA_RUNTIME_BUILD)
#define TESSERA_RUNTIME_API __attribute__((visibility("default")))
#else
#define TESSERA_RUNTIME_API
#endif

typedef enum {
  TESSERA_OK = 0,
  TESSERA_INVALID_ARGUMENT = 3, /* a bad argument, input size, or a malformed model directory */
  TESSERA_NOT_FOUND = 5,        /* a missing file, input or output name */
  TESSERA_RESOURCE_EXHAUSTED = 8,
  TESSERA_FAILED_PRECONDITION = 9,
  TESSERA_UNIMPLEMENTED = 12,
  TESSERA_INTERNAL = 13 /* a kernel that cannot be loaded or fails */
} tessera_status;

/* Element types of inputs and outputs (the names are ONNX's). */
typedef enum {
  TESSERA_FLOAT32 = 1,
  TESSERA_UINT8 = 2,
  TESSERA_INT8 = 3,
  TESSERA_INT32 = 6,
  TESSERA_INT64 = 7,
  TESSERA_BOOL = 9,
  TESSERA_FLOAT16 = 10,
  TESSERA_FLOAT64 = 11,
  TESSERA_BFLOAT16 = 16,
  TESSERA_OTHER = 0 /* a type this header has no name for */
} tessera_dtype;

typedef struct tessera_model tessera_model;

typedef struct {
  /* OpenMP threads of the kernels, for the thread that calls tessera_model_run; 0: the cores
   * this process may run on (at most OMP_NUM_THREADS) less those other processes keep busy,
   * read again before a run at most every 0.2 s. */
  int num_threads;
} tessera_model_options;

/* One input or output, as the ONNX model names it. Pointers stay valid while the model lives. */
typedef struct {
  const char* name;
  tessera_dtype dtype;
  size_t rank;
  const int64_t* shape; /* rank extents; a scalar is reported as [1] */
  size_t bytes;         /* of a contiguous (C-order) buffer of it */
} tessera_tensor_info;

/* The message of the last call on this thread that did not return TESSERA_OK ("" if none). */
TESSERA_RUNTIME_API const char* tessera_last_error(void);
/* "OK", "INVALID_ARGUMENT", ...: the code's name. */
TESSERA_RUNTIME_API const char* tessera_status_name(tessera_status status);

/* Default options (num_threads 0). */
TESSERA_RUNTIME_API void tessera_model_options_init(tessera_model_options* options);
/* Loads the directory written by `tessera compile` (plan.json, weights.bin, kernels/) into
 * `*model`, packing its weights; options may be NULL. On failure `*model` is NULL. */
TESSERA_RUNTIME_API tessera_status tessera_model_load(const char* dir, tessera_model** model);
TESSERA_RUNTIME_API tessera_status tessera_model_load_with_options(
    const char* dir, const tessera_model_options* options, tessera_model** model);
/* Frees a model (NULL is fine). */
TESSERA_RUNTIME_API void tessera_model_free(tessera_model* model);

TESSERA_RUNTIME_API size_t tessera_model_num_inputs(const tessera_model* model);
TESSERA_RUNTIME_API size_t tessera_model_num_outputs(const tessera_model* model);
/* TESSERA_INVALID_ARGUMENT for an index out of range. */
TESSERA_RUNTIME_API tessera_status tessera_model_input_info(const tessera_model* model,
                                                            size_t index,
                                                            tessera_tensor_info* info);
TESSERA_RUNTIME_API tessera_status tessera_model_output_info(const tessera_model* model,
                                                             size_t index,
                                                             tessera_tensor_info* info);
/* The index of the input or output called `name`; TESSERA_NOT_FOUND naming it otherwise. */
TESSERA_RUNTIME_API tessera_status tessera_model_input_index(const tessera_model* model,
                                                             const char* name, size_t* index);
TESSERA_RUNTIME_API tessera_status tessera_model_output_index(const tessera_model* model,
                                                              const char* name, size_t* index);

/* Runs the model once. inputs[i] / outputs[i] are contiguous C-order buffers of input / output
 * i (model order) of input_bytes[i] / output_bytes[i] bytes, which must equal the info's
 * `bytes`: TESSERA_INVALID_ARGUMENT naming the tensor otherwise. Outputs are written only when
 * the run succeeds. */
TESSERA_RUNTIME_API tessera_status tessera_model_run(tessera_model* model,
                                                     const void* const* inputs,
                                                     const size_t* input_bytes,
                                                     void* const* outputs,
                                                     const size_t* output_bytes);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TESSERA_MODEL_C_API_H_ */
