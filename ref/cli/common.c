/* cli/common.c: see common.h. */
#include "ref/cli/common.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ref/cli/signals.h"
#include "ref/formats/gguf_model.h"
#include "ref/formats/gguf_tokenizer.h"
#include "ref/formats/hf_model.h"
#include "ref/formats/model_open.h"
#include "ref/kernels/threads.h"
#include "ref/text/tokenizer_json.h"
#include "ref/util/float_class.h"
#include "trace/trace_events.h"
#include <sys/resource.h>

bool cli_parse_int(const char *text, const char *option, long min, long max, int *out,
                   StepError *err) {
    char *end;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (text[0] == '\0' || *end != '\0' || errno == ERANGE)
        return step_fail(err, "%s expects a whole number, got '%s'", option, text);
    if (v < min || v > max)
        return step_fail(err, "%s must be in [%ld, %ld], got %ld", option, min, max, v);
    *out = (int)v;
    return true;
}

/* A unit's multiplier: KB, MB, GB, TB in 1000s, KiB .. TiB in 1024s
 * (the trailing B optional); 0 for anything else. */
static long long byte_unit(const char *unit) {
    static const struct {
        const char *name;
        long long scale;
    } UNITS[] = {{"", 1},
                 {"B", 1},
                 {"K", 1000LL},
                 {"KB", 1000LL},
                 {"M", 1000000LL},
                 {"MB", 1000000LL},
                 {"G", 1000000000LL},
                 {"GB", 1000000000LL},
                 {"T", 1000000000000LL},
                 {"TB", 1000000000000LL},
                 {"KiB", 1LL << 10},
                 {"Ki", 1LL << 10},
                 {"MiB", 1LL << 20},
                 {"Mi", 1LL << 20},
                 {"GiB", 1LL << 30},
                 {"Gi", 1LL << 30},
                 {"TiB", 1LL << 40},
                 {"Ti", 1LL << 40}};
    for (size_t i = 0; i < sizeof UNITS / sizeof UNITS[0]; i++)
        if (strcmp(unit, UNITS[i].name) == 0) return UNITS[i].scale;
    return 0;
}

bool cli_parse_bytes(const char *text, const char *option, long long *out, StepError *err) {
    char *end;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    long long scale = end == text ? 0 : byte_unit(end);
    if (errno != 0 || scale == 0 || v < 1 || v > (1LL << 62) / scale)
        return step_fail(err,
                         "%s takes a positive whole number of bytes, optionally with a unit "
                         "(KB, MB, GB, TB or KiB, MiB, GiB, TiB), got '%.40s'",
                         option, text);
    *out = v * scale;
    return true;
}

bool cli_parse_float(const char *text, const char *option, bool allow_inf, float *out,
                     StepError *err) {
    char *end;
    errno = 0;
    double wide = strtod(text, &end);
    if (text[0] == '\0' || *end != '\0')
        return step_fail(err, "%s expects a number, got '%s'", option, text);
    /* The text's class: ERANGE says it is a finite nonzero number that even
     * a double cannot hold (1e-400, 1e400). The value is strtof's own
     * rounding of the text (one rounding, not two). */
    FloatClass said = errno == ERANGE ? FLOAT_FINITE : float_class_of(wide);
    float v = strtof(text, NULL);
    const char *changed = float_class_change(said, v);
    if (changed != NULL) return step_fail(err, "%s %s %s", option, text, changed);
    if (isnan(v)) return step_fail(err, "%s: NaN is not allowed", option);
    if (isinf(v) && !allow_inf) return step_fail(err, "%s must be finite, got '%s'", option, text);
    *out = v;
    return true;
}

bool cli_parse_float_list(const char *text, const char *option, bool allow_inf, float **out, int *n,
                          StepError *err) {
    *out = NULL, *n = 0;
    if (text[0] == '\0') return step_fail(err, "%s is empty", option);
    size_t len = strlen(text);
    char *copy = malloc(len + 1);
    float *values = malloc((len / 2 + 1) * sizeof(float)); /* a comma between each two */
    if (copy == NULL || values == NULL) {
        free(copy), free(values);
        return step_fail(err, "%s: out of memory", option);
    }
    memcpy(copy, text, len + 1);
    int count = 0;
    bool ok = true;
    for (char *item = copy, *next; ok && item != NULL; item = next) {
        next = strchr(item, ',');
        if (next != NULL) *next++ = '\0';
        ok = cli_parse_float(item, option, allow_inf, &values[count++], err);
    }
    free(copy);
    if (!ok) {
        free(values);
        return false;
    }
    *out = values, *n = count;
    return true;
}

