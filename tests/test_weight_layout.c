/* test_weight_layout.c: the one table of a model's weights (weight_layout.h)
 * against the parameter count's own closed form (config_param_count), its
 * vectors kept whole when storage is compacted, and a value that is not
 * finite found in any vector and named by hand. */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "ref/formats/hf_config.h"
#include "ref/model/model.h"
#include "ref/model/model_pack.h"
#include "ref/nonfinite.h"
#include "ref/model/weight_layout.h"

/* A small model of the family called name; experts: a mixture's fields too. */
static Config shape(const char *name) {
    const Family *a = family_find(name);
    Config c = {.dim = 32,
                .hidden_dim = 48,
                .n_layers = 3,
                .n_heads = 4,
                .n_kv_heads = 2,
                .vocab_size = 61,
                .seq_len = 16,
                .shared_classifier = a != family_find("qwen2")};
    family_apply(a, &c);
    if (a->routing != FAMILY_ROUTING_NONE)
        c.n_experts = 4, c.n_experts_used = 2, c.expert_hidden_dim = 24;
    if (a->routing == FAMILY_ROUTING_QWEN3MOE) c.moe_step = 2; /* layer 0 dense, 1 MoE, 2 dense */
    if (a->attention == FAMILY_ATTENTION_MLA)
        c.n_kv_heads = 4, c.head_dim = 12, c.kv_lora_rank = 8, c.qk_rope_head_dim = 4,
        c.q_lora_rank = 16, c.v_head_dim = 8, c.n_shared_experts = 1, c.n_dense_layers = 1,
        c.dense_layers[0] = 0;
    return c;
}

/* The table's parts sum to config_param_count's closed form, written
 * apart from it (config.c), for every family; and each part lies where
 * the last one ended. */
Test(weight_layout, the_parts_are_every_parameter) {
    for (int a = 0; a < FAMILY_COUNT; a++) { /* every family of family.h */
        Config c = shape(FAMILY_LIST[a].name);
        StepError err;
        cr_assert(config_validate(&c, "test", &err), "%s: %s", FAMILY_LIST[a].name, err.message);
        uint64_t sum = 0;
        for (int i = 0; i < WEIGHT_PARTS; i++) sum += weight_part_floats(&c, weight_part(i));
        cr_expect_eq(sum, config_param_count(&c), "%s: the table holds %llu, the count says %llu",
                     FAMILY_LIST[a].name, (unsigned long long)sum,
                     (unsigned long long)config_param_count(&c));
        cr_expect_eq(model_storage_floats(&c), sum);
    }
}

/* Every vector of a model is found by model_vector at its row: GPT-2's
 * positions one a position, Qwen3-MoE's router one a MoE layer (its one
 * MoE layer is layer 1, slot 0), the final norm one in all. */
Test(weight_layout, vectors_are_found_by_row) {
    Config c = shape("qwen3moe");
    Model m;
    StepError err;
    cr_assert(model_init_random(&m, &c, 5, &err), "%s", err.message);
    int count, width;
    weight_vector_shape(&c, VEC_ROUTER, &count, &width);
    cr_expect_eq(count, 1, "one MoE layer of three");
    cr_expect_eq(width, 4 * 32, "its 4 experts' rows of dim 32 side by side");
    cr_expect_not_null(model_vector(&m, VEC_ROUTER, 0));
    cr_expect_null(model_vector(&m, VEC_ROUTER, 1), "no second MoE layer");
    cr_expect_null(model_vector(&m, VEC_Q_BIAS, 0), "Qwen3 has no q bias");
    cr_expect_eq(model_vector(&m, VEC_Q_NORM, 2) - model_vector(&m, VEC_Q_NORM, 0), 2 * 8,
                 "q_norm rows are head_dim 8 apart");
    model_free(&m);
}

/* Compacting storage (once the matrices are packed) keeps every vector's
 * values, byte for byte, each found again at its row. */
