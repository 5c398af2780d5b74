/* cli/serve_sim.c: `stepwise serve-sim`, serving under load in simulated
 * time: requests arrive at a rate, wait for a batch slot and KV blocks,
 * and are served by continuous batching, each pass costing what the
 * model's measured step costs say (ref/serve/load_sim.h). */
#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ref/cli/commands.h"
#include "ref/cli/common.h"
#include "ref/cli/options.h"
#include "ref/serve/load_sim.h"
#include "ref/serve/requests.h"
#include "ref/serve/step_costs_file.h"
#include "ref/util/file_util.h"

static const char SERVE_SIM_USAGE[] =
    "usage: stepwise serve-sim --step-costs FILE [--rate R] [workload and server options]\n"
    "       stepwise serve-sim [--model M --tokenizer T] [--save-costs FILE] [options]\n"
    "\n"
    "Simulate one model serving requests that arrive over time (Poisson arrivals at\n"
    "--rate a second, seeded, or the arrival_ms of --requests): first come, first\n"
    "served into at most --max-batch slots, each request reserving the KV blocks of\n"
    "its prompt and new tokens (a request waits when the blocks run out), prompts\n"
    "prefilled whole or a chunk a step, one token per decode step for every request\n"
    "past its prompt (continuous batching, as `stepwise batch` schedules). Time is\n"
    "simulated: each pass costs what the step costs say (fixed + per row + per\n"
    "attended position, fitted to timed passes of the model), so the same options\n"
    "give the same report, bit for bit, on a busy machine or another one. Without\n"
    "--step-costs the model's passes are timed first (--threads 1 for a steady\n"
    "figure); --save-costs keeps them for the next runs. docs/serving-under-load.md\n";

typedef struct {
    CliModelRun load;
    const char *step_costs, *save_costs, *requests;
    int measure_batch;
    SimWorkload work;
    float rate; /* < 0: not given */
    SimServer server;
    int kv_blocks;       /* --kv-blocks: 0 no limit */
    long long kv_memory; /* --kv-memory: 0 not given */
    int seed;
    bool json;
    ChatTemplate chat;
} ServeSimArgs;

/* "A" or "A:B", whole numbers in [1, 2^24], A <= B. */
static bool parse_range(const CliOption *o, const char *value, void *dest, StepError *err) {
    int *lo = dest, *hi = lo + 1; /* the MIN and MAX fields follow each other (SimWorkload) */
    char *end;
    long a = strtol(value, &end, 10), b = a;
    if (end != value && *end == ':') {
        const char *rest = end + 1;
        b = strtol(rest, &end, 10);
        if (end == rest) end = (char *)value; /* refused below */
    }
    if (end == value || *end != '\0' || a < 1 || b < a || b > (1L << 24))
        return step_fail(err, "--%s %s: give N or MIN:MAX, whole numbers from 1 to 2^24", o->name,
                         value);
    *lo = (int)a, *hi = (int)b;
    return true;
}

static bool parse_kv_memory(const CliOption *o, const char *value, void *dest, StepError *err) {
    (void)o;
    return cli_parse_bytes(value, "--kv-memory", dest, err);
}