int cli_sampler_option(int c, const char *arg, SamplerParams *p, StepError *err) {
    int seed;
    switch (c) {
        case OPT_SEED:
            if (!cli_parse_int(arg, "--seed", 1, 2147483647L, &seed, err)) return -1;
            p->seed = (uint64_t)seed;
            return 1;
        case OPT_SAMPLER_ORDER:
            return sampler_order_parse(p, arg, err) ? 1 : -1;
        case OPT_RNG:
            if (strcmp(arg, "xorshift") == 0) return 1;
            step_fail(err, "unknown --rng '%s' (xorshift is the one generator)", arg);
            return -1;
        default:
            return 0;
    }
}

int cli_trace_option(int c, const char *arg, TraceOptions *t, StepError *err) {
    bool ok = true;
    switch (c) {
        case OPT_TRACE_LEVEL:
            ok = trace_level_parse(arg, &t->level, err);
            break;
        case OPT_TRACE_KV:
            if (arg == NULL || strcmp(arg, "rows") == 0)
                t->kv_rows = true;
            else if (strcmp(arg, "full") == 0)
                t->kv_rows = t->kv_full = true;
            else
                ok = step_fail(err, "--trace-kv takes rows or full, got '%s'", arg);
            break;
        case OPT_TRACE_LAYERS:
            ok = trace_layers_parse(t, arg, err);
            break;
        case OPT_TRACE_POSITIONS:
            ok = trace_positions_parse(t, arg, err);
            break;
        case OPT_TRACE_HOOKS:
            ok = trace_hooks_parse(t, arg, err);
            break;
        case OPT_TRACE_TEMPERATURES:
            free(t->temperatures);
            t->temperatures = NULL;
            ok = cli_parse_float_list(arg, "--trace-temperatures", false, &t->temperatures,
                                      &t->n_temperatures, err);
            for (int i = 0; ok && i < t->n_temperatures; i++) {
                if (t->temperatures[i] <= 0.0f)
                    ok = step_fail(err, "--trace-temperatures must all be > 0");
            }
            break;
        default:
            return 0;
    }
    return ok ? 1 : -1;
}

/* arg as one of an option's two values: true with *is_second telling
 * which, or false with err naming both. */
bool cli_parse_either(const char *arg, const char *option, const char *first, const char *second,
                      bool *is_second, StepError *err) {
    if (strcmp(arg, first) == 0 || strcmp(arg, second) == 0) {
        *is_second = strcmp(arg, second) == 0;
        return true;
    }
    return step_fail(err, "%s takes %s or %s, got '%s'", option, first, second, arg);
}

/* The quantization group's options whose value is one of two words, the
 * first the default: which option, its words, and (in cli_quant_option)
 * what the second word sets. */
static const struct {
    int id;
    const char *option, *first, *second;
} QUANT_EITHER[] = {
    {OPT_QUANT_WEIGHTS, "--quant-weights", "float32", "int8"},
    {OPT_QUANT_ACTIVATIONS, "--quant-activations", "float32", "int8"},
    {OPT_QUANT_KV, "--quant-kv", "float32", "int8"},
    {OPT_KERNELS, "--kernels", "fast", "plain"},
    {OPT_WEIGHTS, "--weights", "stored", "f32"},
    {OPT_MLA, "--mla", "rebuilt", "absorbed"},
    {OPT_GELU, "--gelu", "exact", "ggml"},
    {OPT_KV_ROUNDING, "--kv-rounding", "none", "llama.cpp"},
};

