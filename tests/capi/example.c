/* Classifies one image with the seed network through Ember's C API.
 * Build: cc -std=c11 example.c $(pkg-config --cflags --libs ember)
 * Run:   ./a.out tests/nn/data/safetensors_seed_net.safetensors */
#include <ember_c.h>
#include <stdio.h>

int main(int argc, char** argv) {
  float image[28 * 28], logits[10];
  const int64_t shape[4] = {1, 1, 28, 28};
  ember_model* model = NULL;
  ember_tensor* input = NULL;
  ember_tensor* output = NULL;
  ember_status status;
  int i, best = 0;
  if (argc != 2) {
    fprintf(stderr, "usage: %s weights.safetensors\n", argv[0]);
    return 2;
  }
  for (i = 0; i < 28 * 28; ++i) image[i] = (float)(i % 28) / 28.0f; /* a stand-in image */

  /* Each call returns a status; on failure the outputs are NULL and the message
   * waits in ember_last_error(). Freeing NULL is allowed, so one cleanup serves. */
  status = ember_model_load("seed_network", argv[1], "cpu", &model);
  if (status == EMBER_OK) status = ember_tensor_create(image, shape, 4, EMBER_DTYPE_FLOAT32, &input);
  if (status == EMBER_OK) {
    const ember_tensor* inputs[1];
    inputs[0] = input;
    status = ember_model_run(model, inputs, 1, &output, 1);
  }
  if (status == EMBER_OK) status = ember_tensor_copy_to_buffer(output, logits, sizeof logits);

  if (status == EMBER_OK) {
    for (i = 1; i < 10; ++i)
      if (logits[i] > logits[best]) best = i;
    printf("class %d (logit %.4f), on %s\n", best, logits[best], ember_build_config());
  } else {
    fprintf(stderr, "error %s: %s\n", ember_status_name(status), ember_last_error());
  }
  ember_tensor_free(output);
  ember_tensor_free(input);
  ember_model_free(model);
  return status == EMBER_OK ? 0 : 1;
}
