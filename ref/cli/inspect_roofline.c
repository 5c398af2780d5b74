/* cli/inspect_roofline.c: see inspect.h's inspect_roofline.
 *
 * A step's multiply-adds over the bytes it must read give its arithmetic
 * intensity. A machine streams bytes at its bandwidth B and multiplies at
 * its peak P; below P / B multiply-adds a byte (the machine's balance) a
 * step cannot finish before its bytes have arrived, so tokens/s <= B x
 * tokens a step / bytes a step; above it, the multiplies take longer. A
 * decode step reads every weight for one token per request: on a machine
 * whose balance is tens of multiply-adds a byte, its 0.25 to 2 keep it
 * waiting on memory. */
#include "ref/cli/inspect.h"

#include <stdio.h>

#include "ref/forward.h"

const int ROOFLINE_BATCHES[ROOFLINE_DECODES] = {1, 4, 16, 64};
const int ROOFLINE_PROMPTS[ROOFLINE_PREFILLS] = {16, 128, 512};

/* The classifier's multiply-adds for one token's logits. */
static uint64_t classifier_macs(const Config *c) {
    return (uint64_t)c->vocab_size * (uint64_t)c->dim;
}

RooflineStep inspect_roofline(const Config *c, int context, bool decode, int n, const Bill *b) {
    uint64_t weights = inspect_decode_weight_bytes(c, b); /* each read once a step */
    uint64_t per_token = inspect_cache_facts(c, context, 1, b).per_token;
    RooflineStep s = {.decode = decode, .n = n, .tokens = (uint64_t)n};
    if (decode) { /* n requests, each one token at position context - 1 against its cache */
        s.macs = (uint64_t)n * (forward_body_macs(c, 1, context - 1) + classifier_macs(c));
        s.bytes = weights + (uint64_t)n * (uint64_t)context * per_token;
    } else { /* one prompt of n tokens from position 0; the last token's logits */
        s.macs = forward_body_macs(c, n, 0) + classifier_macs(c);
        s.bytes = weights + (uint64_t)n * per_token; /* its rows written once */
    }
    return s;
}

double roofline_tokens_per_second(const RooflineStep *s, double bandwidth, double peak) {
    double memory = bandwidth * (double)s->tokens / (double)s->bytes;
    double compute = peak > 0 ? peak * (double)s->tokens / (double)s->macs : memory;
    return memory < compute ? memory : compute;
}

void inspect_print_roofline(const Config *c, int context, double bandwidth, double peak,
                            const Bill *b) {
    printf("\nroofline at %.1f GB/s", bandwidth / 1e9);
    if (peak > 0)
        printf(" and %.1f G multiply-adds/s (balance %.2f multiply-adds a byte)", peak / 1e9,
               peak / bandwidth);
    printf(", context %d, weights %s, cache %s:\n\n", context, BILL_DTYPE_NAMES[b->weights],
           BILL_DTYPE_NAMES[b->kv]);
    printf(
        "| step | tokens a step | multiply-adds | bytes read | multiply-adds a byte | bound by | "
        "tokens/s at most |\n|---|---|---|---|---|---|---|\n");
    for (int i = 0; i < ROOFLINE_DECODES + ROOFLINE_PREFILLS; i++) {
        bool decode = i < ROOFLINE_DECODES;
        int n = decode ? ROOFLINE_BATCHES[i] : ROOFLINE_PROMPTS[i - ROOFLINE_DECODES];
        RooflineStep s = inspect_roofline(c, context, decode, n, b);
        double intensity = (double)s.macs / (double)s.bytes;
        const char *bound = peak <= 0                      ? "memory (no peak given)"
                            : intensity < peak / bandwidth ? "memory"
                                                           : "compute";
        printf("| %s %d | %llu | %llu | %llu | %.2f | %s | %.1f |\n",
               decode ? "decode, batch" : "prefill of", n, (unsigned long long)s.tokens,
               (unsigned long long)s.macs, (unsigned long long)s.bytes, intensity, bound,
               roofline_tokens_per_second(&s, bandwidth, peak));
    }
}

cJSON *inspect_roofline_json(const Config *c, int context, double bandwidth, double peak,
                             const Bill *b) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "bandwidth_bytes_per_second", bandwidth);
    cJSON_AddNumberToObject(o, "peak_macs_per_second", peak);
    cJSON_AddNumberToObject(o, "context", context);
    cJSON *steps = cJSON_AddArrayToObject(o, "steps");
    for (int i = 0; i < ROOFLINE_DECODES + ROOFLINE_PREFILLS; i++) {
        bool decode = i < ROOFLINE_DECODES;
        int n = decode ? ROOFLINE_BATCHES[i] : ROOFLINE_PROMPTS[i - ROOFLINE_DECODES];
        RooflineStep s = inspect_roofline(c, context, decode, n, b);
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "step", decode ? "decode" : "prefill");
        cJSON_AddNumberToObject(e, decode ? "batch" : "prompt_tokens", n);
        cJSON_AddNumberToObject(e, "tokens", (double)s.tokens);
        cJSON_AddNumberToObject(e, "macs", (double)s.macs);
        cJSON_AddNumberToObject(e, "bytes", (double)s.bytes);
        cJSON_AddNumberToObject(e, "macs_per_byte", (double)s.macs / (double)s.bytes);
        cJSON_AddNumberToObject(e, "tokens_per_second_at_most",
                                roofline_tokens_per_second(&s, bandwidth, peak));
        cJSON_AddItemToArray(steps, e);
    }
    return o;
}
