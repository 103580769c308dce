/* ziggurat's thread-pool runtime: the target of the calls generated code makes for parallel loops
 * (our small, visible equivalent of OpenMP's GOMP_parallel). Built and loaded by
 * compiler/parallel_runtime.py.
 *
 *   zrt_parallel_for(body, ctx, n) runs body(begin, end, ctx) over min(T, n) contiguous, nearly
 *   equal chunks of [0, n) (static schedule): chunk 0 in the caller, chunk i in pool worker i.
 *
 * Protocol. A job is published by one atomic word `state` = (generation << 16) | chunks, stored
 * after the job fields (seq_cst, so also release). Worker i waits until `state` changes, then runs
 * chunk i only if i < chunks and decrements `pending`. Because the chunk count travels inside the
 * word, a worker that does not take part never reads the job fields, which the caller may already
 * be rewriting for the next job. The caller runs chunk 0, then waits for `pending` == 0 (acquire:
 * everything the workers wrote is visible). Both waits spin for SPIN_NS (pause in the loop), then
 * block on a condition variable; the sleeper announces itself in a counter and the waker checks it
 * after its own store, both seq_cst, so one of the two always sees the other (no lost wake-up).
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

typedef void (*zrt_body)(int64_t begin, int64_t end, void *ctx);

#define MAX_THREADS 1024 /* chunks must fit in the 16 low bits of `state` */
#define SPIN_NS 50000    /* how long a waiter spins before it blocks */

#if defined(__x86_64__) || defined(__i386__)
#define CPU_RELAX() __builtin_ia32_pause()
#elif defined(__aarch64__)
#define CPU_RELAX() __asm__ __volatile__("yield")
#else
#define CPU_RELAX() ((void)0)
#endif

static pthread_mutex_t api_lock = PTHREAD_MUTEX_INITIALIZER; /* held by the thread using the pool */
static pthread_mutex_t wake_lock = PTHREAD_MUTEX_INITIALIZER; /* workers block here... */
static pthread_cond_t wake_cond = PTHREAD_COND_INITIALIZER;
static pthread_mutex_t done_lock = PTHREAD_MUTEX_INITIALIZER; /* ...and the caller here */
static pthread_cond_t done_cond = PTHREAD_COND_INITIALIZER;
static pthread_once_t init_once = PTHREAD_ONCE_INIT;

static atomic_int wanted_threads;             /* set by zrt_set_num_threads; read at each call */
static atomic_uint_fast64_t state;            /* (generation << 16) | chunks */
static atomic_int pending;                    /* chunks still running in workers */
static atomic_int sleeping_workers, caller_sleeping;
static atomic_int quit;                       /* tells the workers to exit at the next state */
static _Thread_local int in_body;             /* this thread runs a body: nested calls are serial */

/* job fields and the pool itself: only written with api_lock held */
static zrt_body job_body;
static void *job_ctx;
static int64_t job_n;
static uint64_t generation;
static int nworkers;
static pthread_t workers[MAX_THREADS];
static struct worker_arg { int index; uint64_t seen; } worker_args[MAX_THREADS];

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Chunk i of c over [0, n): the first n % c chunks get one extra iteration. */
static void run_chunk(zrt_body body, void *ctx, int64_t n, int c, int i) {
    int64_t q = n / c, r = n % c;
    int64_t begin = i * q + (i < r ? i : r);
    body(begin, begin + q + (i < r), ctx);
}

static void *worker_main(void *arg) {
    const struct worker_arg *a = arg;
    int index = a->index;
    uint64_t seen = a->seen, s = seen;
    in_body = 1; /* anything a worker runs is inside a body */
    for (;;) {
        uint64_t t0 = now_ns();
        for (unsigned k = 1; (s = atomic_load(&state)) == seen; k++) {
            if (k % 64 == 0 && now_ns() - t0 > SPIN_NS) break;
            CPU_RELAX();
        }
        if (s == seen) { /* still no job: sleep until the caller broadcasts */
            pthread_mutex_lock(&wake_lock);
            atomic_fetch_add(&sleeping_workers, 1);
            while ((s = atomic_load(&state)) == seen) pthread_cond_wait(&wake_cond, &wake_lock);
            atomic_fetch_sub(&sleeping_workers, 1);
            pthread_mutex_unlock(&wake_lock);
        }
        seen = s;
        if (atomic_load(&quit)) return NULL;
        int chunks = (int)(s & 0xffff);
        if (index >= chunks) continue; /* not part of this job: touch nothing */
        run_chunk(job_body, job_ctx, job_n, chunks, index);
        if (atomic_fetch_sub(&pending, 1) == 1 && atomic_load(&caller_sleeping)) {
            pthread_mutex_lock(&done_lock);
            pthread_cond_signal(&done_cond);
            pthread_mutex_unlock(&done_lock);
        }
    }
}