static const CliOption SERVE_SIM_OPTIONS[] = {
    {"step-costs", "FILE", OPTION_TEXT, offsetof(ServeSimArgs, step_costs), .path = PATH_IN,
     .help = "the passes' costs, as --save-costs wrote them: no model is\n"
             "loaded or timed (unless --requests needs its tokenizer); not\n"
             "every cost 0 (no time would pass)"},
    {"save-costs", "FILE", OPTION_TEXT, offsetof(ServeSimArgs, save_costs), .path = PATH_OUT,
     .help = "write the costs just measured (with the timed passes)"},
    {"measure-batch", "B", OPTION_INT, offsetof(ServeSimArgs, measure_batch), 1, 64,
     .help = "time decode steps of 1, 2, 4, ... up to B requests (default 16)"},
    {"requests", "FILE", OPTION_TEXT, offsetof(ServeSimArgs, requests), .path = PATH_IN,
     .help = "the requests of `stepwise batch` (prompt lengths, max_tokens\n"
             "and arrival_ms); default: --num-requests made up"},
    {"num-requests", "N", OPTION_INT, offsetof(ServeSimArgs, work.n), 1, SIM_MAX_REQUESTS,
     .help = "requests made up (default 64)"},
    {"prompt-tokens", "N|MIN:MAX", OPTION_CUSTOM, offsetof(ServeSimArgs, work.prompt_min),
     .parse = parse_range, .help = "their prompts' lengths, uniform (default 16:64)"},
    {"new-tokens", "N|MIN:MAX", OPTION_CUSTOM, offsetof(ServeSimArgs, work.new_min),
     .parse = parse_range, .help = "the tokens each generates, uniform (default 16:64)"},
    {"rate", "R", OPTION_FLOAT, offsetof(ServeSimArgs, rate), 0, 1000000,
     .help = "requests a second, Poisson arrivals; 0: all at once (the\n"
             "default, or --requests' own arrival_ms); a value that rounds\n"
             "to 0 as a float32 (1e-50) is refused"},
    {"seed", "S", OPTION_INT, offsetof(ServeSimArgs, seed), 1, 2147483647,
     .help = "the arrivals' and lengths' draws (default 1)"},
    {"max-batch", "B", OPTION_INT, offsetof(ServeSimArgs, server.max_batch), 1, 4096,
     .help = "most requests admitted at once (default 8)"},
    {"prefill-chunk", "N", OPTION_INT, offsetof(ServeSimArgs, server.prefill_chunk), 0, 1 << 24,
     .help = "prefill at most N positions a pass, between decode steps\n"
             "(default 0: whole prompts)"},
    {"block-size", "P", OPTION_INT, offsetof(ServeSimArgs, server.block_size), 1, 1 << 20,
     .help = "positions in a KV block (default 16)"},
    {"kv-blocks", "N", OPTION_INT, offsetof(ServeSimArgs, kv_blocks), 0, 1 << 30,
     .help = "KV blocks there are (default 0: no limit)"},
    {"kv-memory", "BYTES", OPTION_CUSTOM, offsetof(ServeSimArgs, kv_memory),
     .parse = parse_kv_memory,
     .help = "or the bytes for the cache (4GiB, 512MB...): as many blocks\n"
             "as fit, at the costs' bytes a position"},
    {"json", NULL, OPTION_FLAG, offsetof(ServeSimArgs, json),
     .help = "print the report (summary, costs, every request) as JSON"},
    {"quiet", NULL, OPTION_FLAG, offsetof(ServeSimArgs, load.quiet),
     .help = "no progress line while loading"},
    CLI_OPTIONS_END};

static const CliCommandOptions SERVE_SIM_COMMAND = {
    .command = "serve-sim",
    .options = SERVE_SIM_OPTIONS,
    .groups = (const CliOptionGroup[]){CLI_MODEL_GROUP(ServeSimArgs, load,
                                                       "the model (to time its passes):"),
                                       CLI_QUANT_GROUP(ServeSimArgs, load, NULL),
                                       {0}},
    .after = "\n"
             "exit status: 0 when the simulation ran (requests it could never serve are\n"
             "counted as rejected), 2 when an option, the model or a file is refused.\n",
    .usage = SERVE_SIM_USAGE};

/* The workload: made up, or --requests' lengths (arrival_ms unless --rate
 * gives Poisson times). *reqs is the caller's to free. */
static bool requests_from_file(ServeSimArgs *a, const Model *m, const Tokenizer *tok,
                               SimRequest **out, StepError *err) {
    GenerateOptions defaults;
    generate_options_default(&defaults);
    defaults.bos_id = tok->bos_id, defaults.eos_id = tok->eos_id;
    BatchRequest *reqs = NULL;
    int n = 0;
    if (!requests_load(a->requests, m, tok, a->chat, &defaults, &reqs, &n, err)) return false;
    bool ok = n >= 1 && n <= SIM_MAX_REQUESTS;
    if (!ok)
        step_fail(err, "serve-sim: %s holds %d requests (1 to %d)", a->requests, n,
                  SIM_MAX_REQUESTS);
    *out = ok ? malloc((size_t)n * sizeof **out) : NULL;
    if (ok && *out == NULL) ok = step_fail(err, "serve-sim: out of memory");
    for (int i = 0; ok && i < n; i++) {
        if (reqs[i].error != NULL) {
            ok = step_fail(err, "serve-sim: request %s: %s", reqs[i].id ? reqs[i].id : "?",
                           reqs[i].error);
            break;
        }
        int room = m->config.seq_len - reqs[i].n_prompt;
        (*out)[i] = (SimRequest){.arrival_s = reqs[i].arrival_ms / 1000.0,
                                 .prompt_tokens = reqs[i].n_prompt,
                                 .new_tokens = reqs[i].opt.steps < room ? reqs[i].opt.steps
                                               : room > 0               ? room
                                                                        : 1};
    }
    a->work.n = n;
    for (int i = 0; i < n; i++) batch_request_free(&reqs[i]);
    free(reqs);
    if (!ok) free(*out), *out = NULL;
    return ok;
}

