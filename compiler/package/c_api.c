/* The C API (c_api.h) of a model exported as a shared library by compiler/package/c_library.py.
 *
 * The same boundary as the Python runtime (compiler/package/loaded_model.py): @main takes one
 * pointer per input, then one per output, each to a 64-byte-aligned C-order buffer of the
 * tensor's dtype, then one per index check (the range of indices the inputs decided, which
 * zg_run refuses when out of range, as the Python runtime does), and returns nothing.
 * zg_model_tables.h, generated per model, says what the tensors are and defines zg_call_main,
 * which passes the buffers to @main and judges the checks.
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ziggurat_model.h"
#include "zg_model_tables.h"

#if ZG_PARALLEL
void zrt_set_num_threads(int n); /* compiler/parallel_runtime.c, linked in */
#endif

#define ZG_ALIGN 64

struct zg_model {
    int threads;
    int has_run;
    unsigned char set[ZG_NUM_INPUTS + 1];
    void *in[ZG_NUM_INPUTS + 1];
    void *out[ZG_NUM_OUTPUTS + 1];
    char error[512];
};

static pthread_mutex_t run_lock = PTHREAD_MUTEX_INITIALIZER;
static _Thread_local char create_error[512];

static int fail(zg_model *m, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m ? m->error : create_error, sizeof create_error, fmt, ap);
    va_end(ap);
    return -1;
}

static void *aligned_buffer(int64_t bytes) {
    size_t n = bytes > 0 ? (size_t)bytes : 1; /* a zero-size tensor still gets a valid pointer */
    n = (n + ZG_ALIGN - 1) / ZG_ALIGN * ZG_ALIGN; /* aligned_alloc wants a multiple */
    return aligned_alloc(ZG_ALIGN, n);
}

static const char *describe(char *buf, size_t size, const char *name, const char *dtype,
                            int rank, const int64_t *shape) {
    int k = snprintf(buf, size, "'%s' (%s[", name, dtype);
    for (int d = 0; d < rank && k > 0 && (size_t)k < size; d++)
        k += snprintf(buf + k, size - k, d ? ",%lld" : "%lld", (long long)shape[d]);
    if (k > 0 && (size_t)k < size) snprintf(buf + k, size - k, "])");
    return buf;
}

int zg_num_inputs(void) { return ZG_NUM_INPUTS; }
int zg_num_outputs(void) { return ZG_NUM_OUTPUTS; }

#define IN_RANGE(i, n) ((i) >= 0 && (i) < (n))
const char *zg_input_name(int i) { return IN_RANGE(i, ZG_NUM_INPUTS) ? zg_in_names[i] : NULL; }
const char *zg_output_name(int i) { return IN_RANGE(i, ZG_NUM_OUTPUTS) ? zg_out_names[i] : NULL; }
const char *zg_input_dtype(int i) { return IN_RANGE(i, ZG_NUM_INPUTS) ? zg_in_dtypes[i] : NULL; }
const char *zg_output_dtype(int i) {
    return IN_RANGE(i, ZG_NUM_OUTPUTS) ? zg_out_dtypes[i] : NULL;
}
int zg_input_rank(int i) { return IN_RANGE(i, ZG_NUM_INPUTS) ? zg_in_ranks[i] : -1; }
int zg_output_rank(int i) { return IN_RANGE(i, ZG_NUM_OUTPUTS) ? zg_out_ranks[i] : -1; }
const int64_t *zg_input_shape(int i) {
    return IN_RANGE(i, ZG_NUM_INPUTS) ? zg_in_shapes[i] : NULL;
}
const int64_t *zg_output_shape(int i) {
    return IN_RANGE(i, ZG_NUM_OUTPUTS) ? zg_out_shapes[i] : NULL;
}
int64_t zg_input_bytes(int i) { return IN_RANGE(i, ZG_NUM_INPUTS) ? zg_in_bytes[i] : -1; }
int64_t zg_output_bytes(int i) { return IN_RANGE(i, ZG_NUM_OUTPUTS) ? zg_out_bytes[i] : -1; }

int zg_input_index(const char *name) {
    for (int i = 0; name && i < ZG_NUM_INPUTS; i++)
        if (strcmp(name, zg_in_names[i]) == 0) return i;
    return -1;
}

