/* test_run_state.c: what a request owns from pass to pass (its cache) and
 * what a pass owns (attention's room), by hand formulas; and the cache's
 * one rule of which types exist. */
#include <criterion/criterion.h>

#include "ref/forward.h"
#include "ref/run/kv_cache.h"
#include "ref/run_state.h"

/* DeepSeek-V2-Lite's attention (deepseek-ai/DeepSeek-V2-Lite's config.json):
 * 27 layers, 16 heads of 192 (qk_nope 128 + qk_rope 64), v_head_dim 128,
 * kv_lora_rank 512, no q_lora_rank. */
static Config deepseek_v2_lite(void) {
    return (Config){.dim = 2048,
                    .hidden_dim = 10944,
                    .n_layers = 27,
                    .n_heads = 16,
                    .n_kv_heads = 16,
                    .head_dim = 192,
                    .vocab_size = 102400,
                    .seq_len = 163840,
                    .kv_lora_rank = 512,
                    .qk_rope_head_dim = 64,
                    .v_head_dim = 128};
}

/* Issue 68: at 4,096 positions a DeepSeek-V2-Lite request held 144 MiB of
 * attention scratch beside its 243 MiB cache: scores [16, 4096], kv_b of
 * every latent [4096, 16 x (128 + 128)], the rebuilt keys [4096, 16 x 192]
 * and values [4096, 16 x 128], and the absorbed form's [2 x 512], in
 * float32: 4 x (65,536 + 16,777,216 + 12,582,912 + 8,388,608 + 1,024) =
 * 151,261,184 bytes (144.25 MiB); and, for passes of 8 tokens or more, the
 * keys transposed [4096, 16 x 192] (48 MiB) that MLA never reads. That room
 * is now the pass's, once, whatever the number of sequences it serves, and
 * without the transposed keys; a request owns its cache only:
 * 27 x 4096 x (512 + 64) x 4 = 254,803,968 bytes (243 MiB). */
Test(run_state, deepseek_v2_lite_attention_room_is_the_pass_s) {
    Config c = deepseek_v2_lite();
    uint64_t room = 4u * (16u * 4096 + 4096u * 16 * (128 + 128) + 4096u * 16 * 192 +
                          4096u * 16 * 128 + 2u * 512);
    cr_expect_eq(room, 151261184u);
    cr_expect_eq(pass_attention_bytes(&c, 1, 4096, KV_MLA_LATENT), room);
    cr_expect_eq(pass_attention_bytes(&c, 4096, 4096, KV_MLA_LATENT), room,
                 "MLA reads no transposed keys: none for long passes either");
    cr_expect_eq(kv_cache_bytes_of(&c, 4096, KV_MLA_LATENT), 254803968u);
}

/* A GQA model's room: scores [n_heads, P]; the widened layer [P, kv_dim]
 * twice for an int8 or 16-bit cache (none for float32, read in place); the
 * transposed keys [P, kv_dim] for passes of 8 tokens or more. */
Test(run_state, gqa_attention_room_by_cache_type) {
    Config c = {.dim = 64, .n_layers = 3, .n_heads = 4, .n_kv_heads = 2, .seq_len = 100};
    int P = 100, kv_dim = 2 * 16;
    cr_expect_eq(pass_attention_bytes(&c, 1, P, KV_F32), 4u * 4 * P);
    cr_expect_eq(pass_attention_bytes(&c, 1, P, KV_INT8), 4u * (4 * P + 2 * P * kv_dim));
    cr_expect_eq(pass_attention_bytes(&c, 1, P, KV_BF16), 4u * (4 * P + 2 * P * kv_dim));
    cr_expect_eq(pass_attention_bytes(&c, 8, P, KV_F16), 4u * (4 * P + 3 * P * kv_dim));
    cr_expect_eq(pass_attention_bytes(&c, 7, P, KV_F32), 4u * 4 * P);
    /* and what pass_scratch_init allocates is that */
    PassScratch p;
    StepError e;
    c.hidden_dim = 96, c.vocab_size = 32;
    cr_assert(pass_scratch_init(&p, &c, 8, P, KV_INT8, NULL, &e), "%s", e.message);
    cr_expect_eq(p.attention_bytes, 4u * (4 * P + 3 * P * kv_dim));
    cr_expect(p.scores && p.layer_k && p.layer_v && p.key_t && !p.mla_kv_b);
    pass_scratch_free(&p);
}

/* The one rule: no int8 form of MLA's latents; latents only for MLA. */
Test(run_state, kv_type_exists_is_the_one_rule) {
    Config mla = deepseek_v2_lite();
    Config gqa = {.dim = 64, .n_layers = 3, .n_heads = 4, .n_kv_heads = 2, .seq_len = 100};
    cr_expect(!kv_type_exists(&mla, KV_INT8));
    cr_expect(kv_type_exists(&mla, KV_MLA_LATENT));
    cr_expect(kv_type_exists(&gqa, KV_INT8));
    cr_expect(!kv_type_exists(&gqa, KV_MLA_LATENT));
    cr_expect_eq(kv_type_for(&mla, KV_F32, false), KV_MLA_LATENT);
    cr_expect_eq(kv_type_for(&gqa, KV_BF16, false), KV_BF16);
    cr_expect_eq(kv_type_for(&gqa, KV_F16, true), KV_INT8);
    SeqState s;
    StepError e;
    mla.seq_len = 16;
    cr_expect(!seq_state_init(&s, &mla, 16, KV_INT8, &e));
    cr_expect_str_eq(e.message, "run state: an int8 cache of MLA's latents is not supported");
}