/* Poisson arrivals over the requests' own lengths (--requests with --rate). */
static bool poisson_times(const ServeSimArgs *a, SimRequest *reqs, StepError *err) {
    SimWorkload w = a->work;
    w.prompt_min = w.prompt_max = w.new_min = w.new_max = 1;
    SimRequest *times = malloc((size_t)w.n * sizeof *times);
    bool ok = times != NULL ? sim_workload_make(&w, times, err)
                            : step_fail(err, "serve-sim: out of memory");
    for (int i = 0; ok && i < w.n; i++) reqs[i].arrival_s = times[i].arrival_s;
    free(times);
    return ok;
}

static void print_row(const char *name, const SimPercentiles *p) {
    printf("  %-12s %10.3f %10.3f %10.3f %10.3f %10.3f\n", name, p->p50, p->p95, p->p99, p->max,
           p->mean);
}

static void print_report(const ServeSimArgs *a, const StepCosts *c, const SimReport *r) {
    const SimServer *s = &a->server;
    printf("serve-sim: %d requests, ", r->requests);
    if (a->rate > 0)
        printf("Poisson arrivals at %g a second (seed %d)", a->rate, a->seed);
    else
        printf(a->requests ? "arriving as %s says" : "all at once", a->requests);
    printf("; max batch %d", s->max_batch);
    if (s->kv_blocks > 0)
        printf(", %ld KV blocks of %d positions", s->kv_blocks, s->block_size);
    else
        printf(", KV blocks unlimited");
    if (s->prefill_chunk > 0) printf(", prefill chunks of %d", s->prefill_chunk);
    printf("\ncosts: decode step %.4f ms + %.4f ms a request + %.3g ms a position attended;\n"
           "       prefill %.4f ms + %.4f ms a position + %.3g ms a position attended\n",
           c->decode.fixed * 1e3, c->decode.per_row * 1e3, c->decode.per_attended * 1e3,
           c->prefill.fixed * 1e3, c->prefill.per_row * 1e3, c->prefill.per_attended * 1e3);
    printf("served %d, rejected %d, in %.3f s simulated: %ld tokens, %.1f tokens/s;\n"
           "%d decode steps, %d prefill passes; peak batch %d, peak KV blocks %ld\n",
           r->served, r->rejected, r->seconds, r->generated, r->throughput, r->steps,
           r->prefill_passes, r->peak_batch, r->peak_blocks);
    printf("  %-12s %10s %10s %10s %10s %10s\n", "ms", "p50", "p95", "p99", "max", "mean");
    print_row("TTFT", &r->ttft_ms);
    print_row("ITL", &r->itl_ms);
    print_row("end-to-end", &r->e2e_ms);
    print_row("queue", &r->queue_ms);
    printf("waited for KV blocks: %d request%s, %.2f ms in all, at most %.2f ms\n",
           r->waited_for_blocks, r->waited_for_blocks == 1 ? "" : "s", r->block_wait_total_ms,
           r->block_wait_max_ms);
}

static cJSON *percentiles_json(const SimPercentiles *p) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "p50", p->p50);
    cJSON_AddNumberToObject(o, "p95", p->p95);
    cJSON_AddNumberToObject(o, "p99", p->p99);
    cJSON_AddNumberToObject(o, "max", p->max);
    cJSON_AddNumberToObject(o, "mean", p->mean);
    return o;
}