int zg_output_index(const char *name) {
    for (int i = 0; name && i < ZG_NUM_OUTPUTS; i++)
        if (strcmp(name, zg_out_names[i]) == 0) return i;
    return -1;
}

void zg_free(zg_model *m) {
    if (!m) return;
    for (int i = 0; i < ZG_NUM_INPUTS; i++) free(m->in[i]);
    for (int i = 0; i < ZG_NUM_OUTPUTS; i++) free(m->out[i]);
    free(m);
}

zg_model *zg_create(int threads) {
    zg_model *m = calloc(1, sizeof *m);
    if (!m) {
        fail(NULL, "zg_create: out of memory");
        return NULL;
    }
    m->threads = threads >= 1 ? threads : ZG_DEFAULT_THREADS;
    for (int i = 0; i < ZG_NUM_INPUTS; i++)
        if (!(m->in[i] = aligned_buffer(zg_in_bytes[i]))) goto oom;
    for (int i = 0; i < ZG_NUM_OUTPUTS; i++)
        if (!(m->out[i] = aligned_buffer(zg_out_bytes[i]))) goto oom;
    create_error[0] = '\0';
    return m;
oom:
    zg_free(m);
    fail(NULL, "zg_create: out of memory for the model's buffers");
    return NULL;
}

int zg_set_num_threads(zg_model *m, int threads) {
    if (!m) return fail(NULL, "zg_set_num_threads: the model is NULL");
    if (threads < 1) return fail(m, "zg_set_num_threads: threads must be at least 1 (got %d)", threads);
    m->threads = threads;
    return 0;
}

int zg_num_threads(const zg_model *m) { return m ? m->threads : -1; }

int zg_set_input(zg_model *m, int i, const void *data, size_t bytes) {
    char what[256];
    if (!m) return fail(NULL, "zg_set_input: the model is NULL");
    if (!IN_RANGE(i, ZG_NUM_INPUTS))
        return fail(m, "zg_set_input: no input %d; the model has %d", i, ZG_NUM_INPUTS);
    describe(what, sizeof what, zg_in_names[i], zg_in_dtypes[i], zg_in_ranks[i], zg_in_shapes[i]);
    if (bytes != (size_t)zg_in_bytes[i])
        return fail(m, "zg_set_input: input %d %s takes %lld bytes; got %zu", i, what,
                    (long long)zg_in_bytes[i], bytes);
    if (!data && bytes) return fail(m, "zg_set_input: input %d %s: data is NULL", i, what);
    if (bytes) memcpy(m->in[i], data, bytes);
    m->set[i] = 1;
    return 0;
}

int zg_run(zg_model *m) {
    char what[256];
    if (!m) return fail(NULL, "zg_run: the model is NULL");
    for (int i = 0; i < ZG_NUM_INPUTS; i++)
        if (!m->set[i])
            return fail(m, "zg_run: input %d %s was not set (zg_set_input)", i,
                        describe(what, sizeof what, zg_in_names[i], zg_in_dtypes[i],
                                 zg_in_ranks[i], zg_in_shapes[i]));
    pthread_mutex_lock(&run_lock);
#if ZG_PARALLEL
    zrt_set_num_threads(m->threads);
#endif
    const char *read = NULL;
    long long bad = 0, extent = 0;
    int out_of_range = zg_call_main(m->in, m->out, &read, &bad, &extent) == 0;
    pthread_mutex_unlock(&run_lock);
    if (out_of_range) {
        m->has_run = 0;
        return fail(m, "zg_run: %s is %lld, outside [-%lld, %lld)", read, bad, extent, extent);
    }
    m->has_run = 1;
    m->error[0] = '\0';
    return 0;
}

const void *zg_output(zg_model *m, int i, size_t *bytes) {
    if (!m || !IN_RANGE(i, ZG_NUM_OUTPUTS) || !m->has_run) {
        if (m) {
            if (m->has_run)
                fail(m, "zg_output: no output %d; the model has %d", i, ZG_NUM_OUTPUTS);
            else
                fail(m, "zg_output: the model has not run (zg_run)");
        }
        if (bytes) *bytes = 0;
        return NULL;
    }
    if (bytes) *bytes = (size_t)zg_out_bytes[i];
    return m->out[i];
}

const char *zg_last_error(const zg_model *m) { return m ? m->error : create_error; }