/* Publish a new state word and wake the workers that sleep (api_lock held). */
static void publish(int chunks) {
    generation++;
    atomic_store(&state, (generation << 16) | (uint64_t)chunks);
    if (atomic_load(&sleeping_workers) > 0) {
        pthread_mutex_lock(&wake_lock);
        pthread_cond_broadcast(&wake_cond);
        pthread_mutex_unlock(&wake_lock);
    }
}

/* Join every worker and start `want` new ones (api_lock held). */
static void resize_pool(int want) {
    if (nworkers > 0) {
        atomic_store(&quit, 1);
        publish(0); /* a state with no chunks: every worker sees `quit` and returns */
        for (int i = 0; i < nworkers; i++) pthread_join(workers[i], NULL);
        atomic_store(&quit, 0);
    }
    nworkers = 0;
    uint64_t current = atomic_load(&state);
    for (int i = 0; i < want; i++) {
        worker_args[i].index = i + 1;
        worker_args[i].seen = current; /* the next state they see is their first job */
        if (pthread_create(&workers[i], NULL, worker_main, &worker_args[i]) != 0) break;
        nworkers++; /* fewer threads than asked if creation fails; calls still work */
    }
}

/* After fork() only the forking thread exists in the child: forget the workers and the locks. */
static void reset_in_child(void) {
    pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
    pthread_cond_t c = PTHREAD_COND_INITIALIZER;
    api_lock = m, wake_lock = m, done_lock = m;
    wake_cond = c, done_cond = c;
    nworkers = 0;
    atomic_store(&sleeping_workers, 0);
    atomic_store(&caller_sleeping, 0);
    atomic_store(&pending, 0);
    atomic_store(&quit, 0);
}

static void init(void) {
    const char *env = getenv("ZIGGURAT_NUM_THREADS");
    long t = env ? strtol(env, NULL, 10) : 1;
    atomic_store(&wanted_threads, t < 1 ? 1 : t > MAX_THREADS ? MAX_THREADS : (int)t);
    pthread_atfork(NULL, NULL, reset_in_child);
}

int zrt_get_num_threads(void) {
    pthread_once(&init_once, init);
    return atomic_load(&wanted_threads);
}

void zrt_set_num_threads(int n) {
    pthread_once(&init_once, init);
    atomic_store(&wanted_threads, n < 1 ? 1 : n > MAX_THREADS ? MAX_THREADS : n);
    /* resize now if the pool is idle; otherwise the next call does it */
    if (!in_body && pthread_mutex_trylock(&api_lock) == 0) {
        int want = atomic_load(&wanted_threads) - 1;
        if (nworkers > 0 && nworkers != want) resize_pool(want);
        pthread_mutex_unlock(&api_lock);
    }
}

void zrt_parallel_for(zrt_body body, void *ctx, int64_t n) {
    if (n <= 0) return;
    int threads = zrt_get_num_threads();
    /* serial: one thread, one iteration, nested in a body, or the pool is busy (never block) */
    if (threads == 1 || n == 1 || in_body || pthread_mutex_trylock(&api_lock) != 0) {
        body(0, n, ctx);
        return;
    }
    if (nworkers != threads - 1) resize_pool(threads - 1); /* lazily, and after a change */
    int chunks = n < nworkers + 1 ? (int)n : nworkers + 1;
    if (chunks > 1) {
        job_body = body, job_ctx = ctx, job_n = n;
        atomic_store_explicit(&pending, chunks - 1, memory_order_relaxed);
        publish(chunks); /* releases the job fields and `pending` */
    }
    in_body = 1;
    run_chunk(body, ctx, n, chunks, 0);
    in_body = 0;
    uint64_t t0 = now_ns();
    for (unsigned k = 1; atomic_load(&pending) != 0; k++) { /* seq_cst load: also acquire */
        if (k % 64 == 0 && now_ns() - t0 > SPIN_NS) {
            pthread_mutex_lock(&done_lock);
            atomic_store(&caller_sleeping, 1);
            while (atomic_load(&pending) != 0) pthread_cond_wait(&done_cond, &done_lock);
            atomic_store(&caller_sleeping, 0);
            pthread_mutex_unlock(&done_lock);
            break;
        }
        CPU_RELAX();
    }
    pthread_mutex_unlock(&api_lock);
}
