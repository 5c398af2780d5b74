#!/usr/bin/python3
"""DeepSeek-V2 (DeepseekV2ForCausalLM folders) against a float64 numpy
forward written here from DeepSeek's modeling_deepseek.py (in `make test`):

    each layer:
      h = RMSNorm(x; input_layernorm)
      q = q_proj(h), or q_b_proj(RMSNorm(q_a_proj(h); q_a_layernorm))   [H, nope + rope]
      c, k_pe = split(kv_a_proj_with_mqa(h), [kv_lora_rank, rope])
      k_nope, v = split(kv_b_proj(RMSNorm(c; kv_a_layernorm)), [nope, v_head_dim])  per head
      q_pe, k_pe = apply_rotary_pos_emb(...): each vector viewed as pairs (2i, 2i+1),
                   de-interleaved, then rotate_half (DeepSeek's own apply_rotary_pos_emb)
      scores = q · k * q_head_dim^-0.5 * mscale(factor, mscale_all_dim)^2 (YaRN)
      x += o_proj(softmax(scores) · v)
      h = RMSNorm(x; post_attention_layernorm)
      the first first_k_dense_replace layers: x += down(silu(gate h) * up h)
      the others: p = softmax(h · gateᵀ), the top k (greedy; group_limited_greedy:
                  the experts in n_group groups ranked by their largest p, the
                  top k from the topk_group best), w = p[chosen]
                  (/ Σ w when norm_topk_prob, else * routed_scaling_factor),
                  x += Σ w_e expert_e(h) + shared_experts(h)
    YaRN (DeepseekV2YarnRotaryEmbedding): inv_freq blended between base^(-2i/d)
    and that / factor by a linear ramp from yarn_find_correction_range's
    floor to its ceil, cos and sin times mscale(factor, mscale) /
    mscale(factor, mscale_all_dim); mscale(s, m) = 0.1 m ln s + 1.

1. Folders this file writes (F32 and BF16; the query direct and through its
   low-rank path; YaRN off and on, past its original context; shared experts;
   dense first layers; a dense model; routing within groups): `stepwise score` within 1e-4 of the
   reference (it is within 1e-5 here) and the experts the routing events name
   are the reference's at every token and MoE layer. YaRN, the shared experts,
   the routed scale and the groups each matter.
2. The absorbed form (--mla absorbed) within 1e-6 of the rebuilt one.
3. Plain and fast kernels, threads 1, 2 and 3: the same bytes.
4. Decode through the cache of latents: generate's logits at every decoded
   position are the reference's on the whole sequence, in both forms.
5. The trace: attn.latent and attn.k_rope (the cache rows) are the
   reference's, the run header names MLA's fields, `trace validate` passes.
6. make-model --arch deepseek2 writes a folder this file reads back, and the
   reference on it is the engine's; inspect gives its cache a token.
7. int8 weights against the reference on the quantized weights; convert to
   llama.cpp's deepseek2 GGUF gives the folder's bits (llama_cpp_check.py
   runs llama.cpp on such files).

    /usr/bin/python3 tests/deepseek2_check.py build/stepwise
"""
import json
import math
import os
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from check_util import Checks, run_stepwise, score_run  # noqa: E402
import hf_reference  # noqa: E402

BIN = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build/stepwise")
TINY = os.path.join(HERE, "..", "data", "tiny-model.json")  # a tokenizer of 13 ids
TOKENS = [1, 5, 9, 3, 12, 11, 4, 8, 2, 7, 10, 6, 0, 5, 5, 3, 9, 1, 12, 4]
TOLERANCE = 1e-4
check = Checks()


def config(d=32, layers=3, heads=4, nope=8, rope=4, v=6, kv_rank=12, q_rank=None, experts=4, used=2,
           shared=1, first_dense=1, vocab=13, **kw):
    cfg = {"architectures": ["DeepseekV2ForCausalLM"], "model_type": "deepseek_v2", "hidden_size": d,
           "intermediate_size": 40, "num_hidden_layers": layers, "num_attention_heads": heads,
           "num_key_value_heads": heads, "vocab_size": vocab, "max_position_embeddings": 64,
           "rms_norm_eps": 1e-6, "rope_theta": 10000.0, "hidden_act": "silu", "tie_word_embeddings": False,
           "attention_bias": False, "qk_nope_head_dim": nope, "qk_rope_head_dim": rope, "v_head_dim": v,
           "kv_lora_rank": kv_rank, "q_lora_rank": q_rank, "rope_scaling": None}
    if experts:
        cfg.update(n_routed_experts=experts, num_experts_per_tok=used, moe_intermediate_size=8,
                   n_shared_experts=shared, first_k_dense_replace=first_dense, moe_layer_freq=1,
                   routed_scaling_factor=1.0, norm_topk_prob=False, topk_method="greedy",
                   scoring_func="softmax")
    cfg.update(kw)
    return cfg


def moe_layer(cfg, l):
    return cfg.get("n_routed_experts") is not None and l >= cfg.get("first_k_dense_replace", 0)