int cli_quant_option(int c, const char *arg, CliQuant *q, StepError *err) {
    switch (c) {
        case OPT_QUANT_GROUP:
            return cli_parse_int(arg, "--quant-group", 1, 1 << 20, &q->run.group, err) ? 1 : -1;
        case OPT_THREADS:
            return cli_parse_int(arg, "--threads", 1, THREADS_MAX, &q->threads, err) ? 1 : -1;
        case OPT_KV_DTYPE: {
            static const char *const names[3] = {"f32", "f16", "bf16"};
            for (int i = 0; i < 3; i++)
                if (strcmp(arg, names[i]) == 0) return q->kv_dtype = i, 1;
            return step_fail(err, "--kv-dtype takes f32, f16 or bf16, got '%.40s'", arg), -1;
        }
    }
    size_t i = 0, n = sizeof QUANT_EITHER / sizeof QUANT_EITHER[0];
    while (i < n && QUANT_EITHER[i].id != c) i++;
    if (i == n) return 0;
    bool second;
    if (!cli_parse_either(arg, QUANT_EITHER[i].option, QUANT_EITHER[i].first,
                          QUANT_EITHER[i].second, &second, err))
        return -1;
    switch (c) {
        case OPT_QUANT_WEIGHTS:
            q->weights = second;
            break;
        case OPT_QUANT_ACTIVATIONS:
            q->run.activations = second;
            break;
        case OPT_QUANT_KV:
            q->run.kv = second;
            break;
        case OPT_KERNELS:
            q->kernels = second ? KERNELS_PLAIN : KERNELS_FAST;
            break;
        case OPT_WEIGHTS:
            q->weights_mode = second ? WEIGHTS_F32 : WEIGHTS_STORED;
            break;
        case OPT_MLA:
            q->mla_form = second ? MLA_ABSORBED : MLA_REBUILT;
            break;
        case OPT_GELU:
            q->gelu_ggml = second;
            break;
        case OPT_KV_ROUNDING:
            q->kv_rounding_ggml = second;
            break;
    }
    return 1;
}

/* What an open found that did not stop it: a warning. */
static void say_notes(const char *model_path, const ModelOpenNotes *notes) {
    if (notes->unused_tensors > 0)
        fprintf(stderr, "stepwise: warning: %s: %d tensor%s not used by the architecture (%s%s)\n",
                model_path, notes->unused_tensors, notes->unused_tensors == 1 ? " is" : "s are",
                notes->first_unused, notes->unused_tensors > 1 ? ", ..." : "");
}

/* model_open, saying what the open found that did not stop it. */
static bool open_model(const char *model_path, const char *tokenizer_path, Model *m, Tokenizer *tok,
                       WeightsMode mode, const ProgressSink *progress, StepError *err) {
    ModelOpenNotes notes;
    if (!model_open(model_path, tokenizer_path, m, tok, mode, progress, &notes, err)) return false;
    say_notes(model_path, &notes);
    return true;
}

bool cli_load_model(const char *model_path, const char *tokenizer_path, Model *m, Tokenizer *tok,
                    const ProgressSink *progress, StepError *err) {
    return open_model(model_path, tokenizer_path, m, tok, WEIGHTS_F32, progress, err);
}

bool cli_load_model_as(const char *model_path, const char *tokenizer_path, WeightsMode mode,
                       Model *m, Tokenizer *tok, const ProgressSink *progress, StepError *err) {
    return open_model(model_path, tokenizer_path, m, tok, mode, progress, err);
}

/* m prepared as q says (model_prepare.h), reporting to m->progress. */
static bool prepare_model(Model *m, const CliQuant *q, StepError *err) {
    ModelPrepare p = {.kernels = q->kernels,
                      .quant_group = q->weights ? q->run.group : 0,
                      .int8_activations = q->run.activations,
                      .threads = q->threads,
                      .mla_form = q->mla_form,
                      .gelu_f16_table = q->gelu_ggml,
                      .kv = (KvType)q->kv_dtype,
                      .kv_rounding_ggml = q->kv_rounding_ggml};
    return model_prepare(m, &p, err);
}

bool cli_load_model_to_run(const char *model_path, const char *tokenizer_path, const CliQuant *q,
                           const TraceOptions *trace, CliProgress *progress, Model *m,
                           Tokenizer *tok, StepError *err) {
    char note[PATH_MAX + 16];
    snprintf(note, sizeof note, "loading %s", model_path ? model_path : "the built-in model");
    cli_progress_note(progress, note);
    ProgressSink sink = cli_progress_sink(progress);
    /* the Hugging Face and GGUF loaders report their layers */
    /* int8 weights are quantized from the matrices however they are held;
     * a trace at level layers shows each weight's float32 original beside
     * its code, read from the float32 storage: widened at load for it */
    bool originals = q->weights && trace->level >= TRACE_LAYERS;
    WeightsMode mode = originals ? WEIGHTS_F32 : q->weights_mode;
    bool ok = open_model(model_path, tokenizer_path, m, tok, mode, &sink, err) &&
              trace_layers_check(trace, m->config.n_layers, err);
    if (ok && q->run.kv && q->kv_dtype != 0)
        ok = step_fail(err, "--quant-kv int8 and --kv-dtype %s: the cache holds one type",
                       q->kv_dtype == 1 ? "f16" : "bf16");
    if (ok && q->run.kv && !kv_type_exists(&m->config, KV_INT8)) /* before any output is opened */
        ok = step_fail(err, "%s: an int8 cache of MLA's latents is not supported",
                       model_path ? model_path : "the model");
    if (ok) m->progress = &sink;
    ok = ok && prepare_model(m, q, err);
    m->progress = NULL;
    cli_progress_clear(progress);
    return ok;
}

