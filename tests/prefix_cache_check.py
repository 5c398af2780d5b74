#!/usr/bin/python3
"""batch --prefix-cache (in `make test`): the same outputs, less prefill.

Six requests share a long system prompt (about 175 tokens with tok512) and
differ in their last words. Served with and without the prefix cache, with
a float32 KV cache, an int8 one and a float16 one (--kv-dtype f16), with one and with two requests in the
batch, every output line is the same (its measured timings aside), and the
cache reports positions reused. The multiply-adds it says it saved are
checked against the closed form of a stories260K block, computed here from
the model's shape (inspect --json) and each request's reused positions:
per token L·(d·q + 2·d·kv + q·d + 3·d·h), plus L·(p+1)·heads·head_dim·2 for
the attention of position p. A budget that holds only one prompt evicts,
and still gives the same outputs; a budget below one position's rows, and
one that is not a number, are refused in one line with exit 2.

A chat of three turns (tests/chat_turns.py), which resends its history each
turn: every prompt's ids and the tokens resent counted by hand with
sentencepiece, the positions prefilled without the cache (every prompt
whole) and with it (each turn copies the prompt before), and the same
tokens out.

    /usr/bin/python3 tests/prefix_cache_check.py build/stepwise
"""
import json
import os
import sys
import tempfile

import chat_turns
from check_util import Checks, run_stepwise, stories260k, tok512_encoder

BIN = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build/stepwise")
SYSTEM = "You are a helpful storyteller who tells short stories about animals in the forest. " * 4


def outputs(path):
    lines = [json.loads(line) for line in open(path, encoding="utf-8")]
    for line in lines:
        line.pop("metrics", None)
    return lines


def body_macs(c, T, pos0):
    d, h, L = c["dim"], c["hidden_dim"], c["n_layers"]
    q, kv, hd = c["n_heads"] * c["head_dim"], c["n_kv_heads"] * c["head_dim"], c["head_dim"]
    per_token = L * (d * q + 2 * d * kv + q * d + 3 * d * h)
    return per_token * T + sum(L * (pos0 + t + 1) * c["n_heads"] * hd * 2 for t in range(T))


def chat_checks(check, m, tmp):
    """A chat of three turns (tests/chat_turns.py): each turn's request resends
    the conversation so far. Counted by hand with sentencepiece's encoder,
    each part encoded on its own as docs/batching.md's llama2 template says:
    turn 1 is BOS [INST] <<SYS>> system <</SYS>> user1 [/INST]; turn k + 1 is
    turn k's prompt, its answer and EOS (resent), then BOS [INST] user [/INST]
    (new). Without the cache every prompt is prefilled whole; with it, turn
    k + 1 copies the rows of turn k's whole prompt and prefills the rest, so
    the three prefill the last prompt's length in all; the same tokens out."""
    enc = tok512_encoder()
    if enc is None:
        check.skip("the chat's resent tokens: no sentencepiece or tok512.model")
        return
    requests = chat_turns.turns(BIN, m[1], m[3])
    ids, resent, added = [], [], []
    for k, r in enumerate(requests):
        msgs = r["messages"]
        if k == 0:
            turn = [1] + enc("[INST]") + enc("<<SYS>>") + enc(r["system"]) + enc("<</SYS>>")
            resent.append(0)
        else:
            history = ids[-1] + enc(msgs[-2]["content"]) + [2]  # the last answer, then EOS
            resent.append(len(history))
            turn = history + [1] + enc("[INST]")
        turn += enc(msgs[-1]["content"]) + enc("[/INST]")
        added.append(len(turn) - resent[-1])
        ids.append(turn)
    path = os.path.join(tmp, "chat.jsonl")
    with open(path, "w", encoding="utf-8") as f:
        f.writelines(json.dumps(r) + "\n" for r in requests)
    served = {}
    for cache in (False, True):
        out = run_stepwise(BIN, "batch", *m, "--requests", path, "--max-batch", "1", "--quiet",
                           *(["--prefix-cache"] if cache else []))
        served[cache] = [json.loads(line) for line in out.stdout.splitlines()]
    plain, cached = served[False], served[True]
    lengths = [len(x) for x in ids]
    check([r["tokens"][:r["prompt_tokens"]] for r in plain] == ids,
          f"a chat of three turns: each turn's prompt is sentencepiece's ids of the conversation so far "
          f"({lengths} tokens; {resent} of them resent, {added} new)")
    check(all(ids[k + 1][:lengths[k]] == ids[k] for k in range(2)),
          "each turn resends the turn before whole: its prompt begins with the last one's")
    check([r["tokens"] for r in plain] == [r["tokens"] for r in cached],
          "the chat: the same tokens with and without the prefix cache")
    without = sum(r["prompt_tokens"] - r["metrics"]["prefix_tokens_reused"] for r in plain)
    reused = [r["metrics"]["prefix_tokens_reused"] for r in cached]
    with_cache = sum(r["prompt_tokens"] for r in cached) - sum(reused)
    check(without == sum(lengths) and reused == [0] + lengths[:2] and with_cache == lengths[-1],
          f"the chat prefills {without} positions without the cache (the hand's {sum(lengths)}), "
          f"{with_cache} with it (the last prompt's {lengths[-1]}): each turn copies the rows of "
          f"the prompt before, {reused}; of the {sum(resent)} resent, "
          f"{sum(resent) - sum(reused)} (the answers and their EOS) are prefilled again")