def random_tensors(cfg, seed):
    rng = np.random.default_rng(seed)
    d, L, V, H = cfg["hidden_size"], cfg["num_hidden_layers"], cfg["vocab_size"], cfg["num_attention_heads"]
    nope, rope, v = cfg["qk_nope_head_dim"], cfg["qk_rope_head_dim"], cfg["v_head_dim"]
    rank, q_rank = cfg["kv_lora_rank"], cfg["q_lora_rank"]
    u = lambda *s: rng.uniform(-1, 1, size=s) / np.sqrt(s[-1])
    norm = lambda n: 1 + 0.2 * rng.uniform(-1, 1, size=n)
    t = {"model.embed_tokens.weight": u(V, d), "model.norm.weight": norm(d), "lm_head.weight": u(V, d)}
    for l in range(L):
        p = f"model.layers.{l}."
        t[p + "input_layernorm.weight"] = norm(d)
        t[p + "post_attention_layernorm.weight"] = norm(d)
        a = p + "self_attn."
        if q_rank:
            t[a + "q_a_proj.weight"] = u(q_rank, d)
            t[a + "q_a_layernorm.weight"] = norm(q_rank)
            t[a + "q_b_proj.weight"] = u(H * (nope + rope), q_rank)
        else:
            t[a + "q_proj.weight"] = u(H * (nope + rope), d)
        t[a + "kv_a_proj_with_mqa.weight"] = u(rank + rope, d)
        t[a + "kv_a_layernorm.weight"] = norm(rank)
        t[a + "kv_b_proj.weight"] = 2 * u(H * (nope + v), rank)
        t[a + "o_proj.weight"] = u(d, H * v)
        if not moe_layer(cfg, l):
            h = cfg["intermediate_size"]
            t.update({p + "mlp.gate_proj.weight": u(h, d), p + "mlp.up_proj.weight": u(h, d),
                      p + "mlp.down_proj.weight": u(d, h)})
            continue
        E, eh, S = cfg["n_routed_experts"], cfg["moe_intermediate_size"], cfg.get("n_shared_experts") or 0
        t[p + "mlp.gate.weight"] = 3 * u(E, d)  # a router with opinions
        for e in range(E):
            t[p + f"mlp.experts.{e}.gate_proj.weight"] = u(eh, d)
            t[p + f"mlp.experts.{e}.up_proj.weight"] = u(eh, d)
            t[p + f"mlp.experts.{e}.down_proj.weight"] = u(d, eh)
        if S:
            t[p + "mlp.shared_experts.gate_proj.weight"] = u(S * eh, d)
            t[p + "mlp.shared_experts.up_proj.weight"] = u(S * eh, d)
            t[p + "mlp.shared_experts.down_proj.weight"] = u(d, S * eh)
    return t


# ---------------------------------------------------------------- reference


def rms_norm(x, w, eps):
    return w * (x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps))


def silu(x):
    return x / (1 + np.exp(-x))


def yarn_mscale(scale, mscale):
    return 1.0 if scale <= 1 else 0.1 * mscale * math.log(scale) + 1.0


