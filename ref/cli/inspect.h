/* cli/inspect.h: the inspect command's parts: the bill (inspect_bill.c:
 * what the weights and the cache cost in the types a deployment would keep
 * them in) and the text report (inspect_text.c); cli/inspect.c parses the
 * options and writes the JSON. */
#ifndef STEPWISE_CLI_INSPECT_H
#define STEPWISE_CLI_INSPECT_H

#include <cjson/cJSON.h>
#include <stdint.h>

#include "ref/config.h"
#include "ref/model/model.h"

/* How the bill stores a value: a what-if for bytes only (stepwise computes
 * in float32 whatever the bill says). */
typedef enum { DTYPE_F32, DTYPE_BF16, DTYPE_F16, DTYPE_INT8 } BillDtype;

typedef struct {
    BillDtype kv, weights;
    int group; /* int8 weights' group */
} Bill;

/* "f32", "bf16", "f16", "int8": a BillDtype's name. */
extern const char *const BILL_DTYPE_NAMES[];

/* The cache facts of one shape at a context and request count. */
typedef struct {
    uint64_t weight_bytes, per_token, at_context, total;
    uint64_t outgrows_at; /* smallest context whose caches exceed the weights */
} CacheFacts;

/* batch --prefix-cache with a budget of `budget` bytes: the positions it
 * holds (float32 rows, or int8 ones with --kv-dtype int8, as batch keeps
 * them: prefix_cache_position_bytes), and the whole memory bill. */
typedef struct {
    uint64_t budget, positions, prompts, total;
} PrefixFacts;

/* The cache facts of c at a context and request count, as b bills them. */
CacheFacts inspect_cache_facts(const Config *c, int context, int requests, const Bill *b);

/* A mixture of experts: the weights one decode step reads, each layer's
 * router and only its k chosen experts (and the shared ones), the
 * classifier whole and one embedding row, in the bill's type. */
uint64_t inspect_decode_weight_bytes(const Config *c, const Bill *b);

/* The prefix cache's share of a budget of bytes, and the whole bill. */
PrefixFacts inspect_prefix_facts(const Config *c, int context, int requests, uint64_t budget,
                                 const Bill *b);

/* How many requests of `context` tokens fit in `memory` bytes beside the
 * weights (as b bills them), each with its own cache of kv's type: the
 * weights' bytes, one request's cache, and the count (0 when the weights
 * alone do not fit). */
typedef struct {
    uint64_t weight_bytes, per_request, requests;
} CapacityFacts;
CapacityFacts inspect_capacity(const Config *c, int context, uint64_t memory, BillDtype kv,
                               const Bill *b);

/* The cache types the capacity table compares (f16 stands for bf16 too:
 * the same 2 bytes), and their count. */
extern const BillDtype CAPACITY_DTYPES[];
#define CAPACITY_KINDS 3

/* One step of the roofline table: a decode of n requests at once, each
 * at position context - 1 against its own cache, or a prefill of an n-token
 * prompt; its multiply-adds (forward_body_macs and the classifier's for
 * each token whose logits it gives) and the bytes it must read (the weights
 * a decode step reads, once a step, and every request's cache; a prefill's
 * rows written once). */
typedef struct {
    bool decode;
    int n;
    uint64_t tokens, macs, bytes;
} RooflineStep;
#define ROOFLINE_DECODES  4
#define ROOFLINE_PREFILLS 3
extern const int ROOFLINE_BATCHES[ROOFLINE_DECODES];  /* 1, 4, 16, 64 */
extern const int ROOFLINE_PROMPTS[ROOFLINE_PREFILLS]; /* 16, 128, 512 */
RooflineStep inspect_roofline(const Config *c, int context, bool decode, int n, const Bill *b);

/* The most tokens a second the step allows at `bandwidth` bytes a second
 * and, when peak > 0, `peak` multiply-adds a second: the lower roof. */
double roofline_tokens_per_second(const RooflineStep *s, double bandwidth, double peak);

/* Bytes in MiB. */
double inspect_mib(uint64_t bytes);

/* The text report: the model, its weights and cache (MLA's in both forms,
 * or every KV-head count's what-if); the prefix cache's budget; the files
 * with their SHA-256; a GGUF file's tensors. */
void inspect_print_text(const char *name, const char *source, const Config *c, int context,
                        int requests, const Bill *b, bool is_q8, const WeightMemory *held);
void inspect_print_prefix(const Config *c, int context, int requests, uint64_t budget,
                          const Bill *b);
void inspect_print_files(const cJSON *files);
/* The roofline table: every RooflineStep's intensity and bound at this
 * bandwidth (and peak, when > 0). */
void inspect_print_roofline(const Config *c, int context, double bandwidth, double peak,
                            const Bill *b);
/* The same as JSON (inspect --json's "roofline"). */
cJSON *inspect_roofline_json(const Config *c, int context, double bandwidth, double peak,
                             const Bill *b);
/* The capacity table: for every KV-head count (MLA: the model itself),
 * the requests of `context` tokens that fit in `memory` with a float32,
 * a 16-bit and an int8 cache. */
void inspect_print_capacity(const Config *c, int context, uint64_t memory, const Bill *b);
void inspect_print_gguf_tensors(const cJSON *list);

#endif
