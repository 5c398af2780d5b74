/* threads.c: see threads.h.
 *
 * A job is posted by bumping a generation counter; each worker runs its
 * range and counts itself off. Between jobs a worker spins briefly (a
 * decode step posts some fifty jobs a few microseconds apart, and waking a
 * sleeping thread costs more than one of them), then sleeps on a condition
 * variable. With more threads than processors nobody spins: a spinning
 * thread would take the processor from one that has work. */
#include "ref/kernels/threads.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#define SPIN_ROUNDS 10000 /* pause instructions before sleeping: some 300 microseconds here */

typedef struct {
    struct ThreadPool *pool;
    int index; /* 1..n_threads - 1: the caller is thread 0 */
} Worker;

struct ThreadPool {
    int n_threads;
    int spin;           /* SPIN_ROUNDS, or 0 when the threads outnumber the processors */
    pthread_t *threads; /* [n_threads - 1] */
    Worker *workers;    /* [n_threads - 1] */
    pthread_mutex_t lock;
    pthread_cond_t wake; /* a new job, or stop */
    pthread_cond_t done; /* the last worker finished its range */
    atomic_uint generation;
    atomic_int pending; /* workers still running the current job */
    atomic_bool stop;
    /* the current job: written before generation is bumped */
    ParallelTask fn;
    void *ctx;
    int n;
};

static void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

/* Thread k's share of n tasks. */
static void run_share(const ThreadPool *p, int k) {
    int begin = (int)((long long)p->n * k / p->n_threads);
    int end = (int)((long long)p->n * (k + 1) / p->n_threads);
    if (begin < end) p->fn(p->ctx, begin, end);
}

/* Wait until the generation differs from seen (or stop); returns it. */
static unsigned wait_for_job(ThreadPool *p, unsigned seen) {
    for (int i = 0; i < p->spin; i++) {
        unsigned g = atomic_load_explicit(&p->generation, memory_order_acquire);
        if (g != seen || atomic_load(&p->stop)) return g;
        cpu_relax();
    }
    pthread_mutex_lock(&p->lock);
    unsigned g;
    while ((g = atomic_load_explicit(&p->generation, memory_order_acquire)) == seen &&
           !atomic_load(&p->stop))
        pthread_cond_wait(&p->wake, &p->lock);
    pthread_mutex_unlock(&p->lock);
    return g;
}

static void *worker_main(void *arg) {
    Worker *w = arg;
    ThreadPool *p = w->pool;
    unsigned seen = 0;
    for (;;) {
        seen = wait_for_job(p, seen);
        if (atomic_load(&p->stop)) break;
        run_share(p, w->index);
        if (atomic_fetch_sub_explicit(&p->pending, 1, memory_order_acq_rel) == 1) {
            pthread_mutex_lock(&p->lock);
            pthread_cond_signal(&p->done);
            pthread_mutex_unlock(&p->lock);
        }
    }
    return NULL;
}

int threads_online(void) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > THREADS_MAX ? THREADS_MAX : (int)n;
}

bool thread_pool_create(ThreadPool **out, int n_threads, StepError *err) {
    *out = NULL;
    if (n_threads < 1 || n_threads > THREADS_MAX)
        return step_fail(err, "threads: %d is outside [1, %d]", n_threads, THREADS_MAX);
    if (n_threads == 1) return true;
    ThreadPool *p = calloc(1, sizeof *p);
    if (p == NULL) return step_fail(err, "threads: out of memory");
    p->n_threads = n_threads;
    p->spin = n_threads <= threads_online() ? SPIN_ROUNDS : 0;
    p->threads = calloc((size_t)n_threads - 1, sizeof *p->threads);
    p->workers = calloc((size_t)n_threads - 1, sizeof *p->workers);
    atomic_init(&p->generation, 0u);
    atomic_init(&p->pending, 0);
    atomic_init(&p->stop, false);
    if (p->threads == NULL || p->workers == NULL) {
        free(p->threads), free(p->workers), free(p);
        return step_fail(err, "threads: out of memory");
    }
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->wake, NULL);
    pthread_cond_init(&p->done, NULL);
    int started = 0;
    for (; started < n_threads - 1; started++) {
        p->workers[started] = (Worker){.pool = p, .index = started + 1};
        if (pthread_create(&p->threads[started], NULL, worker_main, &p->workers[started]) != 0)
            break;
    }
    p->n_threads = started + 1; /* the ones running, for thread_pool_free */
    if (started < n_threads - 1) {
        thread_pool_free(p);
        return step_fail(err, "threads: could not start thread %d of %d", started + 2, n_threads);
    }
    *out = p;
    return true;
}

void thread_pool_free(ThreadPool *p) {
    if (p == NULL) return;
    pthread_mutex_lock(&p->lock);
    atomic_store(&p->stop, true);
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->lock);
    for (int i = 0; i < p->n_threads - 1; i++) pthread_join(p->threads[i], NULL);
    pthread_mutex_destroy(&p->lock);
    pthread_cond_destroy(&p->wake);
    pthread_cond_destroy(&p->done);
    free(p->threads);
    free(p->workers);
    free(p);
}

int thread_pool_size(const ThreadPool *p) {
    return p == NULL ? 1 : p->n_threads;
}

void parallel_for(ThreadPool *p, int n, ParallelTask fn, void *ctx) {
    if (p == NULL || n < 2) {
        if (n > 0) fn(ctx, 0, n);
        return;
    }
    p->fn = fn, p->ctx = ctx, p->n = n;
    atomic_store_explicit(&p->pending, p->n_threads - 1, memory_order_relaxed);
    pthread_mutex_lock(&p->lock);
    atomic_fetch_add_explicit(&p->generation, 1u, memory_order_release);
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->lock);
    run_share(p, 0);
    for (int i = 0; i < p->spin; i++) {
        if (atomic_load_explicit(&p->pending, memory_order_acquire) == 0) return;
        cpu_relax();
    }
    pthread_mutex_lock(&p->lock);
    while (atomic_load_explicit(&p->pending, memory_order_acquire) > 0)
        pthread_cond_wait(&p->done, &p->lock);
    pthread_mutex_unlock(&p->lock);
}
