/* gguf_mla.c: see gguf_mla.h. */
#include "ref/formats/gguf_mla.h"

#include <stdio.h>
#include <stdlib.h>

/* Layer l's tensor blk.l.<what>, if the file holds it. */
static GgufTensor *layer_tensor(const GgufFile *f, int l, const char *what) {
    char name[128];
    snprintf(name, sizeof name, "blk.%d.%s", l, what);
    return gguf_find_tensor(f, name);
}

bool gguf_mla_split(const GgufFile *f, int l) {
    return layer_tensor(f, l, "attn_k_b.weight") != NULL &&
           layer_tensor(f, l, "attn_v_b.weight") != NULL;
}

bool gguf_mla_one_form(const GgufFile *f, int l, StepError *err) {
    bool split = layer_tensor(f, l, "attn_k_b.weight") != NULL ||
                 layer_tensor(f, l, "attn_v_b.weight") != NULL;
    if (!split || layer_tensor(f, l, "attn_kv_b.weight") == NULL) return true;
    return step_fail(err,
                     "%s: blk.%d holds kv_b twice, attn_kv_b and the split attn_k_b/attn_v_b: "
                     "one form of a tensor, not two",
                     f->path, l);
}

/* Whether t is 3-dimensional with ne [a, b, c]. */
static bool shaped(const GgufTensor *t, uint64_t a, uint64_t b, uint64_t c) {
    return t != NULL && t->n_dims == 3 && t->ne[0] == a && t->ne[1] == b && t->ne[2] == c;
}

bool gguf_mla_kv_b(const GgufFile *f, int l, const Config *c, float *dst, StepError *err) {
    size_t H = (size_t)c->n_heads, rank = (size_t)c->kv_lora_rank;
    size_t nope = (size_t)(config_head_dim(c) - c->qk_rope_head_dim),
           v = (size_t)config_v_head_dim(c);
    GgufTensor *k_b = layer_tensor(f, l, "attn_k_b.weight");
    GgufTensor *v_b = layer_tensor(f, l, "attn_v_b.weight");
    if (!shaped(k_b, nope, rank, H) || !shaped(v_b, rank, v, H))
        return step_fail(err,
                         "%s: blk.%d.attn_k_b and attn_v_b must be [%zu heads, %zu, %zu] and "
                         "[%zu heads, %zu, %zu] (kv_lora_rank %zu)",
                         f->path, l, H, rank, nope, H, v, rank, rank);
    float *keys = malloc(H * rank * nope * sizeof(float)),
          *values = malloc(H * v * rank * sizeof(float));
    bool ok = keys != NULL && values != NULL;
    if (ok) {
        gguf_to_f32(k_b, keys);   /* [H, rank, nope] */
        gguf_to_f32(v_b, values); /* [H, v, rank] */
        for (size_t h = 0; h < H; h++) {
            float *head = dst + h * (nope + v) * rank; /* rows: the head's nope keys, then values */
            for (size_t n = 0; n < nope; n++)
                for (size_t r = 0; r < rank; r++)
                    head[n * rank + r] = keys[(h * rank + r) * nope + n];
            for (size_t j = 0; j < v; j++)
                for (size_t r = 0; r < rank; r++)
                    head[(nope + j) * rank + r] = values[(h * v + j) * rank + r];
        }
        k_b->used = 1, v_b->used = 1;
    }
    free(keys), free(values);
    return ok || step_fail(err, "%s: out of memory", f->path);
}
