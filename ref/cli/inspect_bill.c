/* cli/inspect_bill.c: see inspect.h. */
#include "ref/cli/inspect.h"

#include "ref/model/model_quant.h"
#include "ref/serve/prefix_cache.h"

const char *const BILL_DTYPE_NAMES[] = {"f32", "bf16", "f16", "int8"};

/* Bytes of the weights and of one position's K and V rows as b stores them. */
static uint64_t bill_weight_bytes(const Config *c, const Bill *b) {
    if (b->weights == DTYPE_INT8) return quant_weight_bytes(c, b->group);
    return config_param_count(c) * (b->weights == DTYPE_F32 ? 4u : 2u);
}

/* A mixture of experts: the weights one decode step reads, each layer's
 * router and only its k chosen experts, the classifier whole and one
 * embedding row (all of it when tied: the classifier), in the bill's type:
 * in int8, every held byte (quant_weight_bytes) but the experts not chosen
 * and the embedding's other rows. */
uint64_t inspect_decode_weight_bytes(const Config *c, const Bill *b) {
    if (b->weights == DTYPE_INT8) {
        int g = b->group, rows, cols;
        uint64_t bytes = quant_weight_bytes(c, g), row = quant_matrix_bytes(1, c->dim, g);
        uint64_t unchosen = (uint64_t)(c->n_layers - config_dense_layers(c)) *
                            (uint64_t)(c->n_experts - c->n_experts_used);
        for (int k = 0; k < EXPERT_MATRICES; k++) {
            expert_matrix_shape(c, (ExpertKind)k, &rows, &cols);
            bytes -= unchosen * quant_matrix_bytes(rows, cols, g);
        }
        return c->shared_classifier ? bytes + row : bytes - (uint64_t)(c->vocab_size - 1) * row;
    }
    uint64_t d = (uint64_t)c->dim, params = config_active_param_count(c);
    /* the classifier whole and one embedding row: tied, the row besides the shared matrix */
    params = c->shared_classifier ? params + d : params - (uint64_t)(c->vocab_size - 1) * d;
    return params * (b->weights == DTYPE_F32 ? 4u : 2u);
}

static uint64_t bill_kv_bytes_per_token(const Config *c, const Bill *b) {
    if (b->kv == DTYPE_INT8) return kv_cache_bytes_q8(c, 1);
    return kv_cache_bytes(c, 1) / (b->kv == DTYPE_F32 ? 1u : 2u);
}

CacheFacts inspect_cache_facts(const Config *c, int context, int requests, const Bill *b) {
    CacheFacts f;
    f.weight_bytes = bill_weight_bytes(c, b);
    f.per_token = bill_kv_bytes_per_token(c, b);
    f.at_context = f.per_token * (uint64_t)context;
    f.total = f.at_context * (uint64_t)requests;
    f.outgrows_at = f.weight_bytes / (f.per_token * (uint64_t)requests) + 1;
    return f;
}

double inspect_mib(uint64_t bytes) {
    return (double)bytes / (1024.0 * 1024.0);
}

PrefixFacts inspect_prefix_facts(const Config *c, int context, int requests, uint64_t budget,
                                 const Bill *b) {
    CacheFacts f = inspect_cache_facts(c, context, requests, b);
    PrefixFacts p = {.budget = budget,
                     .positions = budget / prefix_cache_position_bytes(
                                               c, b->kv == DTYPE_INT8 ? KV_INT8 : KV_F32)};
    p.prompts = p.positions / (uint64_t)context;
    p.total = f.weight_bytes + f.total + budget;
    return p;
}

const BillDtype CAPACITY_DTYPES[CAPACITY_KINDS] = {DTYPE_F32, DTYPE_F16, DTYPE_INT8};

CapacityFacts inspect_capacity(const Config *c, int context, uint64_t memory, BillDtype kv,
                               const Bill *b) {
    Bill cache = *b;
    cache.kv = kv;
    CacheFacts f = inspect_cache_facts(c, context, 1, &cache);
    CapacityFacts k = {.weight_bytes = f.weight_bytes, .per_request = f.at_context};
    if (memory > f.weight_bytes && f.at_context > 0)
        k.requests = (memory - f.weight_bytes) / f.at_context;
    return k;
}
