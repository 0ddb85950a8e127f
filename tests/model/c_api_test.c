/* The runtime's C API (model/c_api.h) from C, linked against libtessera_runtime.so: loads the
 * CNN test model compiled by the CTest fixture, checks its inputs and outputs, runs it on
 * tests/frontend/data/cnn.input.npy and compares with onnxruntime's outputs (cnn.output.npy),
 * and checks that each misuse is a status code with a message naming what was wrong.
 *
 * usage: model_c_api_test COMPILED_DIR INPUT.npy EXPECTED.npy */
#include "model/c_api.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures = 0;

#define EXPECT(cond)                                                      \
  do {                                                                    \
    if (!(cond)) {                                                        \
      fprintf(stderr, "%s:%d: expected %s\n", __FILE__, __LINE__, #cond); \
      ++failures;                                                         \
    }                                                                     \
  } while (0)

/* The data of a version 1.0 .npy file (the test data are float32, C order); NULL on error. */
static void* ReadNpyData(const char* path, size_t* bytes) {
  FILE* f = fopen(path, "rb");
  if (f == NULL) return NULL;
  unsigned char head[10];
  void* data = NULL;
  if (fread(head, 1, 10, f) == 10 && memcmp(head, "\x93NUMPY\x01", 7) == 0) {
    const long header_len = head[8] | (head[9] << 8);
    fseek(f, 0, SEEK_END);
    const long size = ftell(f) - 10 - header_len;
    fseek(f, 10 + header_len, SEEK_SET);
    data = malloc((size_t)size);
    if (data != NULL && fread(data, 1, (size_t)size, f) == (size_t)size) {
      *bytes = (size_t)size;
    } else {
      free(data);
      data = NULL;
    }
  }
  fclose(f);
  return data;
}

int main(int argc, char** argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: %s COMPILED_DIR INPUT.npy EXPECTED.npy\n", argv[0]);
    return 2;
  }
  size_t input_bytes = 0, expected_bytes = 0;
  float* input = ReadNpyData(argv[2], &input_bytes);
  float* expected = ReadNpyData(argv[3], &expected_bytes);
  if (input == NULL || expected == NULL) {
    fprintf(stderr, "cannot read %s or %s\n", argv[2], argv[3]);
    return 2;
  }

  /* A missing directory: NOT_FOUND, the message names the file, no model. */
  tessera_model* model = (tessera_model*)1;
  EXPECT(tessera_model_load("/nonexistent/model", &model) == TESSERA_NOT_FOUND);
  EXPECT(model == NULL);
  EXPECT(strstr(tessera_last_error(), "/nonexistent/model/plan.json") != NULL);

  tessera_model_options options;
  tessera_model_options_init(&options);
  options.num_threads = 1;
  if (tessera_model_load_with_options(argv[1], &options, &model) != TESSERA_OK) {
    fprintf(stderr, "load %s: %s\n", argv[1], tessera_last_error());
    return 1;
  }
  EXPECT(tessera_model_num_inputs(model) == 1);
  EXPECT(tessera_model_num_outputs(model) == 1);
  tessera_tensor_info in, out;
  EXPECT(tessera_model_input_info(model, 0, &in) == TESSERA_OK);
  EXPECT(tessera_model_output_info(model, 0, &out) == TESSERA_OK);
  EXPECT(strcmp(in.name, "x") == 0);
  EXPECT(in.dtype == TESSERA_FLOAT32 && out.dtype == TESSERA_FLOAT32);
  EXPECT(in.rank == 4 && in.shape[0] == 1 && in.shape[1] == 3);
  EXPECT(in.bytes == input_bytes);
  EXPECT(out.bytes == expected_bytes);
  size_t index = 7;
  EXPECT(tessera_model_input_index(model, "x", &index) == TESSERA_OK && index == 0);
  EXPECT(tessera_model_output_index(model, out.name, &index) == TESSERA_OK && index == 0);
  EXPECT(tessera_model_input_index(model, "nope", &index) == TESSERA_NOT_FOUND);
  EXPECT(strstr(tessera_last_error(), "nope") != NULL);
  EXPECT(tessera_model_input_info(model, 1, &in) == TESSERA_INVALID_ARGUMENT);

  /* The outputs against onnxruntime's. */
  float* got = malloc(out.bytes);
  const void* inputs[1] = {input};
  void* outputs[1] = {got};
  size_t in_sizes[1] = {input_bytes}, out_sizes[1] = {out.bytes};
  EXPECT(tessera_model_run(model, inputs, in_sizes, outputs, out_sizes) == TESSERA_OK);
  double max_error = 0;
  for (size_t i = 0; i < out.bytes / sizeof(float); ++i) {
    const double error = fabs(got[i] - expected[i]) / (1e-4 + fabs(expected[i]));
    if (error > max_error) max_error = error;
  }
  printf("max relative error against onnxruntime: %g\n", max_error);
  EXPECT(max_error < 1e-3);

  /* A buffer of the wrong size: INVALID_ARGUMENT naming the input and the size it expects. */
  in_sizes[0] = input_bytes - 4;
  EXPECT(tessera_model_run(model, inputs, in_sizes, outputs, out_sizes) ==
         TESSERA_INVALID_ARGUMENT);
  EXPECT(strstr(tessera_last_error(), "input x") != NULL);
  printf("%s: %s\n", tessera_status_name(TESSERA_INVALID_ARGUMENT), tessera_last_error());

  /* An input array missing. */
  EXPECT(tessera_model_run(model, NULL, in_sizes, outputs, out_sizes) == TESSERA_INVALID_ARGUMENT);
  EXPECT(strcmp(tessera_last_error(), "tessera_model_run: an argument is NULL") == 0);

  tessera_model_free(model);
  free(got);
  free(input);
  free(expected);
  if (failures > 0) fprintf(stderr, "%d failures\n", failures);
  return failures == 0 ? 0 : 1;
}
