/* threads.h: a small pool of worker threads that split independent tasks.
 *
 * The only parallel shape stepwise uses: tasks 0..n-1 whose results do not
 * depend on each other (the output rows of a matmul, the heads of
 * attention), cut into one contiguous range per thread. No task ever splits
 * a sum, so every result is the same bits for any number of threads
 * (docs/performance.md, "Threads").
 *
 * pthreads rather than OpenMP: the pool is an object its owner creates and
 * frees (no process-wide runtime or settings), and clang builds need no
 * extra runtime library (libomp) for it. */
#ifndef STEPWISE_THREADS_H
#define STEPWISE_THREADS_H

#include "ref/util/error.h"

typedef struct ThreadPool ThreadPool;

/* Do tasks [begin, end) of the job described by ctx. */
typedef void (*ParallelTask)(void *ctx, int begin, int end);

/* The most threads a pool may have (--threads takes 1..THREADS_MAX). */
#define THREADS_MAX 256

/* A pool of n_threads (the caller's thread and n_threads - 1 workers);
 * n_threads 1 gives NULL with no error: parallel_for then runs serially. */
bool thread_pool_create(ThreadPool **out, int n_threads, StepError *err);

/* Stop and join the workers; NULL is allowed. */
void thread_pool_free(ThreadPool *pool);

/* Threads in the pool (1 for NULL). */
int thread_pool_size(const ThreadPool *pool);

/* fn over tasks 0..n-1: thread k of T takes [n·k/T, n·(k+1)/T), the
 * caller's thread the first range. Returns when every task is done. With
 * pool NULL (or n < 2): fn(ctx, 0, n) on the caller's thread. One caller at
 * a time, and never from inside a task (the pool has one job at a time). */
void parallel_for(ThreadPool *pool, int n, ParallelTask fn, void *ctx);

/* Online processors: the default of --threads. */
int threads_online(void);

#endif