def rotary(cfg, positions):
    """(cos, sin) [T, rope] as DeepseekV2RotaryEmbedding or its YaRN form
    builds them (emb = cat(freqs, freqs)), and the scores' extra factor."""
    dim, base = cfg["qk_rope_head_dim"], cfg["rope_theta"]
    s = cfg.get("rope_scaling")
    freq_extra = 1.0 / base ** (np.arange(0, dim, 2, dtype=np.float64) / dim)
    amp, score_factor = 1.0, 1.0
    inv_freq = freq_extra
    if s is not None and not (no_yarn := s.get("_off")):
        f, orig = s["factor"], s["original_max_position_embeddings"]
        fast, slow = s.get("beta_fast", 32), s.get("beta_slow", 1)
        m, m_all = s.get("mscale", 1), s.get("mscale_all_dim", 0)
        freq_inter = 1.0 / (f * base ** (np.arange(0, dim, 2, dtype=np.float64) / dim))
        corr = lambda rot: (dim * math.log(orig / (rot * 2 * math.pi))) / (2 * math.log(base))
        low, high = max(math.floor(corr(fast)), 0), min(math.ceil(corr(slow)), dim - 1)
        if low == high:
            high += 0.001
        ramp = np.clip((np.arange(dim // 2, dtype=np.float64) - low) / (high - low), 0, 1)
        mask = 1.0 - ramp
        inv_freq = freq_inter * (1 - mask) + freq_extra * mask
        amp = yarn_mscale(f, m) / yarn_mscale(f, m_all)
        if m_all:
            score_factor = yarn_mscale(f, m_all) ** 2
    freqs = np.outer(np.asarray(positions, dtype=np.float64), inv_freq)
    emb = np.concatenate([freqs, freqs], axis=-1)
    return np.cos(emb) * amp, np.sin(emb) * amp, score_factor


def apply_rotary(x, cos, sin):
    """DeepSeek's apply_rotary_pos_emb for x [T, heads, d]: de-interleave each
    vector's pairs (view(d//2, 2).transpose), then x*cos + rotate_half(x)*sin."""
    T, n, d = x.shape
    x = x.reshape(T, n, d // 2, 2).transpose(0, 1, 3, 2).reshape(T, n, d)
    half = np.concatenate([-x[..., d // 2:], x[..., : d // 2]], axis=-1)
    return x * cos[:, None, :] + half * sin[:, None, :]


def reference(cfg, w, tokens, routes=None, latents=None, shared=True, scale=None):
    """The logits [T, vocab]. routes: {(layer, pos): experts}; latents:
    {layer: [T, kv_lora_rank + rope] the normed latent and the turned
    rotary key}; shared False or scale: a wrong model, to show they matter."""
    d, H = cfg["hidden_size"], cfg["num_attention_heads"]
    nope, rope, vd = cfg["qk_nope_head_dim"], cfg["qk_rope_head_dim"], cfg["v_head_dim"]
    rank, q_rank, eps, T = cfg["kv_lora_rank"], cfg["q_lora_rank"], cfg["rms_norm_eps"], len(tokens)
    cos, sin, score_factor = rotary(cfg, range(T))
    softmax_scale = (nope + rope) ** -0.5 * score_factor
    x = w["model.embed_tokens.weight"][tokens]
    for l in range(cfg["num_hidden_layers"]):
        p, a = f"model.layers.{l}.", f"model.layers.{l}.self_attn."
        h = rms_norm(x, w[p + "input_layernorm.weight"], eps)
        if q_rank:
            q = rms_norm(h @ w[a + "q_a_proj.weight"].T, w[a + "q_a_layernorm.weight"], eps) @ w[
                a + "q_b_proj.weight"].T
        else:
            q = h @ w[a + "q_proj.weight"].T
        q = q.reshape(T, H, nope + rope)
        kv_a = h @ w[a + "kv_a_proj_with_mqa.weight"].T
        c, k_pe = kv_a[:, :rank], kv_a[:, rank:]
        c = rms_norm(c, w[a + "kv_a_layernorm.weight"], eps)
        kv = (c @ w[a + "kv_b_proj.weight"].T).reshape(T, H, nope + vd)
        k_nope, v = kv[..., :nope], kv[..., nope:]
        q_pe = apply_rotary(q[..., nope:], cos, sin)
        k_pe = apply_rotary(k_pe.reshape(T, 1, rope), cos, sin)
        if latents is not None:  # as cached: pairs in their own order (the turn is the same)
            k_turned = k_pe.reshape(T, 2, rope // 2).transpose(0, 2, 1).reshape(T, rope)
            latents[l] = np.concatenate([c, k_turned], axis=-1)
        qs = np.concatenate([q[..., :nope], q_pe], axis=-1)
        ks = np.concatenate([k_nope, np.broadcast_to(k_pe, (T, H, rope))], axis=-1)
        out = np.zeros((T, H, vd))
        for t in range(T):
            for hh in range(H):
                s = ks[: t + 1, hh] @ qs[t, hh] * softmax_scale
                e = np.exp(s - s.max())
                out[t, hh] = (e / e.sum()) @ v[: t + 1, hh]
        x = x + out.reshape(T, H * vd) @ w[a + "o_proj.weight"].T
        h = rms_norm(x, w[p + "post_attention_layernorm.weight"], eps)
        mlp = lambda g, u_, dn, z: (silu(z @ w[g].T) * (z @ w[u_].T)) @ w[dn].T
        if not moe_layer(cfg, l):
            x = x + mlp(p + "mlp.gate_proj.weight", p + "mlp.up_proj.weight", p + "mlp.down_proj.weight", h)
            continue
        k = cfg["num_experts_per_tok"]
        logits = h @ w[p + "mlp.gate.weight"].T
        probs = np.exp(logits - logits.max(axis=-1, keepdims=True))
        probs /= probs.sum(axis=-1, keepdims=True)
        y = np.zeros_like(x)
        for t in range(T):
            ranked = probs[t]
            if cfg.get("topk_method") == "group_limited_greedy":  # modeling_deepseek.py's MoEGate
                groups = probs[t].reshape(cfg["n_group"], -1)
                best = np.argsort(-groups.max(axis=-1), kind="stable")[:cfg["topk_group"]]
                open_ = np.zeros_like(groups, dtype=bool)
                open_[best] = True
                ranked = np.where(open_.reshape(-1), probs[t], 0.0)
            chosen = np.argsort(-ranked, kind="stable")[:k]
            weights = probs[t, chosen]
            if k > 1 and cfg["norm_topk_prob"]:
                weights = weights / (weights.sum() + 1e-20)
            else:
                weights = weights * (cfg["routed_scaling_factor"] if scale is None else scale)
            if routes is not None:
                routes[(l, t)] = [int(e) for e in chosen]
            for e, wt in zip(chosen, weights):
                e_ = p + f"mlp.experts.{e}."
                y[t] += wt * mlp(e_ + "gate_proj.weight", e_ + "up_proj.weight", e_ + "down_proj.weight", h[t])
        if shared and cfg.get("n_shared_experts"):
            s_ = p + "mlp.shared_experts."
            y = y + mlp(s_ + "gate_proj.weight", s_ + "up_proj.weight", s_ + "down_proj.weight", h)
        x = x + y
    return rms_norm(x, w["model.norm.weight"], eps) @ w["lm_head.weight"].T


# ---------------------------------------------------------------- checks


def engine_routes(folder, tokens, *extra, hooks=None):
    """(logits, {(layer, pos): experts} from the routing events, activations, the trace's text)."""
    logits, acts, text = score_run(BIN, folder, tokens, *extra, hooks=hooks)
    routes = {}
    for line in text.splitlines():
        e = json.loads(line)
        if e.get("event") == "routing":
            routes[(e["layer"], e["pos"])] = e["experts"]
    return logits, routes, acts, text


YARN = {"type": "yarn", "factor": 4.0, "original_max_position_embeddings": 8, "beta_fast": 32, "beta_slow": 1,
        "mscale": 0.707, "mscale_all_dim": 0.707}

CASES = [
    ("F32, the query direct, 1 shared expert, the first layer dense, routed scale 2.5",
     config(routed_scaling_factor=2.5), "F32"),
    ("BF16, the query's low-rank path, YaRN (factor 4 over 8 positions, mscale = mscale_all_dim), "
     "2 shared experts, norm_topk_prob, no dense layer",
     config(q_rank=10, rope_scaling=YARN, shared=2, first_dense=0, norm_topk_prob=True), "BF16"),
    ("F32, dense (no routed experts), the low-rank query, YaRN with mscale 1 and no mscale_all_dim "
     "(cos and sin scaled), MQA-wide rope of 6",
     config(q_rank=12, rope=6, experts=0, rope_scaling=dict(YARN, mscale=1.0, mscale_all_dim=0)), "F32"),
    ("F32, group_limited_greedy (DeepSeek-V2's own): 8 experts in 4 groups, 3 chosen from the best 2",
     config(experts=8, used=3, topk_method="group_limited_greedy", n_group=4, topk_group=2), "F32"),
]


def check_reference(tmp):
    folders = []
    for i, (what, cfg, dtype) in enumerate(CASES):
        folder = os.path.join(tmp, f"ds{i}")
        stored = hf_reference.write_model_dir(folder, cfg, random_tensors(cfg, 400 + i), dtype)
        folders.append((folder, cfg, stored))
        got, routes, _, _ = engine_routes(folder, TOKENS)
        want_routes = {}
        want = reference(cfg, stored, TOKENS, routes=want_routes)
        err = np.abs(got - want).max()
        moe = cfg.get("n_routed_experts") is not None
        same_routes = routes == want_routes and (len(routes) > 0) == moe
        check(err <= TOLERANCE and same_routes,
              f"{what}: engine within {TOLERANCE:g} of the float64 reference (max |dlogit| {err:.2e}); the "
              f"experts chosen are the reference's at all {len(want_routes)} tokens x MoE layers")
        if i == 0:
            other = np.abs(got - reference(cfg, stored, TOKENS, scale=1.0)).max()
            bare = np.abs(got - reference(cfg, stored, TOKENS, shared=False)).max()
            check(other > 1e-3 and bare > 1e-3,
                  f"{what}: a routed scale of 1 is {other:.2e} away, no shared expert {bare:.2e}")
        if cfg.get("topk_method") == "group_limited_greedy":
            greedy_routes = {}
            reference(dict(cfg, topk_method="greedy"), stored, TOKENS, routes=greedy_routes)
            moved = sum(greedy_routes[key] != want_routes[key] for key in want_routes)
            check(moved > 0, f"{what}: greedy over all 8 would choose other experts at {moved} of "
                  f"{len(want_routes)} tokens x MoE layers")
        if cfg.get("rope_scaling"):
            off = dict(cfg, rope_scaling=dict(cfg["rope_scaling"], _off=True))
            away = np.abs(got - reference(off, stored, TOKENS)).max()
            check(away > 1e-3, f"{what}: without YaRN the reference is {away:.2e} away")
    return folders


def yarn_range(cfg):
    """yarn_find_correction_range's (low, high) before and after its clamps
    to [0, rope - 1], by DeepSeek-V2's formula: the pair index at which a
    wavelength fits the original context b times."""
    s, dim, base = cfg["rope_scaling"], cfg["qk_rope_head_dim"], cfg["rope_theta"]
    corr = lambda b: dim * math.log(s["original_max_position_embeddings"] / (b * 2 * math.pi)) / (2 * math.log(base))
    low, high = math.floor(corr(s["beta_fast"])), math.ceil(corr(s["beta_slow"]))
    return (low, high), (max(low, 0), min(high, dim - 1))


def check_yarn_range(tmp):
    """YaRN's correction range away from and at its clamps (issue 67): the
    cases above have an original context of 8, which clamps the range's
    low end at 0 and leaves the high end far from rope - 1. Here (experts
    off, float32, YaRN factor 4): an original context of 4096 with a rope
    of 8 (low 1 and high 3, neither clamped, pair 2 half kept: floor and
    ceil each decide a pair); one of 200 with theta 10 and a rope of 4
    (beta_fast's index just below 0, beta_slow's just above 3: both clamped,
    at 0 and rope - 1 = 3); and one of 6 (< 2 pi: both ends at 0, the range
    empty, widened by 0.001 as DeepSeek's code does)."""
    cases = [("an original context of 4096, rope 8: low 1 and high 3, not clamped",
              dict(rope=8, rope_theta=10000.0, orig=4096), (1, 3), (1, 3)),
             ("an original context of 200, theta 10, rope 4: low -1 and high 4, clamped to 0 and 3",
              dict(rope=4, rope_theta=10.0, orig=200), (-1, 4), (0, 3)),
             ("an original context of 6, rope 4: low -1 and high 0, both 0 once clamped: the range widened by 0.001",
              dict(rope=4, rope_theta=10000.0, orig=6), (-1, 0), (0, 0))]
    for i, (what, c, raw, clamped) in enumerate(cases):
        scaling = dict(YARN, original_max_position_embeddings=c["orig"])
        cfg = config(q_rank=None, rope=c["rope"], experts=0, rope_theta=c["rope_theta"], rope_scaling=scaling)
        check(yarn_range(cfg) == (raw, clamped), f"YaRN, {what}: the case is as meant, {yarn_range(cfg)}")
        folder = os.path.join(tmp, f"yarn{i}")
        stored = hf_reference.write_model_dir(folder, cfg, random_tensors(cfg, 450 + i), "F32")
        got = engine_routes(folder, TOKENS)[0]
        err = np.abs(got - reference(cfg, stored, TOKENS)).max()
        off = dict(cfg, rope_scaling=dict(scaling, _off=True))
        away = np.abs(got - reference(off, stored, TOKENS)).max()
        check(err <= TOLERANCE and away > 1e-3,
              f"YaRN, {what}: engine within {TOLERANCE:g} of the float64 reference (max |dlogit| {err:.2e}; "
              f"without YaRN {away:.2e} away)")


def check_absorbed(folders):
    for folder, cfg, stored in folders:
        rebuilt = engine_routes(folder, TOKENS)
        absorbed = engine_routes(folder, TOKENS, "--mla", "absorbed")
        err = np.abs(rebuilt[0] - absorbed[0]).max()
        ref_err = np.abs(absorbed[0] - reference(cfg, stored, TOKENS)).max()
        check(err <= 1e-6 and rebuilt[1] == absorbed[1] and ref_err <= TOLERANCE,
              f"{os.path.basename(folder)}: --mla absorbed within 1e-6 of rebuilt (max |dlogit| {err:.2e}), "
              f"the same experts; {ref_err:.2e} from the reference")


def check_kernels_and_threads(folders):
    for folder, _, _ in folders[:2]:
        for form in ("rebuilt", "absorbed"):
            base = engine_routes(folder, TOKENS, "--mla", form, "--kernels", "plain")[3]
            same = all(engine_routes(folder, TOKENS, "--mla", form, "--kernels", "fast", "--threads", t)[3] == base
                       for t in ("1", "2", "3"))
            check(same, f"{os.path.basename(folder)} ({form}): plain and fast kernels, 1, 2 and 3 threads: "
                        f"the same bytes")


def generated(folder, seed, *extra):
    """generate's run from "the cat" for up to 12 steps, sampled at
    temperature 1 from seed (one that draws no EOS for a while): (every
    token fed, {pos: logits} of each decode step)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "g.jsonl")
        run_stepwise(BIN, "generate", "--model", folder, "--tokenizer", TINY, "--prompt", "the cat", "--steps",
                     "12", "--temperature", "1", "--seed", str(seed), "--trace-level", "logits",
                     "--reproducible", "--quiet", "--trace", out, *extra)
        events = [json.loads(line) for line in open(out)]
    fed, logits = [], {}
    for e in events:
        if e.get("event") == "forward":
            fed += e["tokens"]
        if e.get("event") == "logits":
            logits[e["pos"]] = np.array(e["logits"])
    return fed, logits


def check_decode(folders):
    """Each decode step attends over the latents the cache holds: its logits
    are the reference's at that position of the whole sequence."""
    for (folder, cfg, stored), seed in zip(folders, (1, 3, 2)):
        for form in ("rebuilt", "absorbed"):
            fed, logits = generated(folder, seed, "--mla", form)
            want = reference(cfg, stored, fed)
            errs = [np.abs(logits[p] - want[p]).max() for p in logits]
            check(len(fed) >= 12 and len(logits) >= 8 and max(errs) <= TOLERANCE,
                  f"{os.path.basename(folder)} ({form}): {len(logits)} decode steps through the cache of "
                  f"latents, each within {TOLERANCE:g} of the reference (max {max(errs):.2e})")


def check_trace(folder, cfg, stored):
    """The cache rows as hooks: attn.latent [kv_lora_rank] (normed) and
    attn.k_rope [rope] (turned) are the reference's; attn.q, attn.k and
    attn.v have MLA's shapes; the run header names MLA's fields; the trace
    validates."""
    latents = {}
    reference(cfg, stored, TOKENS, latents=latents)
    _, _, acts, text = engine_routes(folder, TOKENS, hooks="blocks.*.attn.*")
    rank, rope = cfg["kv_lora_rank"], cfg["qk_rope_head_dim"]
    err = 0.0
    for l in range(cfg["num_hidden_layers"]):
        for t in range(len(TOKENS)):
            got = np.concatenate([acts[f"blocks.{l}.attn.latent"][(t, -1)], acts[f"blocks.{l}.attn.k_rope"][(t, -1)]])
            err = max(err, np.abs(got - latents[l][t]).max())
    H, nope, v = cfg["num_attention_heads"], cfg["qk_nope_head_dim"], cfg["v_head_dim"]
    shapes = (len(acts["blocks.0.attn.latent"][(0, -1)]) == rank and len(acts["blocks.0.attn.k_rope"][(0, -1)]) == rope
              and len(acts["blocks.0.attn.k"][(0, -1)]) == H * (nope + rope)
              and len(acts["blocks.0.attn.v"][(0, -1)]) == H * v and len(acts["blocks.0.attn.z"][(0, -1)]) == H * v)
    header = json.loads(text.splitlines()[0])["model"]
    arch = header.get("arch", {})
    named = (arch.get("family") == "deepseek2" and arch.get("kv_lora_rank") == rank
             and arch.get("qk_rope_head_dim") == rope and arch.get("v_head_dim") == v)
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "t.jsonl")
        open(out, "w").write(text)
        valid = run_stepwise(BIN, "trace", "validate", out, expect=(0, 1)).returncode == 0
    check(err <= 1e-5 and shapes and named and valid,
          f"the trace: attn.latent and attn.k_rope are the cache rows the reference makes (max {err:.2e}); "
          f"attn.k [H x head_dim], attn.v and attn.z [H x v_head_dim]; the header's arch names MLA's "
          f"fields; it validates")


def check_int8(folder, cfg, stored):
    """--quant-weights int8 quantizes MLA's matrices and the experts as every
    other matrix (the routers and the norms stay float32): within 1e-4 of
    the reference on the quantized weights (moe_check's quantizer, written
    again in numpy), the same experts; plain and fast, the same bytes. The
    int8 cache of latents is refused by name."""
    from moe_check import quantized
    q8 = ("--quant-weights", "int8", "--quant-group", "4")
    got, routes, _, text = engine_routes(folder, TOKENS, *q8, "--kernels", "plain")
    want_routes = {}
    err = np.abs(got - reference(cfg, quantized(stored, 4), TOKENS, routes=want_routes)).max()
    floats = np.abs(got - reference(cfg, stored, TOKENS)).max()
    fast = engine_routes(folder, TOKENS, *q8, "--kernels", "fast", "--threads", "2")[3]
    check(err <= TOLERANCE and routes == want_routes and floats > 1e-4 and fast == text,
          f"int8 weights (groups of 4): within {TOLERANCE:g} of the reference on the quantized weights "
          f"(max |dlogit| {err:.2e}; {floats:.2e} from the float one), the same experts; plain and fast the "
          f"same bytes")
    r = run_stepwise(BIN, "score", "--model", folder, "--tokens", "1,2,3", "--top-n", "0", "--quant-kv", "int8",
                     "--out", os.path.join(os.path.dirname(folder), "kv.jsonl"), expect=(2,))
    check("int8 cache of MLA's latents" in r.stderr, "--quant-kv int8 on MLA is refused by name")


def check_convert(folders, tmp):
    """convert writes DeepSeek-V2 as llama.cpp's deepseek2 (the legacy form:
    attn_kv_b whole, key_length and value_length a head's, leading dense
    layers, shared experts), and the file gives its folder's logits and
    routing bit for bit; what llama.cpp's deepseek2 cannot run is refused by
    name (llama_cpp_check.py runs llama.cpp itself on such files)."""
    from gguf_read import read_gguf
    folder = folders[0][0]
    gguf = os.path.join(tmp, "ds0.gguf")
    run_stepwise(BIN, "convert", "--model", folder, "--tokenizer", TINY, "--out", gguf)
    meta, tensors = read_gguf(gguf)
    cfg = folders[0][1]
    keys = (meta.get("general.architecture") == "deepseek2" and meta.get("deepseek2.attention.kv_lora_rank") == 12
            and meta.get("deepseek2.attention.q_lora_rank") == 0 and meta.get("deepseek2.rope.dimension_count") == 4
            and meta.get("deepseek2.attention.key_length") == 12 and meta.get("deepseek2.attention.value_length") == 6
            and meta.get("deepseek2.leading_dense_block_count") == 1
            and meta.get("deepseek2.expert_shared_count") == 1
            and abs(meta.get("deepseek2.expert_weights_scale", 0) - 2.5) < 1e-6
            and "blk.0.attn_kv_b.weight" in tensors and "blk.1.ffn_gate_shexp.weight" in tensors)
    a, b = engine_routes(folder, TOKENS), engine_routes(gguf, TOKENS)
    check(keys and np.array_equal(a[0], b[0]) and a[1] == b[1],
          f"convert {os.path.basename(folder)}: GGUF deepseek2 with llama.cpp's keys and tensors "
          f"({cfg['num_hidden_layers']} layers, the first dense); the same logits and routing bit for bit")
    # llama.cpp's converter now splits kv_b per head into attn_k_b and attn_v_b (gguf_split_mla.py
    # writes that form; llama_cpp_check.py runs llama.cpp on it): the same bits again, in both loads
    import gguf_split_mla
    split = os.path.join(tmp, "ds-split.gguf")
    gguf_split_mla.split(gguf, split)
    _, split_tensors = read_gguf(split)
    c_split = engine_routes(split, TOKENS)
    d_split = engine_routes(split, TOKENS, "--weights", "f32")
    check("blk.0.attn_k_b.weight" in split_tensors and "blk.0.attn_kv_b.weight" not in split_tensors
          and np.array_equal(a[0], c_split[0]) and a[1] == c_split[1] and np.array_equal(a[0], d_split[0]),
          "the GGUF with kv_b split into attn_k_b [H, rank, nope] and attn_v_b [H, v, rank], as llama.cpp's "
          "converter writes DeepSeek now: the same logits and routing bit for bit, stored and --weights f32")
    broken = os.path.join(tmp, "ds-split-bad.gguf")
    data = open(split, "rb").read()
    open(broken, "wb").write(data.replace(b"blk.1.attn_v_b.weight", b"blk.1.attn_v_c.weight", 1))
    r = run_stepwise(BIN, "score", "--model", broken, "--tokens", "1,2", "--top-n", "0", "--out",
                     os.path.join(tmp, "b.jsonl"), expect=(2,))
    check("blk.1.attn_kv_b.weight is missing" in r.stderr,
          "a split file missing one layer's attn_v_b is refused, naming the tensor it then needs")
    # issue 67: a layer holding kv_b in both forms (the legacy attn_kv_b, negated so that it
    # disagrees, beside attn_k_b and attn_v_b) ran on the stray attn_kv_b: refused by name
    both = os.path.join(tmp, "ds-both.gguf")
    gguf_split_mla.split(gguf, both, keep_kv_b=True)
    r = run_stepwise(BIN, "score", "--model", both, "--tokens", "1,2", "--top-n", "0", "--out",
                     os.path.join(tmp, "b.jsonl"), expect=(2,))
    check("blk.0 holds kv_b twice" in r.stderr and len(r.stderr.splitlines()) == 1,
          "a layer holding attn_kv_b beside the split attn_k_b and attn_v_b is refused in one line, by name")
    # and beside one half of the split form only (it ran on attn_kv_b, warning the half unused)
    for half in ("attn_k_b.weight", "attn_v_b.weight"):
        one = os.path.join(tmp, "ds-both-one.gguf")
        gguf_split_mla.split(gguf, one, keep_kv_b=True, drop=(half,))
        r = run_stepwise(BIN, "score", "--model", one, "--tokens", "1,2", "--top-n", "0", "--out",
                         os.path.join(tmp, "b.jsonl"), expect=(2,))
        check("blk.0 holds kv_b twice" in r.stderr and len(r.stderr.splitlines()) == 1,
              "a layer holding attn_kv_b beside %s alone is refused in one line, by name" % half[:-7])
    # DeepSeek-V3's files: sigmoid gating (refused: issue 70's) and exp_probs_b, the expert score
    # correction bias, which no part of deepseek2 reads (warned about; the routing is the file's
    # without it)
    from gguf_write import kv_u32
    sigmoid = os.path.join(tmp, "ds-sigmoid.gguf")
    gguf_split_mla.split(gguf, sigmoid, mla=False, extra_kvs=[kv_u32("deepseek2.expert_gating_func", 2)])
    r = run_stepwise(BIN, "score", "--model", sigmoid, "--tokens", "1,2", "--top-n", "0", "--out",
                     os.path.join(tmp, "b.jsonl"), expect=(2,))
    check("deepseek2.expert_gating_func 2 (sigmoid) is not implemented" in r.stderr,
          "a deepseek2 GGUF gating by sigmoid (DeepSeek-V3's expert_gating_func 2) is refused by name")
    E = cfg["n_routed_experts"]
    biased = os.path.join(tmp, "ds-bias.gguf")
    gguf_split_mla.split(gguf, biased, mla=False, extra_tensors=[
        ("blk.1.exp_probs_b.bias", [E], 0, np.full(E, 5, np.float32).tobytes())])
    r = run_stepwise(BIN, "score", "--model", biased, "--tokens", "1,2", "--top-n", "0", "--out",
                     os.path.join(tmp, "b.jsonl"))
    e = engine_routes(biased, TOKENS)
    check("1 tensor is not used by the architecture (blk.1.exp_probs_b.bias)" in r.stderr
          and np.array_equal(a[0], e[0]) and a[1] == e[1],
          "a deepseek2 GGUF holding exp_probs_b (DeepSeek-V3's score correction, not read) is warned about "
          "by name; logits and routing are the file's without it")
    bad = os.path.join(tmp, "grouped")  # group_limited_greedy without its groups: refused by name
    os.makedirs(bad)
    json.dump(dict(cfg, topk_method="group_limited_greedy"), open(os.path.join(bad, "config.json"), "w"))
    r = run_stepwise(BIN, "score", "--model", bad, "--tokens", "1,2", "--top-n", "0", "--out",
                     os.path.join(tmp, "g.jsonl"), expect=(2,))
    check("group_limited_greedy needs n_group and topk_group" in r.stderr,
          "a folder routing by group_limited_greedy without n_group and topk_group is refused by name")
    for i, why in ((1, "scales RoPE (YaRN)"), (2, "has no routed experts"),
                   (3, "routes within expert groups")):
        r = run_stepwise(BIN, "convert", "--model", folders[i][0], "--tokenizer", TINY, "--out",
                         os.path.join(tmp, f"no{i}.gguf"), expect=(2,))
        check(why in r.stderr and not os.path.exists(os.path.join(tmp, f"no{i}.gguf")),
              f"convert refuses a DeepSeek-V2 that llama.cpp's deepseek2 cannot run: it {why}")


def check_work(tmp):
    """Every pass's work event, prefill and decode, in both forms of MLA,
    against closed forms written here. The weight bytes a decode step reads
    are every tensor of model.safetensors (from its header) but the
    embedding's other rows and the experts no token chose (E - k a MoE
    layer). The multiply-adds are the linears a token runs through (the
    classifier once a pass: generate's logits are the last position's) plus,
    per layer, for a query that sees P positions: in the rebuilt form kv_b
    over every latent seen (once a pass: P x kv_lora_rank x H x (nope + v))
    and the attention over them (P x H x (head_dim + v)); in the absorbed
    form (issue 67: counted for no form but the default before) W_uk's
    transpose into the query and W_uv out of it (H x (nope + v) x rank) and
    the scores over the latents and the rotary keys and the sum of latents
    (P x H x (2 rank + rope)). Either way the cache of latents costs
    compute that grows with the context, where MHA's costs only its reads:
    each query reads every row it sees once for all heads, (rank + rope)
    float32 values a layer, and each token writes one."""
    folder = os.path.join(tmp, "work")
    d, L, H, V, hd, rope, rank, E, k, eh, S, hidden = 32, 3, 4, 13, 12, 4, 16, 4, 2, 8, 2, 48
    run_stepwise(BIN, "make-model", "--format", "hf", "--arch", "deepseek2", "--dim", str(d), "--hidden", str(hidden),
                 "--layers", str(L), "--heads", str(H), "--vocab", str(V), "--seq-len", "32", "--head-dim", str(hd),
                 "--qk-rope-dim", str(rope), "--kv-lora-rank", str(rank), "--experts", str(E), "--expert-hidden",
                 str(eh), "--shared-experts", str(S), "--dense-layers", "0", "--untied", "--out", folder)
    data = open(os.path.join(folder, "model.safetensors"), "rb").read()
    n = int.from_bytes(data[:8], "little")
    header = {k: v for k, v in json.loads(data[8:8 + n]).items() if k != "__metadata__"}
    size = {k: v["data_offsets"][1] - v["data_offsets"][0] for k, v in header.items()}
    idle = (E - k) * 3 * eh * d * 4 * (L - 1)  # the experts not chosen, in the 2 MoE layers
    want_bytes = sum(size.values()) - size["model.embed_tokens.weight"] + d * 4 - idle
    nope, v = hd - rope, hd - rope  # make-model's v_head_dim: the unturned part
    token = (H * hd * d + (rank + rope) * d + d * H * v) * L + 3 * hidden * d + (L - 1) * (
        E * d + (k + S) * 3 * eh * d)
    row = (rank + rope) * 4  # a position's cache row in a layer: its latent and rotary key, float32

    def attention(form, pos0, T):
        seen = range(pos0 + 1, pos0 + T + 1)
        if form == "rebuilt":
            return L * (sum(P * H * (hd + v) for P in seen) + (pos0 + T) * rank * H * (nope + v))
        return L * sum(H * ((nope + v) * rank + P * (2 * rank + rope)) for P in seen)

    for form in ("rebuilt", "absorbed"):
        with tempfile.TemporaryDirectory() as t:
            out = os.path.join(t, "w.jsonl")
            run_stepwise(BIN, "generate", "--model", folder, "--tokenizer", TINY, "--prompt", "the cat", "--steps",
                         "4", "--temperature", "1", "--seed", "3", "--trace-level", "tokens", "--reproducible",
                         "--quiet", "--mla", form, "--trace", out)
            work = [e for e in map(json.loads, open(out)) if e.get("event") == "work"]
        got = [(e["phase"], e["pos"], e["n_tokens"], e["macs"], e["kv_bytes_read"], e["kv_bytes_written"])
               for e in work]
        want = [(ph, p, T, token * T + V * d + attention(form, p, T), L * row * sum(range(p + 1, p + T + 1)),
                 L * row * T) for ph, p, T, _, _, _ in got]
        decode = [e["weight_bytes"] for e in work if e["phase"] == "decode"]
        check(len(got) >= 3 and got[0][0] == "prefill" and got == want
              and decode and all(b == want_bytes for b in decode),
              f"--mla {form}: every pass's work (phase, pos, tokens, multiply-adds, cache bytes read, written) "
              f"{got[:2]}..., the closed forms {want[:2]}...; each decode step reads {want_bytes} weight bytes "
              "(model.safetensors' header)")


def check_make_model(tmp):
    folder = os.path.join(tmp, "made")
    run_stepwise(BIN, "make-model", "--format", "hf", "--arch", "deepseek2", "--dtype", "bf16", "--dim", "32",
                 "--hidden", "40", "--layers", "3", "--heads", "4", "--vocab", "13", "--seq-len", "64",
                 "--head-dim", "12", "--qk-rope-dim", "4", "--kv-lora-rank", "16", "--q-lora-rank", "8",
                 "--experts", "4", "--experts-used", "2", "--expert-hidden", "8", "--shared-experts", "2",
                 "--expert-groups", "2", "--expert-groups-used", "1", "--dense-layers", "0", "--untied",
                 "--out", folder)
    cfg, w = hf_reference.read_model_dir(folder)
    got, routes, _, _ = engine_routes(folder, TOKENS)
    want_routes = {}
    err = np.abs(got - reference(cfg, w, TOKENS, routes=want_routes)).max()
    check(err <= TOLERANCE and routes == want_routes and cfg["first_k_dense_replace"] == 1
          and cfg["q_lora_rank"] == 8 and cfg["qk_nope_head_dim"] == 8 and cfg["v_head_dim"] == 8
          and cfg["topk_method"] == "group_limited_greedy" and cfg["n_group"] == 2 and cfg["topk_group"] == 1,
          f"make-model --arch deepseek2 (bf16): config.json says qk_nope_head_dim 8, first_k_dense_replace 1, "
          f"group_limited_greedy over 2 groups of 2, 1 used; "
          f"the reference on its folder is the engine's (max |dlogit| {err:.2e}), the same experts chosen")
    info = json.loads(run_stepwise(BIN, "inspect", "--model", folder, "--json").stdout)
    per_token = 3 * (16 + 4) * 4  # layers x (latent + rotary key) x float32
    got_kv = info["this_model"].get("kv_bytes_per_token")
    check(got_kv == per_token and info["this_model"].get("attention") == "MLA",
          f"inspect: the folder's cache is {got_kv} bytes a token (3 layers x (16 + 4) floats: {per_token})")
    r = run_stepwise(BIN, "make-model", "--format", "hf", "--arch", "deepseek2", "--dim", "32", "--hidden", "40",
                     "--layers", "2", "--heads", "4", "--vocab", "13", "--out", os.path.join(tmp, "bad"),
                     expect=(2,))
    check("--kv-lora-rank" in r.stderr and not os.path.exists(os.path.join(tmp, "bad")),
          "make-model --arch deepseek2 without MLA's widths is refused, naming them")


def main():
    with tempfile.TemporaryDirectory() as tmp:
        folders = check_reference(tmp)
        check_absorbed(folders)
        check_kernels_and_threads(folders)
        check_decode(folders)
        check_trace(*folders[1])
        check_int8(*folders[0])
        check_convert(folders, tmp)
        check_work(tmp)
        check_yarn_range(tmp)
        check_make_model(tmp)
    return check.summary("deepseek2 check")


if __name__ == "__main__":
    sys.exit(main())
