/* hf_deepseek2.c: see hf_deepseek2.h. */
#include "ref/formats/hf_deepseek2.h"

#include <string.h>

#include "ref/formats/hf_moe.h"
#include "ref/util/json_util.h"

/* One of config.json's string keys, absent meaning `absent`, must be `want`. */
static bool string_is(const cJSON *root, const char *key, const char *absent, const char *want,
                      const char *what, StepError *err) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, key);
    const char *s = v == NULL || cJSON_IsNull(v) ? absent : cJSON_IsString(v) ? v->valuestring : "";
    if (strcmp(s, want) == 0) return true;
    return step_fail(err, "%s: %s %.40s is not supported (%s)", what, key, s[0] ? s : "(not text)",
                     want);
}

bool hf_deepseek2_config(const cJSON *root, Config *c, const char *what, StepError *err) {
    int nope, first_dense = 0, freq = 1;
    if (!json_int_field(root, "qk_nope_head_dim", 1, 65536, &nope) || c->qk_rope_head_dim <= 0 ||
        c->kv_lora_rank <= 0)
        return step_fail(err,
                         "%s: config.json needs qk_nope_head_dim, qk_rope_head_dim and "
                         "kv_lora_rank, whole numbers from 1",
                         what);
    c->head_dim = nope + c->qk_rope_head_dim;
    if (c->v_head_dim == 0) c->v_head_dim = nope;
    /* topk_method: greedy over all the experts, or within the groups
     * (n_group, topk_group: the table's expert_groups, expert_groups_used),
     * which greedy leaves unused */
    const cJSON *method = cJSON_GetObjectItemCaseSensitive(root, "topk_method");
    bool grouped =
        cJSON_IsString(method) && strcmp(method->valuestring, "group_limited_greedy") == 0;
    if (!grouped) c->expert_groups = 0, c->expert_groups_used = 0;
    if (grouped && (c->expert_groups == 0 || c->expert_groups_used == 0))
        return step_fail(err, "%s: topk_method group_limited_greedy needs n_group and topk_group",
                         what);
    if ((!grouped && !string_is(root, "topk_method", "greedy", "greedy", what, err)) ||
        !string_is(root, "scoring_func", "softmax", "softmax", what, err))
        return false;
    const cJSON *routed = cJSON_GetObjectItemCaseSensitive(root, "n_routed_experts");
    if (routed == NULL || cJSON_IsNull(routed)) { /* a dense model */
        c->n_shared_experts = 0, c->routed_scaling_factor = 0, c->expert_hidden_dim = 0;
        c->moe_step = 0;
        c->expert_norm_topk = false;
        return true;
    }
    if (!hf_moe_routed_experts(root, "n_routed_experts", true, c, what, err)) return false;
    const cJSON *k = cJSON_GetObjectItemCaseSensitive(root, "first_k_dense_replace");
    if (k != NULL && !json_int_field(root, "first_k_dense_replace", 0, c->n_layers, &first_dense))
        return step_fail(err, "%s: first_k_dense_replace must be a whole number in [0, %d]", what,
                         c->n_layers);
    const cJSON *f = cJSON_GetObjectItemCaseSensitive(root, "moe_layer_freq");
    if (f != NULL && (!json_int_field(root, "moe_layer_freq", 1, 1 << 20, &freq) || freq != 1))
        return step_fail(err, "%s: moe_layer_freq other than 1 is not supported", what);
    if (first_dense > CONFIG_MAX_DENSE_LAYERS)
        return step_fail(err, "%s: first_k_dense_replace must be at most %d", what,
                         CONFIG_MAX_DENSE_LAYERS);
    for (int l = 0; l < first_dense; l++) c->dense_layers[c->n_dense_layers++] = l;
    return true;
}
