#!/usr/bin/python3
"""Mixtral and Qwen3-MoE against a float64 numpy forward written here from
Hugging Face's modeling_mixtral.py and modeling_qwen3_moe.py (in `make test`):

    each layer: attention as Llama's (Qwen3-MoE: q/k RMSNorm per head), then
      h = RMSNorm(x; post_attention_layernorm)
      an MoE layer:  logits = h · gateᵀ            [E]
                     p = softmax(logits)
                     chosen = topk(p, k)             (ties: the lower index)
                     w = p[chosen] (/ Σ w when renormalised: Mixtral, norm_topk_prob)
                     x += Σ_j w_j · down_j(silu(gate_j · h) ⊙ up_j · h)
      a dense layer (Qwen3-MoE's mlp_only_layers, or off the sparse step):
                     x += down(silu(gate · h) ⊙ up · h)

1. Folders this file writes (F32 and BF16): Mixtral; Qwen3-MoE with
   norm_topk_prob true and false, decoder_sparse_step 2 and mlp_only_layers
   mixing dense layers in. `stepwise score` is within 1e-5 of the reference,
   and the experts the trace's routing events name are the reference's at
   every token and layer. Renormalising, and the dense layers, matter.
2. Plain and fast kernels, threads 1, 2, 3 and 7: the same bytes.
3. make-model --arch mixtral and qwen3moe write folders this file reads
   back, and the reference on them is the engine's.

    /usr/bin/python3 tests/moe_check.py build/stepwise
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
import arch_reference  # noqa: E402
import hf_reference  # noqa: E402

BIN = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build/stepwise")
TINY = os.path.join(HERE, "..", "data", "tiny-model.json")  # a tokenizer of 13 ids
TOKENS = [1, 5, 9, 3, 12, 11, 4, 8, 2, 7, 10, 6, 0, 5, 5]
TOLERANCE = 1e-5
check = Checks()


def config(qwen=False, d=16, layers=3, heads=4, kv=2, experts=4, used=2, vocab=13, **kw):
    cfg = {"architectures": ["Qwen3MoeForCausalLM" if qwen else "MixtralForCausalLM"],
           "model_type": "qwen3_moe" if qwen else "mixtral", "hidden_size": d, "intermediate_size": 24,
           "num_hidden_layers": layers, "num_attention_heads": heads, "num_key_value_heads": kv,
           "vocab_size": vocab, "max_position_embeddings": 32, "rms_norm_eps": 1e-6,
           "rope_theta": 10000.0, "hidden_act": "silu", "tie_word_embeddings": False,
           "num_experts_per_tok": used}
    if qwen:
        cfg.update(num_experts=experts, moe_intermediate_size=8, norm_topk_prob=True, decoder_sparse_step=1,
                   mlp_only_layers=[], head_dim=4)
    else:
        cfg.update(num_local_experts=experts)
    cfg.update(kw)
    return cfg


def moe_layer(cfg, l):
    if cfg["architectures"][0] == "MixtralForCausalLM":
        return True
    return l not in cfg["mlp_only_layers"] and (l + 1) % cfg["decoder_sparse_step"] == 0


def random_tensors(cfg, seed):
    rng = np.random.default_rng(seed)
    qwen = cfg["architectures"][0] == "Qwen3MoeForCausalLM"
    d, L, V = cfg["hidden_size"], cfg["num_hidden_layers"], cfg["vocab_size"]
    nh, nkv = cfg["num_attention_heads"], cfg["num_key_value_heads"]
    hd = cfg.get("head_dim") or d // nh
    E = cfg["num_experts"] if qwen else cfg["num_local_experts"]
    eh = cfg["moe_intermediate_size"] if qwen else cfg["intermediate_size"]
    u = lambda *s: rng.uniform(-1, 1, size=s) / np.sqrt(s[-1])
    norm = lambda n: 1 + 0.2 * rng.uniform(-1, 1, size=n)
    t = {"model.embed_tokens.weight": u(V, d), "model.norm.weight": norm(d), "lm_head.weight": u(V, d)}
    for l in range(L):
        p = f"model.layers.{l}."
        t.update({p + "input_layernorm.weight": norm(d), p + "post_attention_layernorm.weight": norm(d),
                  p + "self_attn.q_proj.weight": u(nh * hd, d), p + "self_attn.k_proj.weight": u(nkv * hd, d),
                  p + "self_attn.v_proj.weight": u(nkv * hd, d), p + "self_attn.o_proj.weight": u(d, nh * hd)})
        if qwen:
            t[p + "self_attn.q_norm.weight"] = norm(hd)
            t[p + "self_attn.k_norm.weight"] = norm(hd)
        if not moe_layer(cfg, l):
            h = cfg["intermediate_size"]
            t.update({p + "mlp.gate_proj.weight": u(h, d), p + "mlp.up_proj.weight": u(h, d),
                      p + "mlp.down_proj.weight": u(d, h)})
            continue
        block = p + ("mlp." if qwen else "block_sparse_moe.")
        t[block + "gate.weight"] = 3 * u(E, d)  # a router with opinions
        names = ("gate_proj", "down_proj", "up_proj") if qwen else ("w1", "w2", "w3")
        for e in range(E):
            t[block + f"experts.{e}.{names[0]}.weight"] = u(eh, d)
            t[block + f"experts.{e}.{names[1]}.weight"] = u(d, eh)
            t[block + f"experts.{e}.{names[2]}.weight"] = u(eh, d)
    return t


# ---------------------------------------------------------------- reference


def rms_norm(x, w, eps):
    return w * (x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps))


def silu(x):
    return x / (1 + np.exp(-x))


def reference(cfg, w, tokens, renormalise=None, dense=True, routes=None):
    """The logits [T, vocab]. renormalise: override the model's choice;
    dense False: every layer an MoE layer (to show the dense ones matter).
    routes (a dict): {(layer, pos): experts chosen, most probable first}."""
    qwen = cfg["architectures"][0] == "Qwen3MoeForCausalLM"
    d, nh, nkv = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"]
    hd = cfg.get("head_dim") or d // nh
    eps, T = cfg["rms_norm_eps"], len(tokens)
    k = cfg["num_experts_per_tok"]
    norm_topk = (cfg["norm_topk_prob"] if qwen else True) if renormalise is None else renormalise
    rope_cfg = {"rope_layout": "halves", "rope_theta": cfg["rope_theta"], "head_dim": hd, "dim": d,
                "n_heads": nh}
    x = w["model.embed_tokens.weight"][tokens]
    for l in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{l}."
        h = rms_norm(x, w[p + "input_layernorm.weight"], eps)
        q = (h @ w[p + "self_attn.q_proj.weight"].T).reshape(T, nh, hd)
        kk = (h @ w[p + "self_attn.k_proj.weight"].T).reshape(T, nkv, hd)
        v = (h @ w[p + "self_attn.v_proj.weight"].T).reshape(T, nkv, hd)
        if qwen:
            q = rms_norm(q, w[p + "self_attn.q_norm.weight"], eps)
            kk = rms_norm(kk, w[p + "self_attn.k_norm.weight"], eps)
        q = np.stack([arch_reference.rope(q[t], t, rope_cfg) for t in range(T)])
        kk = np.stack([arch_reference.rope(kk[t], t, rope_cfg) for t in range(T)])
        out = np.zeros((T, nh, hd))
        for t in range(T):
            for hh in range(nh):
                g = hh // (nh // nkv)
                s = kk[: t + 1, g] @ q[t, hh] / math.sqrt(hd)
                e = np.exp(s - s.max())
                out[t, hh] = (e / e.sum()) @ v[: t + 1, g]
        x = x + out.reshape(T, nh * hd) @ w[p + "self_attn.o_proj.weight"].T
        h = rms_norm(x, w[p + "post_attention_layernorm.weight"], eps)
        if not moe_layer(cfg, l) and dense:
            m = (silu(h @ w[p + "mlp.gate_proj.weight"].T) * (h @ w[p + "mlp.up_proj.weight"].T)) @ w[
                p + "mlp.down_proj.weight"].T
            x = x + m
            continue
        block = p + ("mlp." if qwen else "block_sparse_moe.")
        names = ("gate_proj", "down_proj", "up_proj") if qwen else ("w1", "w2", "w3")
        if block + "gate.weight" not in w:  # a dense layer treated as sparse: no router to use
            continue
        logits = h @ w[block + "gate.weight"].T
        probs = np.exp(logits - logits.max(axis=-1, keepdims=True))
        probs /= probs.sum(axis=-1, keepdims=True)
        m = np.zeros_like(x)
        for t in range(T):
            chosen = np.argsort(-probs[t], kind="stable")[:k]  # torch.topk; ties to the lower index
            weights = probs[t, chosen]
            if norm_topk:
                weights = weights / weights.sum()
            if routes is not None:
                routes[(l, t)] = [int(e) for e in chosen]
            for e, wt in zip(chosen, weights):
                y = (silu(h[t] @ w[block + f"experts.{e}.{names[0]}.weight"].T)
                     * (h[t] @ w[block + f"experts.{e}.{names[2]}.weight"].T)) @ w[
                    block + f"experts.{e}.{names[1]}.weight"].T
                m[t] += wt * y
        x = x + m
    return rms_norm(x, w["model.norm.weight"], eps) @ w.get("lm_head.weight", w["model.embed_tokens.weight"]).T


# ---------------------------------------------------------------- checks


def engine_routes(folder, tokens, *extra):
    """(logits, {(layer, pos): experts} from the routing events, the trace's text)."""
    logits, _, text = score_run(BIN, folder, tokens, *extra)
    routes = {}
    for line in text.splitlines():
        e = json.loads(line)
        if e.get("event") == "routing":
            routes[(e["layer"], e["pos"])] = e["experts"]
    return logits, routes, text


def check_reference(tmp):
    cases = [("Mixtral F32, 4 experts, top 2", config(), "F32"),
             ("Mixtral BF16, 8 experts, top 3, MQA", config(experts=8, used=3, kv=1), "BF16"),
             ("Qwen3-MoE F32, norm_topk_prob true", config(True), "F32"),
             ("Qwen3-MoE F32, norm_topk_prob false", config(True, norm_topk_prob=False), "F32"),
             ("Qwen3-MoE BF16, decoder_sparse_step 2 and mlp_only_layers [2]: dense layers 0 and 2",
              config(True, layers=4, decoder_sparse_step=2, mlp_only_layers=[2]), "BF16")]
    folders = []
    for i, (what, cfg, dtype) in enumerate(cases):
        folder = os.path.join(tmp, f"moe{i}")
        stored = hf_reference.write_model_dir(folder, cfg, random_tensors(cfg, 300 + i), dtype)
        folders.append(folder)
        got, routes, _ = engine_routes(folder, TOKENS)
        want_routes = {}
        want = reference(cfg, stored, TOKENS, routes=want_routes)
        err = np.abs(got - want).max()
        same_routes = routes == want_routes and len(routes) > 0
        check(err <= TOLERANCE and same_routes,
              f"{what}: engine within {TOLERANCE:g} of the float64 reference (max |dlogit| {err:.2e}); the "
              f"experts chosen are the reference's at all {len(want_routes)} tokens x MoE layers")
        qwen = cfg["architectures"][0] == "Qwen3MoeForCausalLM"
        if i in (0, 3):  # renormalising or not matters
            other = np.abs(got - reference(cfg, stored, TOKENS, renormalise=not (
                cfg.get("norm_topk_prob", True) if qwen else True))).max()
            check(other > 1e-4, f"{what}: the other choice of renormalising is {other:.2e} away")
        if i == 4:  # the dense layers matter: as sparse ones without a router, farther
            away = np.abs(got - reference(cfg, stored, TOKENS, dense=False)).max()
            check(away > 1e-4, f"{what}: without its dense layers the reference is {away:.2e} away")
    return folders


def check_kernels_and_threads(folders):
    for folder in (folders[0], folders[4]):
        base = engine_routes(folder, TOKENS, "--kernels", "plain", "--threads", "1")[2]
        same = all(engine_routes(folder, TOKENS, "--kernels", k, "--threads", t)[2] == base
                   for k, t in (("fast", "1"), ("fast", "2"), ("fast", "3"), ("fast", "7")))
        check(same, f"{os.path.basename(folder)}: plain and fast kernels, 1, 2, 3 and 7 threads: the same bytes")


def check_trace(folder):
    """generate's trace at the layers level: the run header's moe fields, a
    routing event per token and MoE layer with every expert's logit, and
    `trace validate` passes it."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "t.jsonl")
        run_stepwise(BIN, "score", "--model", folder, "--tokens", ",".join(map(str, TOKENS)), "--top-n", "0",
                     "--hooks", "blocks.*.moe.*", "--out", out)
        events = [json.loads(line) for line in open(out)]
        moe = events[0]["model"]["arch"].get("moe", {})
        routing = [e for e in events if e.get("event") == "routing"]
        experts = [e for e in events if e.get("hook", "").endswith("moe.expert")]
        routers = [e for e in events if e.get("hook", "").endswith("moe.router")]
        valid = run_stepwise(BIN, "trace", "validate", out, expect=(0, 1)).returncode == 0
        k, E = moe.get("n_experts_used"), moe.get("n_experts")
        shaped = all(len(e["experts"]) == k and "router_logits" not in e for e in routing)
        # at the layers level, every expert's logit and probability too
        run_stepwise(BIN, "generate", "--model", folder, "--tokenizer", TINY, "--prompt", "the cat", "--steps",
                     "3", "--trace-level", "layers", "--reproducible", "--quiet", "--trace", out)
        layered = [json.loads(line) for line in open(out)]
        layered = [e for e in layered if e.get("event") == "routing"]
        shaped = shaped and len(layered) >= 3 and all(
            len(e["router_logits"]) == E and abs(sum(e["router_probs"]) - 1) < 1e-5 for e in layered)
        valid = valid and run_stepwise(BIN, "trace", "validate", out, expect=(0, 1)).returncode == 0
        check(valid and moe.get("moe_layers") == [0, 1, 2] and len(routing) == 3 * len(TOKENS) and shaped
              and len(routers) == 3 * len(TOKENS) and len(experts) == 3 * len(TOKENS) * k
              and sorted({e["head"] for e in experts}) == list(range(E)),
              f"the trace: run.model.arch.moe ({moe}), {len(routing)} routing events (every expert's logit "
              f"and probability from the layers level), the hooks moe.router and moe.expert (one event a "
              f"chosen expert, its index in head), and it validates")


def check_decode_bytes(folder):
    """inspect's decode_weight_bytes (the router and only the chosen experts)
    is what a decode step's work event says it read; a prefill, whose tokens
    choose more experts, reads more."""
    info = json.loads(run_stepwise(BIN, "inspect", "--model", folder, "--json").stdout)["this_model"]
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "g.jsonl")
        run_stepwise(BIN, "generate", "--model", folder, "--tokenizer", TINY, "--prompt", "the cat", "--steps",
                     "3", "--trace-level", "tokens", "--reproducible", "--quiet", "--trace", out)
        work = [json.loads(line) for line in open(out)]
        work = [e for e in work if e.get("event") == "work"]
    decode = [e["weight_bytes"] for e in work if e["phase"] == "decode"]
    prefill = [e["weight_bytes"] for e in work if e["phase"] == "prefill"]
    check(decode and all(b == info["decode_weight_bytes"] for b in decode) and prefill[0] > decode[0]
          and info["active_params"] < info["params"],
          f"a decode step reads {decode[0] if decode else None} bytes of weights, as inspect says "
          f"({info['decode_weight_bytes']}: {info['active_params']} of {info['params']} parameters active); "
          f"the prefill {prefill[0] if prefill else None}")


def check_decode_bytes_int8(folder, cfg):
    """In int8 (groups of 32): inspect's weight bytes are every matrix's
    codes and scales (the experts' too), the float32 norms and routers,
    counted here from the shapes; its decode_weight_bytes is what an int8
    decode step's work event says it read."""
    info = json.loads(run_stepwise(BIN, "inspect", "--model", folder, "--json", "--weight-dtype",
                                   "int8").stdout)
    d, L, V, E = cfg["hidden_size"], cfg["num_hidden_layers"], cfg["vocab_size"], cfg["num_local_experts"]
    eh, kv = cfg["intermediate_size"], cfg["num_key_value_heads"] * d // cfg["num_attention_heads"]
    q8 = lambda rows, cols: rows * cols + rows * -(-cols // 32) * 4  # codes, a scale per 32
    held = (2 * q8(V, d) + (2 * L + 1) * d * 4 + L * (2 * q8(d, d) + 2 * q8(kv, d))
            + L * E * (2 * q8(eh, d) + q8(d, eh) + d * 4))
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "g.jsonl")
        run_stepwise(BIN, "generate", "--model", folder, "--tokenizer", TINY, "--prompt", "the cat", "--steps",
                     "3", "--trace-level", "tokens", "--reproducible", "--quiet", "--quant-weights", "int8",
                     "--trace", out)
        work = [json.loads(line) for line in open(out)]
    decode = [e["weight_bytes"] for e in work if e.get("event") == "work" and e["phase"] == "decode"]
    want = info["this_model"]["decode_weight_bytes"]
    check(info["int8"]["weight_bytes"] == held == info["this_model"]["weight_bytes"] and decode
          and all(b == want for b in decode) and want < held,
          f"int8: inspect holds {info['int8']['weight_bytes']} bytes (counted from the shapes: {held}); a "
          f"decode step reads {decode[0] if decode else None}, as inspect says ({want})")


def check_diff(folder):
    """diff names a routing divergence planted in a candidate (one token's
    second expert swapped), before any number, and fails it; the same trace
    passes."""
    with tempfile.TemporaryDirectory() as tmp:
        ref = os.path.join(tmp, "ref.jsonl")
        run_stepwise(BIN, "score", "--model", folder, "--tokens", ",".join(map(str, TOKENS)), "--top-n", "0",
                     "--out", ref)
        lines, planted = open(ref).read().splitlines(), None
        for i, line in enumerate(lines):
            e = json.loads(line)
            if e.get("event") == "routing" and e["pos"] == 7 and e["layer"] == 1:
                spare = next(x for x in range(4) if x not in e["experts"])
                planted = (list(e["experts"]), e["experts"][:1] + [spare])
                e["experts"] = planted[1]
                lines[i] = json.dumps(e)
        cand = os.path.join(tmp, "cand.jsonl")
        open(cand, "w").write("\n".join(lines) + "\n")
        same = run_stepwise(BIN, "diff", ref, ref, "--json", expect=(0, 1))
        r = run_stepwise(BIN, "diff", ref, cand, expect=(0, 1))
        j = json.loads(run_stepwise(BIN, "diff", ref, cand, "--json", expect=(0, 1)).stdout)
    want = "position 7, layer 1: reference chose experts %s; candidate %s" % (
        ",".join(map(str, planted[0])), ",".join(map(str, planted[1])))
    first = (j.get("routing") or {}).get("first_divergence") or {}
    text = r.stdout.splitlines()
    at = next((i for i, t in enumerate(text) if t.startswith("routing")), -1)
    check(same.returncode == 0 and json.loads(same.stdout)["routing"]["first_divergence"] is None
          and r.returncode == 1 and want in r.stdout and at >= 0
          and at < next(i for i, t in enumerate(text) if t.startswith("first divergence"))
          and first.get("pos") == 7 and first.get("layer") == 1 and j["verdict"] == "fail",
          f"diff names a planted routing divergence before the numbers ({want!r}) and fails it; the "
          f"reference against itself passes")


def check_show(folder):
    """trace show prints each MoE layer's choice at the position: the
    routing events' experts and weights."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "s.jsonl")
        run_stepwise(BIN, "score", "--model", folder, "--tokens", ",".join(map(str, TOKENS)), "--top-n", "0",
                     "--out", out)
        events = [json.loads(line) for line in open(out)]
        shown = run_stepwise(BIN, "trace", "show", out, "--pos", "4").stdout
    want = ["  layer %3d: %s" % (e["layer"], ", ".join("expert %d (%.3f)" % (x, w) for x, w in
                                                       zip(e["experts"], e["weights"])))
            for e in events if e.get("event") == "routing" and e["pos"] == 4]
    got = [line for line in shown.splitlines() if line.startswith("  layer ")]
    check(got == want and len(want) == 3, f"trace show prints position 4's routing table ({got[:1]}...)")


def check_convert(folders, tmp):
    """convert writes Mixtral as llama.cpp's llama with experts and Qwen3-MoE
    as its qwen3moe (ffn_gate_inp, ffn_*_exps stacked [E, ...], the
    expert_count keys), and each file gives its folder's logits and routing
    bit for bit; llama.cpp's qwen3moe has no dense layers: refused by name."""
    from gguf_read import read_gguf
    for folder, arch in ((folders[1], "llama"), (folders[2], "qwen3moe")):
        gguf = os.path.join(tmp, os.path.basename(folder) + ".gguf")
        run_stepwise(BIN, "convert", "--model", folder, "--tokenizer", TINY, "--out", gguf)
        meta, tensors = read_gguf(gguf)
        exps = tensors.get("blk.0.ffn_gate_exps.weight")
        named = (meta.get("general.architecture") == arch and meta.get(arch + ".expert_count", 0) > 0
                 and meta.get(arch + ".expert_used_count", 0) > 0 and exps is not None and len(exps[1]) == 3
                 and "blk.0.ffn_gate_inp.weight" in tensors)
        a, b = engine_routes(folder, TOKENS), engine_routes(gguf, TOKENS)
        check(named and np.array_equal(a[0], b[0]) and a[1] == b[1],
              f"convert {os.path.basename(folder)}: GGUF {arch} with llama.cpp's expert tensors and keys; the "
              f"same logits and routing bit for bit")
    r = run_stepwise(BIN, "convert", "--model", folders[4], "--tokenizer", TINY, "--out",
                     os.path.join(tmp, "dense.gguf"), expect=(2,))
    check("has dense layers" in r.stderr, "convert refuses a Qwen3-MoE with dense layers, by name")


def check_stored(folders, tmp):
    """The experts are held as the file stores them (--weights stored, the
    default: BF16 views, F16 or Q8_0 slices of the stacked GGUF tensors) or
    widened to float32 at load (--weights f32): every float16 and bfloat16
    is a float32 and a Q8_0 block dequantizes the same either way, so the
    logits and the routing are the same bits, with either kernel."""
    def same(model):
        base = engine_routes(model, TOKENS, "--weights", "f32", "--kernels", "plain")
        return all(np.array_equal(base[0], got[0]) and base[1] == got[1] for got in (
            engine_routes(model, TOKENS, "--kernels", k) for k in ("plain", "fast")))
    cfg = config(d=32, heads=4, kv=2, intermediate_size=32)  # rows of whole Q8_0 blocks
    wide = os.path.join(tmp, "moe-wide")
    hf_reference.write_model_dir(wide, cfg, random_tensors(cfg, 310), "F32")
    files = []
    for folder, kind in ((folders[1], "f16"), (wide, "q8_0")):
        gguf = os.path.join(tmp, f"stored-{kind}.gguf")
        run_stepwise(BIN, "convert", "--model", folder, "--tokenizer", TINY, "--type", kind, "--out", gguf)
        files.append(gguf)
    for model, what in ((folders[1], "a BF16 Mixtral folder"), (folders[4], "a BF16 Qwen3-MoE folder "
                        "with dense layers"), (files[0], "an F16 GGUF"), (files[1], "a Q8_0 GGUF")):
        check(same(model), f"{what}: experts as stored and widened at load give the same logits and "
                           f"routing, plain and fast")


def quantized(w, group):
    """w with every matrix but the routers and the norms as int8 codes times
    their group's scale, as stepwise quantizes (quant.c, written again here
    in float32): scale = max|x| / 127, code = x / scale rounded half away
    from zero."""
    out = {}
    for name, v in w.items():
        if v.ndim != 2 or name.endswith("gate.weight"):
            out[name] = v
            continue
        x = v.astype(np.float32).reshape(v.shape[0], -1, group)
        scale = (np.abs(x).max(axis=2, keepdims=True) / np.float32(127)).astype(np.float32)
        r = np.divide(x, scale, out=np.zeros_like(x), where=scale > 0)
        codes = np.trunc(r) + (r - np.trunc(r) >= 0.5) - (r - np.trunc(r) <= -0.5)
        out[name] = (codes.astype(np.float64) * scale).reshape(v.shape)
    return out


def check_int8(tmp):
    """--quant-weights int8 quantizes the experts as every other matrix (the
    routers stay float32, as llama.cpp keeps ffn_gate_inp): within 1e-5 of
    the reference on the quantized weights, the same experts chosen; plain
    and fast kernels, threads 1, 2, 3 and 7 the same bytes, with int8
    activations too."""
    for i, cfg in enumerate((config(), config(True, layers=4, decoder_sparse_step=2, mlp_only_layers=[2]))):
        folder = os.path.join(tmp, f"moe-int8-{i}")
        stored = hf_reference.write_model_dir(folder, cfg, random_tensors(cfg, 320 + i), "F32")
        q8 = ("--quant-weights", "int8", "--quant-group", "8")
        got, routes, _ = engine_routes(folder, TOKENS, *q8, "--kernels", "plain")
        want_routes = {}
        want = reference(cfg, quantized(stored, 8), TOKENS, routes=want_routes)
        err = np.abs(got - want).max()
        floats = np.abs(got - reference(cfg, stored, TOKENS)).max()
        check(err <= TOLERANCE and routes == want_routes and floats > 1e-4,
              f"{cfg['architectures'][0]} int8 weights (groups of 8): within {TOLERANCE:g} of the reference "
              f"on the quantized weights (max |dlogit| {err:.2e}; {floats:.2e} from the float one), the same "
              f"experts chosen")
        for extra in ((), ("--quant-activations", "int8")):
            base = engine_routes(folder, TOKENS, *q8, *extra, "--kernels", "plain")[2]
            same = all(engine_routes(folder, TOKENS, *q8, *extra, "--kernels", "fast", "--threads", t)[2] == base
                       for t in ("1", "2", "3", "7"))
            check(same, f"{cfg['architectures'][0]} int8 weights{' and activations' if extra else ''}: plain "
                        f"and fast kernels, 1, 2, 3 and 7 threads, the same bytes")


def check_make_model(tmp):
    for arch, extra in (("mixtral", ["--experts", "4", "--experts-used", "2"]),
                        ("qwen3moe", ["--experts", "6", "--experts-used", "2", "--expert-hidden", "8",
                                      "--dense-layers", "1", "--head-dim", "4"]),
                        ("qwen3moe", ["--experts", "6", "--experts-used", "3", "--moe-step", "2",
                                      "--no-norm-topk"])):
        folder = os.path.join(tmp, "made-" + arch + str(len(extra)))
        run_stepwise(BIN, "make-model", "--format", "hf", "--arch", arch, "--dtype", "bf16", "--dim", "16",
                     "--hidden", "24", "--layers", "3", "--heads", "4", "--kv-heads", "2", "--vocab", "13",
                     "--seq-len", "32", "--out", folder, *extra)
        cfg, w = hf_reference.read_model_dir(folder)
        if arch == "qwen3moe":  # each option lands in config.json as the table says
            norm = "--no-norm-topk" not in extra
            check(cfg["norm_topk_prob"] is norm and cfg["num_experts_per_tok"] == int(extra[3]) and
                  cfg["decoder_sparse_step"] == (2 if "--moe-step" in extra else 1),
                  f"make-model {' '.join(extra)}: config.json has norm_topk_prob {norm}, "
                  f"num_experts_per_tok {extra[3]} and its decoder_sparse_step")
        got, routes, _ = engine_routes(folder, TOKENS)
        want_routes = {}
        err = np.abs(got - reference(cfg, w, TOKENS, routes=want_routes)).max()
        check(err <= TOLERANCE and routes == want_routes,
              f"make-model --arch {arch} (bf16): the reference on its folder is the engine's "
              f"(max |dlogit| {err:.2e}), the same experts chosen")


def main():
    with tempfile.TemporaryDirectory() as tmp:
        folders = check_reference(tmp)
        check_kernels_and_threads(folders)
        check_trace(folders[0])
        check_decode_bytes(folders[0])
        check_decode_bytes_int8(folders[0], config())
        check_diff(folders[0])
        check_show(folders[0])
        check_convert(folders, tmp)
        check_stored(folders, tmp)
        check_int8(tmp)
        check_make_model(tmp)
    return check.summary("moe check")


if __name__ == "__main__":
    sys.exit(main())