static bool print_json(const ServeSimArgs *a, const StepCosts *c, const SimRequest *reqs,
                       const SimRequestResult *per, const SimReport *r, StepError *err) {
    cJSON *o = cJSON_CreateObject(), *s = cJSON_AddObjectToObject(o, "summary");
    cJSON_AddNumberToObject(s, "requests", r->requests);
    cJSON_AddNumberToObject(s, "served", r->served);
    cJSON_AddNumberToObject(s, "rejected", r->rejected);
    cJSON_AddNumberToObject(s, "rate", a->rate > 0 ? a->rate : 0);
    cJSON_AddNumberToObject(s, "seed", (double)a->seed);
    cJSON_AddNumberToObject(s, "max_batch", a->server.max_batch);
    cJSON_AddNumberToObject(s, "prefill_chunk", a->server.prefill_chunk);
    cJSON_AddNumberToObject(s, "block_size", a->server.block_size);
    cJSON_AddNumberToObject(s, "kv_blocks", (double)a->server.kv_blocks);
    cJSON_AddNumberToObject(s, "generated", (double)r->generated);
    cJSON_AddNumberToObject(s, "seconds", r->seconds);
    cJSON_AddNumberToObject(s, "throughput_tokens_per_second", r->throughput);
    cJSON_AddNumberToObject(s, "decode_steps", r->steps);
    cJSON_AddNumberToObject(s, "prefill_passes", r->prefill_passes);
    cJSON_AddNumberToObject(s, "peak_batch", r->peak_batch);
    cJSON_AddNumberToObject(s, "peak_kv_blocks", (double)r->peak_blocks);
    cJSON_AddNumberToObject(s, "waited_for_blocks", r->waited_for_blocks);
    cJSON_AddNumberToObject(s, "block_wait_total_ms", r->block_wait_total_ms);
    cJSON_AddNumberToObject(s, "block_wait_max_ms", r->block_wait_max_ms);
    cJSON_AddItemToObject(s, "ttft_ms", percentiles_json(&r->ttft_ms));
    cJSON_AddItemToObject(s, "itl_ms", percentiles_json(&r->itl_ms));
    cJSON_AddItemToObject(s, "e2e_ms", percentiles_json(&r->e2e_ms));
    cJSON_AddItemToObject(s, "queue_ms", percentiles_json(&r->queue_ms));
    /* the costs the clock ran on, as their file holds them (less where they came
     * from and the timed points: the same report from measured and saved costs) */
    cJSON *costs = step_costs_json(c, NULL);
    cJSON_DeleteItemFromObjectCaseSensitive(costs, "model");
    cJSON_DeleteItemFromObjectCaseSensitive(costs, "points");
    cJSON_AddItemToObject(o, "costs", costs);
    cJSON *list = cJSON_AddArrayToObject(o, "requests");
    for (int i = 0; i < r->requests; i++) {
        cJSON *q = cJSON_CreateObject();
        cJSON_AddNumberToObject(q, "arrival_ms", reqs[i].arrival_s * 1e3);
        cJSON_AddNumberToObject(q, "prompt_tokens", reqs[i].prompt_tokens);
        cJSON_AddNumberToObject(q, "new_tokens", reqs[i].new_tokens);
        cJSON_AddNumberToObject(q, "blocks", (double)per[i].blocks);
        cJSON_AddBoolToObject(q, "rejected", per[i].rejected);
        if (!per[i].rejected) {
            cJSON_AddNumberToObject(q, "queue_ms", per[i].queue_ms);
            cJSON_AddNumberToObject(q, "block_wait_ms", per[i].block_wait_ms);
            cJSON_AddNumberToObject(q, "ttft_ms", per[i].ttft_ms);
            cJSON_AddNumberToObject(q, "itl_mean_ms", per[i].itl_mean_ms);
            cJSON_AddNumberToObject(q, "itl_max_ms", per[i].itl_max_ms);
            cJSON_AddNumberToObject(q, "e2e_ms", per[i].e2e_ms);
        }
        cJSON_AddItemToArray(list, q);
    }
    char *printed = cJSON_Print(o);
    cJSON_Delete(o);
    if (printed == NULL) return step_fail(err, "serve-sim: out of memory");
    puts(printed);
    cJSON_free(printed);
    return true;
}

/* The simulation, once the costs are known; reqs: --requests' (owned by
 * the caller), or NULL to make the workload up. */
