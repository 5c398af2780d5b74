/* fuzz_step_costs.c: serve-sim's step-cost files (docs/serving-under-load.md);
 * costs that parse run a small simulation. */
#include "tests/fuzz/fuzz_file.h"

#include "ref/serve/load_sim.h"
#include "ref/serve/step_costs_file.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    StepCosts c;
    StepError err;
    if (step_costs_parse((const char *)data, size, &c, &err)) {
        SimWorkload w = {.n = 8,
                         .rate = 100,
                         .prompt_min = 1,
                         .prompt_max = 40,
                         .new_min = 1,
                         .new_max = 20,
                         .seed = 5};
        SimRequest reqs[8];
        SimRequestResult per[8];
        SimReport r;
        SimServer s = {.max_batch = 3, .prefill_chunk = 7, .block_size = 4, .kv_blocks = 12};
        if (!sim_workload_make(&w, reqs, &err) || !load_sim_run(reqs, 8, &s, &c, per, &r, &err))
            abort(); /* a valid workload on parsed costs must run */
        step_costs_free(&c);
    }
    return 0;
}