int cli_run_with_model(int parsed, CliModelRun *r, CliRunFunction run, void *args, StepError *err) {
    int status = parsed < 0 ? EXIT_BAD_INPUT : 0;
    if (parsed > 0) {
        Model m = {0};
        Tokenizer tok = {0}, *use = r->no_tokenizer ? NULL : &tok;
        CliProgress progress;
        cli_progress_init(&progress, r->quiet);
        bool loaded = cli_load_model_to_run(r->model, r->tokenizer, &r->quant, &r->trace, &progress,
                                            &m, use, err);
        ProgressSink sink = cli_progress_sink(&progress);
        if (r->layer_progress) m.progress = &sink;
        cli_signals_defer_begin();
        status = loaded ? run(args, &m, use, &progress, err) : EXIT_BAD_INPUT;
        cli_progress_clear(&progress);
        m.progress = NULL;
        cli_signals_defer_end();
        model_free(&m);
        tokenizer_free(&tok);
    }
    if (status == EXIT_BAD_INPUT || status > 128) cli_print_error(err);
    trace_options_free(&r->trace);
    return status;
}

bool cli_load_model_only(const char *model_path, WeightsMode mode, Model *m,
                         const ProgressSink *progress, StepError *err) {
    ModelOpenNotes notes;
    if (!model_open_weights(model_path, mode, m, progress, &notes, err)) return false;
    say_notes(model_path, &notes);
    return true;
}

/* The process's peak resident memory, in bytes (Linux reports KiB). */
uint64_t cli_peak_rss_bytes(void) {
    struct rusage ru;
    return getrusage(RUSAGE_SELF, &ru) == 0 ? (uint64_t)ru.ru_maxrss * 1024u : 0;
}

cJSON *cli_done_event(const Model *m, const Tokenizer *tok, const GenerateResult *r,
                      double total_seconds, bool measured) {
    char *text = tokenizer_decode_tokens(tok, r->tokens, r->n_tokens, -1);
    char *completion = tokenizer_decode_tokens(
        tok, r->tokens + r->n_prompt, r->n_tokens - r->n_prompt, r->tokens[r->n_prompt - 1]);
    uint64_t per_token =
        kv_cache_bytes_of(&m->config, 1, kv_type_for(&m->config, m->run.kv, r->kv_int8));
    TraceDone d = {.stop_reason = stop_reason_name(r->stop_reason),
                   .tokens = r->tokens,
                   .n_tokens = r->n_tokens,
                   .text = text ? text : "",
                   .completion = completion ? completion : "",
                   .prefill_tokens = r->n_prompt,
                   .decode_tokens = r->n_decoded,
                   .context_shifts = r->context_shifts,
                   .kv_bytes_per_token = per_token,
                   .kv_allocated_bytes = per_token * (uint64_t)r->cache_capacity,
                   .kv_peak_bytes = per_token * (uint64_t)r->positions_filled,
                   .work = r->work,
                   .ttft_seconds = r->first_token_seconds,
                   .prefill_seconds = r->prefill_seconds,
                   .decode_seconds = r->decode_seconds,
                   .total_seconds = total_seconds,
                   .measured = measured,
                   .peak_rss_bytes = cli_peak_rss_bytes()};
    cJSON *e = trace_event_done(&d);
    free(text);
    free(completion);
    return e;
}

void cli_print_error(const StepError *err) {
    fprintf(stderr, "stepwise: error: %s\n", err->message);
}

bool cli_option_error(const char *command, int c, int optopt_value, char **argv, int optind_value,
                      StepError *err) {
    const char *arg = argv[optind_value - 1];
    if (c == ':') return step_fail(err, "%s: option '%s' needs a value", command, arg);
    if (optopt_value != 0)
        return step_fail(err, "%s: unknown option '-%c' (see --help)", command, optopt_value);
    return step_fail(err, "%s: unknown option '%s' (see --help)", command, arg);
}