Test(weight_layout, compacting_keeps_every_vector) {
    const char *archs[] = {"qwen2", "gpt2", "gemma3", "deepseek2"};
    for (size_t a = 0; a < sizeof archs / sizeof archs[0]; a++) {
        Config c = shape(archs[a]);
        Model m;
        StepError err;
        cr_assert(model_init_random(&m, &c, 11, &err), "%s", err.message);
        float *before[VECTOR_KINDS] = {0};
        size_t floats[VECTOR_KINDS] = {0};
        for (int k = 0; k < VECTOR_KINDS; k++) {
            int count, width;
            weight_vector_shape(&c, (VectorKind)k, &count, &width);
            floats[k] = (size_t)count * width;
            if (floats[k] == 0) continue;
            before[k] = malloc(floats[k] * sizeof(float));
            memcpy(before[k], model_vector(&m, (VectorKind)k, 0), floats[k] * sizeof(float));
        }
        cr_assert(model_pack(&m, &err), "%s", err.message);
        cr_assert(model_compact_storage(&m, &err), "%s", err.message);
        cr_expect_lt(m.storage_floats, config_param_count(&c), "only the vectors are left");
        for (int k = 0; k < VECTOR_KINDS; k++) {
            if (floats[k] == 0) {
                cr_expect_null(m.vectors[k]);
                continue;
            }
            cr_expect_eq(
                memcmp(before[k], model_vector(&m, (VectorKind)k, 0), floats[k] * sizeof(float)), 0,
                "%s: %s changed", archs[a], weight_vector_name((VectorKind)k));
            free(before[k]);
        }
        model_free(&m);
    }
}

/* A NaN in any vector is found and named: a layer's K bias, GPT-2's
 * position table (by position) and a MoE layer's router (by its layer). */
static void expect_named(const char *a, VectorKind k, int row, int col, const char *want) {
    Config c = shape(a);
    Model m;
    StepError err;
    cr_assert(model_init_random(&m, &c, 3, &err), "%s", err.message);
    cr_assert(model_check_finite(&m, &err), "%s", err.message);
    model_vector_slot(&m, k, row)[col] = NAN;
    cr_expect_not(model_check_finite(&m, &err));
    cr_expect_str_eq(err.message, want);
    model_free(&m);
}

Test(weight_layout, a_nan_in_any_vector_is_named) {
    /* Qwen2's K bias: kv_dim = 2 heads x 8 = 16 */
    expect_named("qwen2", VEC_K_BIAS, 1, 3,
                 "weight blocks.1.attn.bk [1, 16] holds nan at row 0, column 3");
    /* GPT-2's positions: [seq_len 16, dim 32] */
    expect_named("gpt2", VEC_POSITIONS, 5, 2,
                 "weight position_embedding [16, 32] holds nan at row 5, column 2");
    /* Qwen3-MoE's router: MoE slot 0 is layer 1 */
    expect_named("qwen3moe", VEC_ROUTER, 0, 7,
                 "weight blocks.1.moe.router [1, 128] holds nan at row 0, column 7");
    /* Gemma's post-norm, once only a matrix's values were checked */
    expect_named("gemma2", VEC_POST_FFN_NORM, 2, 0,
                 "weight blocks.2.mlp.post_norm [1, 32] holds nan at row 0, column 0");
}

/* The widest row a matrix has need not be a config width: DeepSeek-V2's
 * shared experts' down is n_shared_experts x expert_hidden_dim = 2 x 24 =
 * 48 wide, past hidden_dim (48 here too, but expert_hidden_dim 24 and dim
 * 32). model_check_finite reads each row whole (under the sanitizers, a
 * narrower row buffer is an overflow) and names a NaN in its last column. */
Test(weight_layout, a_nan_in_the_widest_row_is_named) {
    Config c = shape("deepseek2");
    c.n_shared_experts = 2, c.hidden_dim = 24; /* the shared down [32, 48]: wider than any width */
    Model m;
    StepError err;
    cr_assert(model_init_random(&m, &c, 9, &err), "%s", err.message);
    int layer = 1; /* MoE (layer 0 is dense) */
    float *down = model_matrix_slot(&m, &m.layers[layer].m[MAT_SHARED_DOWN]);
    cr_assert_not_null(down);
    cr_assert_eq(m.layers[layer].m[MAT_SHARED_DOWN].cols, 48);
    down[5 * 48 + 47] = NAN; /* row 5, the last column */
    cr_expect_not(model_check_finite(&m, &err));
    cr_expect_str_eq(err.message,
                     "weight blocks.1.moe.shared.down [32, 48] holds nan at row 5, column 47");
    model_free(&m);
}
