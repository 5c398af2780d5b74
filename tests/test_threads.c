/* The thread pool hands out every task exactly once, in the contiguous
 * ranges threads.h promises, for any number of threads and tasks. */
#include <criterion/criterion.h>
#include <stdatomic.h>

#include "ref/kernels/threads.h"

typedef struct {
    atomic_int hits[64];
    atomic_int calls;
    int n;
} Tally;

static void tally(void *ctx, int begin, int end) {
    Tally *t = ctx;
    cr_assert(0 <= begin && begin < end && end <= t->n, "range [%d, %d) of %d", begin, end, t->n);
    for (int i = begin; i < end; i++) atomic_fetch_add(&t->hits[i], 1);
    atomic_fetch_add(&t->calls, 1);
}

Test(threads, every_task_once) {
    StepError err;
    for (int threads = 1; threads <= 9; threads += 2) {
        ThreadPool *pool;
        cr_assert(thread_pool_create(&pool, threads, &err), "%s", err.message);
        cr_assert_eq(thread_pool_size(pool), threads);
        for (int n = 0; n <= 64; n += 7) {
            for (int round = 0; round < 3; round++) { /* the pool is reused */
                Tally t = {.n = n};
                parallel_for(pool, n, tally, &t);
                for (int i = 0; i < n; i++)
                    cr_assert_eq(atomic_load(&t.hits[i]), 1, "task %d of %d, %d threads", i, n,
                                 threads);
                /* a call per thread that had tasks: min(n, threads), one for n < 2 */
                int want = n == 0 ? 0 : n < 2 ? 1 : n < threads ? n : threads;
                cr_assert_eq(atomic_load(&t.calls), want, "%d tasks, %d threads", n, threads);
            }
        }
        thread_pool_free(pool);
    }
}

Test(threads, one_thread_is_no_pool) {
    StepError err;
    ThreadPool *pool = (ThreadPool *)&err; /* overwritten */
    cr_assert(thread_pool_create(&pool, 1, &err));
    cr_assert_null(pool);
    cr_assert_eq(thread_pool_size(NULL), 1);
    cr_assert_not(thread_pool_create(&pool, 0, &err));
    cr_assert_not(thread_pool_create(&pool, THREADS_MAX + 1, &err));
    cr_assert(threads_online() >= 1);
}
