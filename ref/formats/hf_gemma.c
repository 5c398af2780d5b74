/* hf_gemma.c: see hf_gemma.h. */
#include "ref/formats/hf_gemma.h"

#include <math.h>
#include <string.h>

#include "ref/util/float16.h"
#include "ref/util/json_util.h"

/* The sliding pattern of layer_types (a list of "sliding_attention" and
 * "full_attention", one a layer): p when layer l slides exactly when
 * (l + 1) % p != 0, 0 when every layer slides; -1 (no window) when none
 * does. A list no such p describes is refused. */
static bool pattern_of_types(const cJSON *types, int n_layers, int *pattern, const char *what,
                             StepError *err) {
    if (!cJSON_IsArray(types) || cJSON_GetArraySize(types) != n_layers)
        return step_fail(
            err, "%s: config.json's layer_types must list one type for each of the %d layers", what,
            n_layers);
    int first_full = -1, l = 0, slides = 0;
    const cJSON *t;
    cJSON_ArrayForEach(t, types) {
        const char *s = cJSON_IsString(t) ? t->valuestring : "";
        bool sliding = strcmp(s, "sliding_attention") == 0;
        if (!sliding && strcmp(s, "full_attention") != 0)
            return step_fail(err,
                             "%s: layer_types[%d] %.40s is not sliding_attention or full_attention",
                             what, l, s);
        if (!sliding && first_full < 0) first_full = l;
        slides += sliding, l++;
    }
    *pattern = slides == 0 ? -1 : first_full < 0 ? 0 : first_full + 1;
    l = 0;
    cJSON_ArrayForEach(t, types) {
        bool sliding = strcmp(t->valuestring, "sliding_attention") == 0;
        if (*pattern > 0 && sliding != ((l + 1) % *pattern != 0))
            return step_fail(err,
                             "%s: layer_types repeats no pattern of sliding layers ending in a "
                             "full one (layer %d breaks it): not supported",
                             what, l);
        l++;
    }
    return true;
}

bool hf_gemma_config(const cJSON *root, int pattern, Config *c, const char *what, StepError *err) {
    const char *act = json_string_field(root, "hidden_activation");
    if (act == NULL) act = json_string_field(root, "hidden_act");
    if (act != NULL && strcmp(act, "gelu_pytorch_tanh") != 0)
        return step_fail(err, "%s: hidden_activation %.40s is not supported (gelu_pytorch_tanh)",
                         what, act);
    const cJSON *types = cJSON_GetObjectItemCaseSensitive(root, "layer_types");
    if (types != NULL && !cJSON_IsNull(types)) {
        if (!pattern_of_types(types, c->n_layers, &pattern, what, err)) return false;
    } else if (cJSON_GetObjectItemCaseSensitive(root, "sliding_window_pattern") != NULL &&
               !json_int_field(root, "sliding_window_pattern", 1, 1 << 20, &pattern)) {
        return step_fail(
            err, "%s: config.json's sliding_window_pattern must be a whole number from 1", what);
    }
    if (pattern > c->n_layers) pattern = 0;                 /* no layer reaches the full one */
    if (pattern == 1 || pattern < 0) c->sliding_window = 0; /* every layer is full */
    c->sliding_pattern = c->sliding_window > 0 ? pattern : 0;
    return true;
}

float hf_gemma_embed_scale(int dim, SafetensorsDtype dtype) {
    float s = (float)sqrt((double)dim);
    if (dtype == ST_BF16) {
        uint32_t bits = (uint32_t)float_to_bf16(s) << 16;
        memcpy(&s, &bits, sizeof s);
    } else if (dtype == ST_F16) {
        s = half_round(s);
    }
    return s;
}

bool hf_is_norm_weight(const char *name) {
    size_t n = strlen(name);
    return n >= 11 && strcmp(name + n - 11, "norm.weight") == 0;
}
