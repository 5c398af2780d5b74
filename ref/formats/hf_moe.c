/* hf_moe.c: see hf_moe.h. */
#include "ref/formats/hf_moe.h"

#include <stdio.h>
#include <string.h>

#include "ref/family.h"
#include "ref/util/json_util.h"

/* mlp_only_layers: a list of layer indices, each below n_layers. */
static bool dense_list(const cJSON *root, Config *c, const char *what, StepError *err) {
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(root, "mlp_only_layers"), *v;
    if (list == NULL || cJSON_IsNull(list)) return true;
    if (!cJSON_IsArray(list) || cJSON_GetArraySize(list) > CONFIG_MAX_DENSE_LAYERS)
        return step_fail(err, "%s: mlp_only_layers must list at most %d layers", what,
                         CONFIG_MAX_DENSE_LAYERS);
    cJSON_ArrayForEach(v, list) {
        if (!cJSON_IsNumber(v) || v->valuedouble != (int)v->valuedouble || v->valuedouble < 0 ||
            v->valuedouble >= c->n_layers)
            return step_fail(err, "%s: mlp_only_layers holds something other than a layer index",
                             what);
        c->dense_layers[c->n_dense_layers++] = (int)v->valuedouble;
    }
    return true;
}

bool hf_moe_routed_experts(const cJSON *root, const char *experts, bool width, Config *c,
                           const char *what, StepError *err) {
    if (!json_int_field(root, experts, 1, 4096, &c->n_experts))
        return step_fail(err, "%s: config.json needs %s, a whole number in [1, 4096]", what,
                         experts);
    if (!json_int_field(root, "num_experts_per_tok", 1, c->n_experts, &c->n_experts_used))
        return step_fail(err, "%s: num_experts_per_tok must be a whole number in [1, %s %d]", what,
                         experts, c->n_experts);
    if (width && c->expert_hidden_dim == 0)
        return step_fail(err, "%s: config.json needs moe_intermediate_size, a whole number from 1",
                         what);
    return true;
}

bool hf_moe_config(const cJSON *root, bool qwen, Config *c, const char *what, StepError *err) {
    /* Mixtral's experts are intermediate_size wide: family_apply (family.h) */
    return hf_moe_routed_experts(root, qwen ? "num_experts" : "num_local_experts", qwen, c, what,
                                 err) &&
           (!qwen || dense_list(root, c, what, err));
}

bool hf_moe_mixtral(const Config *c) {
    return family_of_config(c)->routing == FAMILY_ROUTING_MIXTRAL;
}

void hf_moe_tensor_name(bool qwen, int l, int expert, ExpertKind part, char *buf, size_t size) {
    static const char *const mixtral[3] = {"w1", "w2", "w3"};
    static const char *const qwen3[3] = {"gate_proj", "down_proj", "up_proj"};
    if (expert < 0)
        snprintf(buf, size, "model.layers.%d.%s.gate.weight", l, qwen ? "mlp" : "block_sparse_moe");
    else if (qwen)
        snprintf(buf, size, "model.layers.%d.mlp.experts.%d.%s.weight", l, expert, qwen3[part]);
    else
        snprintf(buf, size, "model.layers.%d.block_sparse_moe.experts.%d.%s.weight", l, expert,
                 mixtral[part]);
}

const float *hf_moe_tensor_view(const Model *m, int l, int expert, ExpertKind part, int *rows,
                                int *cols) {
    const Config *c = &m->config;
    if (expert < 0) {
        *rows = c->n_experts, *cols = c->dim;
        return model_vector(m, VEC_ROUTER, config_moe_slot(c, l));
    }
    expert_matrix_shape(c, part, rows, cols);
    return model_matrix_floats(m, model_expert(m, l, expert, part));
}
