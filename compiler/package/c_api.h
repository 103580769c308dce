/* The C API of a model exported by compiler/package/c_library.py as a shared library.
 *
 * One library is one model. Buffers are the model's own (64-byte aligned, as the code needs):
 * zg_set_input copies into them, zg_output returns a pointer into them.
 *
 *   zg_model *m = zg_create(0);                      // 0: the thread count it was compiled with
 *   if (!m) { fprintf(stderr, "%s\n", zg_last_error(NULL)); ... }
 *   if (zg_set_input(m, 0, x, sizeof x) || zg_run(m)) { fprintf(stderr, "%s\n", zg_last_error(m)); }
 *   size_t n; const float *y = zg_output(m, 0, &n);  // valid until the next zg_run or zg_free
 *   zg_free(m);
 *
 * Functions returning int return 0 on success, -1 on an error that zg_last_error describes.
 * Calls to zg_run are serialized inside the library (the code and the thread pool are shared by
 * every zg_model of the process); other calls on one zg_model must not race with each other.
 * Every library exports the same zg_* names: to use two models in one process, dlopen each with
 * RTLD_LOCAL and look the functions up with dlsym.
 */
#ifndef ZIGGURAT_MODEL_H
#define ZIGGURAT_MODEL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct zg_model zg_model;

/* A model instance with its buffers; threads < 1: the thread count the package was saved with
 * (only code compiled with threads > 1 runs parallel loops). NULL on failure (zg_last_error(NULL)). */
zg_model *zg_create(int threads);
void zg_free(zg_model *m);

/* The threads parallel loops use while this model runs; -1 if threads < 1. */
int zg_set_num_threads(zg_model *m, int threads);
int zg_num_threads(const zg_model *m);

/* What the model takes and gives: names, numpy dtype names ("float32", "int64", ...), shapes
 * (rank entries), sizes in bytes. i out of range: NULL, or -1. */
int zg_num_inputs(void);
int zg_num_outputs(void);
const char *zg_input_name(int i);
const char *zg_output_name(int i);
int zg_input_index(const char *name);  /* -1 if no input has that name */
int zg_output_index(const char *name); /* -1 if no output has that name */
const char *zg_input_dtype(int i);
const char *zg_output_dtype(int i);
int zg_input_rank(int i);
int zg_output_rank(int i);
const int64_t *zg_input_shape(int i);
const int64_t *zg_output_shape(int i);
int64_t zg_input_bytes(int i);
int64_t zg_output_bytes(int i);

/* Copy input i (C order, its dtype; exactly zg_input_bytes(i) bytes) into the model. */
int zg_set_input(zg_model *m, int i, const void *data, size_t bytes);
/* Run the model on the inputs set (every input must have been set once). */
int zg_run(zg_model *m);
/* Output i of the last run (C order, its dtype), its size in *bytes if bytes is not NULL; NULL
 * if i is out of range or the model has not run. */
const void *zg_output(zg_model *m, int i, size_t *bytes);

/* What the last failed call on m did wrong (m = NULL: the last failed zg_create); "" if none. */
const char *zg_last_error(const zg_model *m);

#ifdef __cplusplus
}
#endif
#endif /* ZIGGURAT_MODEL_H */