static int simulate(ServeSimArgs *a, const StepCosts *c, SimRequest *given, StepError *err) {
    SimRequest *reqs = given;
    SimRequestResult *per = NULL;
    SimReport report;
    a->work.rate = a->rate > 0 ? a->rate : 0;
    a->work.seed = (uint64_t)a->seed;
    if (a->kv_memory > 0) {
        uint64_t block_bytes = (uint64_t)a->server.block_size * c->kv_bytes_per_position;
        uint64_t blocks = (uint64_t)a->kv_memory / block_bytes;
        if (blocks < 1) {
            step_fail(err, "--kv-memory %lld: less than one block of %llu bytes", a->kv_memory,
                      (unsigned long long)block_bytes);
            return EXIT_BAD_INPUT;
        }
        a->server.kv_blocks = blocks > (1u << 30) ? 1L << 30 : (long)blocks;
    }
    bool ok;
    if (given != NULL) {
        ok = a->rate <= 0 || poisson_times(a, reqs, err);
    } else {
        reqs = malloc((size_t)a->work.n * sizeof *reqs);
        ok = reqs != NULL ? sim_workload_make(&a->work, reqs, err)
                          : step_fail(err, "serve-sim: out of memory");
    }
    if (ok) {
        per = malloc((size_t)a->work.n * sizeof *per);
        ok = per != NULL ? load_sim_run(reqs, a->work.n, &a->server, c, per, &report, err)
                         : step_fail(err, "serve-sim: out of memory");
    }
    if (ok && a->json)
        ok = print_json(a, c, reqs, per, &report, err);
    else if (ok)
        print_report(a, c, &report);
    if (reqs != given) free(reqs);
    free(per);
    return ok ? 0 : EXIT_BAD_INPUT;
}

static int run_with_model(void *args, Model *m, Tokenizer *tok, CliProgress *progress,
                          StepError *err) {
    ServeSimArgs *a = args;
    (void)progress;
    StepCosts costs = {0};
    SimRequest *reqs = NULL; /* the requests first: refused before any timing */
    bool ok = a->requests == NULL || requests_from_file(a, m, tok, &reqs, err);
    if (ok)
        ok = a->step_costs != NULL
                 ? step_costs_read(a->step_costs, &costs, err)
                 : step_costs_measure(m, &a->load.quant.run, a->measure_batch, 5, &costs, err);
    if (ok && a->save_costs != NULL)
        ok = step_costs_write(a->save_costs, &costs, a->load.model ? a->load.model : "(built-in)",
                              err);
    int status = ok ? simulate(a, &costs, reqs, err) : EXIT_BAD_INPUT;
    step_costs_free(&costs);
    free(reqs);
    return status;
}

int cli_serve_sim(int argc, char **argv) {
    ServeSimArgs a = {
        .measure_batch = 16,
        .work = {.n = 64, .prompt_min = 16, .prompt_max = 64, .new_min = 16, .new_max = 64},
        .rate = -1,
        .seed = 1,
        .server = {.max_batch = 8, .block_size = 16},
        .chat = CHAT_DEFAULT,
        .load = {.quant = {.run = {.group = 32}}}};
    StepError err;
    int parsed = cli_options_parse(&SERVE_SIM_COMMAND, argc, argv, &a, NULL, &err);
    if (parsed > 0 && a.save_costs != NULL &&
        !file_check_output(a.save_costs, "--save-costs", &err))
        parsed = -1;
    if (parsed > 0 && a.kv_memory > 0 && a.kv_blocks > 0) {
        step_fail(&err, "serve-sim: give --kv-blocks or --kv-memory, not both");
        parsed = -1;
    }
    if (parsed > 0 && a.step_costs != NULL && a.save_costs != NULL) {
        step_fail(&err, "serve-sim: --save-costs writes measured costs; with --step-costs "
                        "nothing is measured");
        parsed = -1;
    }
    a.server.kv_blocks = a.kv_blocks;
    if (parsed <= 0 || a.requests != NULL || a.step_costs == NULL)
        return cli_run_with_model(parsed, &a.load, run_with_model, &a, &err);
    StepCosts costs = {0}; /* freed below whatever step_costs_read did */
    int status = step_costs_read(a.step_costs, &costs, &err) ? simulate(&a, &costs, NULL, &err)
                                                             : EXIT_BAD_INPUT;
    step_costs_free(&costs);
    if (status == EXIT_BAD_INPUT) cli_print_error(&err);
    return status;
}
