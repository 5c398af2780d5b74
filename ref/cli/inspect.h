/* cli/inspect.h: the inspect command's parts: the bill (inspect_bill.c:
 * what the weights and the cache cost in the types a deployment would keep
 * them in) and the text report (inspect_text.c); cli/inspect.c parses the
 * options and writes the JSON. */
#ifndef STEPWISE_CLI_INSPECT_H
#define STEPWISE_CLI_INSPECT_H

#include <cjson/cJSON.h>
#include <stdint.h>

#include "ref/config.h"
#include "ref/model.h"

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
void inspect_print_gguf_tensors(const cJSON *list);

#endif