def main():
    check = Checks()
    m = stories260k("prefix cache")
    if m is None:
        return 0
    shape = json.loads(run_stepwise(BIN, "inspect", *m[:2], "--json").stdout)["model"]
    with tempfile.TemporaryDirectory() as tmp:
        requests = os.path.join(tmp, "requests.jsonl")
        with open(requests, "w", encoding="utf-8") as f:
            for i, animal in enumerate(["a cat", "a dog", "a fish", "a bird", "a frog", "a bear"]):
                f.write(json.dumps({"id": f"r{i}", "prompt": SYSTEM + "Tell me about " + animal + ".",
                                    "max_tokens": 16, "temperature": 0.8, "seed": i + 1}) + "\n")

        def serve(tag, *extra):
            out, metrics = os.path.join(tmp, f"{tag}.jsonl"), os.path.join(tmp, f"{tag}.json")
            run_stepwise(BIN, "batch", *m, "--requests", requests, "--quiet", "--out", out,
                         "--metrics-json", metrics, *extra)
            lines = [json.loads(line) for line in open(out, encoding="utf-8")]
            return outputs(out), json.load(open(metrics, encoding="utf-8")), lines

        for kv in ("float32", "int8", "float16"):  # float16: an engine's 16-bit cache (--kv-dtype)
            flags = ["--kv-dtype", "f16"] if kv == "float16" else ["--quant-kv", kv]
            for batch in ("1", "2"):
                base, _, _ = serve(f"plain-{kv}-{batch}", *flags, "--max-batch", batch)
                cached, metrics, lines = serve(f"cached-{kv}-{batch}", *flags, "--max-batch",
                                               batch, "--prefix-cache")
                reused = metrics["prefix_tokens_reused"]
                want = sum(body_macs(shape, l["prompt_tokens"], 0)
                           - body_macs(shape, l["prompt_tokens"] - l["metrics"]["prefix_tokens_reused"],
                                       l["metrics"]["prefix_tokens_reused"]) for l in lines)
                check(cached == base and reused > 0 and reused == sum(l["metrics"]["prefix_tokens_reused"]
                                                                       for l in lines),
                      f"{kv} KV, max batch {batch}: outputs identical with the cache, "
                      f"{reused} positions reused")
                check(metrics["prefill_macs_saved"] == want,
                      f"{kv} KV, max batch {batch}: {want:,} multiply-adds saved, the closed form's")
        # room for about one prompt's rows: each new prompt evicts the last
        one = 5 * 4 * 8 * 2 * 4  # layers x KV heads x head_dim x (K, V) x 4 bytes: one position
        base, _, _ = serve("plain-small")
        small, metrics, _ = serve("small", "--prefix-cache-bytes", str(one * 300))
        check(small == base and metrics["prefix_cache_evicted"] > 0 and metrics["prefix_cache_bytes"] <= one * 300,
              f"a budget of {one * 300} bytes: {metrics['prefix_cache_evicted']} prompts evicted, "
              f"{metrics['prefix_cache_bytes']} bytes held, outputs identical")
        # a kept position costs its rows and its token id (4 bytes), which later prompts are
        # matched against: a budget of the rows alone holds nothing, and is refused
        charge = one + 4
        run_stepwise(BIN, "batch", *m, "--requests", requests, "--quiet", "--prefix-cache-bytes", str(charge))
        for bad, words in ((str(charge - 1), "cannot hold one position"), ("lots", "--prefix-cache-bytes")):
            r = run_stepwise(BIN, "batch", *m, "--requests", requests, "--quiet", "--prefix-cache-bytes",
                             bad, expect=(2,))
            check(words in r.stderr and len(r.stderr.strip().splitlines()) == 1,
                  f"--prefix-cache-bytes {bad} refused: {r.stderr.strip()}")
        chat_checks(check, m, tmp)
        # inspect's accounting: positions a budget holds, and the whole bill
        budget, ctx, reqs = 1000000, 256, 32
        o = json.loads(run_stepwise(BIN, "inspect", *m[:2], "--json", "--context", str(ctx),
                                    "--requests", str(reqs), "--prefix-cache-bytes",
                                    str(budget)).stdout)
        d, h, L = shape["dim"], shape["hidden_dim"], shape["n_layers"]
        q, kv = shape["n_heads"] * shape["head_dim"], shape["n_kv_heads"] * shape["head_dim"]
        # embedding (tied classifier), per layer two norms and the five matrices, the final norm
        weights = 4 * (shape["vocab_size"] * d + L * (2 * d + d * q + 2 * d * kv + q * d + 3 * d * h) + d)
        want = {"budget_bytes": budget, "positions": budget // charge,
                "prompts_at_context": budget // charge // ctx,
                "total_bytes_at_most": weights + reqs * ctx * one + budget}
        check(o.get("prefix_cache") == want,
              f"inspect --prefix-cache-bytes {budget}: {o.get('prefix_cache')}, closed form {want}")
    return check.summary("prefix cache")


if __name__ == "__main__":
    sys.exit(main())
