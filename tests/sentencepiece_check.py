#!/usr/bin/python3
"""Compare stepwise's BPE encoder with sentencepiece on tok512.model.

sentencepiece is the reference: the model was trained with it.

  sentencepiece_check.py write OUT.json     write the fixed expectations that
                                            tests/test_tokenizer.c checks
  sentencepiece_check.py check STEPWISE N   encode N seeded random strings with
                                            both and require equal ids
  sentencepiece_check.py chat OUT.json      write the token ids of a fixed
                                            conversation under each chat template
                                            (docs/batching.md's rule: each part
                                            encoded on its own)

Needs Debian's python3-sentencepiece; the models folder comes from
STEPWISE_MODELS (default ../shared/models).
"""
import json
import os
import random
import subprocess
import sys

import sentencepiece as spm
from check_util import TIMEOUT

MODELS = os.environ.get("STEPWISE_MODELS", "../shared/models")

# Hand-picked cases: every rule of the encoder that can go wrong.
FIXED = [
    "", " ", "   ", "Once upon a time", "once upon a time", "Hello world!",
    "  leading spaces", "trailing spaces   ", "runs   of    spaces", "a  b",
    "tab\tand\nnewline", "\n\n", " \n ", "line one\nline two",
    "héllo ☃ 😀", "naïve café", "日本語", "x\u3000y", "\u00a0nbsp", "emoji 🙂🙃 pair",
    "<s> literal </s>", "<0x41>", "<unk>", "1234567890", "3.14159", "don't stop",
    "Lily and Ben went to the park. They saw a big dog!",
    "\"Quotes,\" she said; (parens) [brackets] {braces}",
    "The quick brown fox jumps over the lazy dog.", "aaaaaaaaaaaaaaaa", "ab" * 20,
    "Tim's mom said, \"No!\"", "~`@#$%^&*_+=|\\/<>", "MiXeD CaSe WoRdS", "end.",
]

PALETTE = list("abcdefghijklmnopqrstuvwxyz ABCDEFT    .,!?'\"-\n\t0123456789") + [
    "é", "ü", "☃", "😀", "日", "\u00a0", "\u3000", "  ", "the", " and", "ing"]


def random_texts(n, seed=20261129):
    rng = random.Random(seed)
    return ["".join(rng.choice(PALETTE) for _ in range(rng.randint(0, 40))) for _ in range(n)]


def processor():
    return spm.SentencePieceProcessor(model_file=os.path.join(MODELS, "tok512.model"))


def write(path):
    sp = processor()
    cases = [{"text": t, "ids": sp.encode(t)} for t in FIXED + random_texts(200, seed=7)]
    doc = {
        "source": "sentencepiece %s encoding with tok512.model (no BOS); regenerate with "
                  "tests/sentencepiece_check.py write" % spm.__version__,
        "cases": cases,
    }
    with open(path, "w", encoding="utf-8") as f:
        json.dump(doc, f, ensure_ascii=False, indent=0)
        f.write("\n")


def check(stepwise, n):
    sp = processor()
    tok = os.path.join(MODELS, "tok512.bin")
    bad = 0
    for text in random_texts(n):
        out = subprocess.run([stepwise, "tokenize", "--tokenizer", tok, "--no-bos", "--json",
                              "--text", text], capture_output=True, check=True, timeout=TIMEOUT)
        got = json.loads(out.stdout)["ids"]
        want = sp.encode(text)
        if got != want:
            bad += 1
            print("MISMATCH %r\n  stepwise      %s\n  sentencepiece %s" % (text, got, want))
    print("sentencepiece: %d passed, %d failed" % (n - bad, bad))
    return bad == 0


CONVERSATION = {
    "system": "You are a kind storyteller.",
    "messages": [
        {"role": "user", "content": "Tell me a story about a dog."},
        {"role": "assistant", "content": "Once upon a time, there was a dog named Max."},
        {"role": "user", "content": "What did Max do next?"},
    ],
}
# Memory notes and documents in the system turn (docs/context-window.md).
WITH_PARTS = {
    "system": "You are a kind storyteller.",
    "memory": ["The child likes dogs.", "Her name is Sue."],
    "documents": [{"id": "dogs.txt", "text": "A dog can run and jump."}],
    "messages": [{"role": "user", "content": "Tell me a story."}],
}
BOS, EOS = 1, 2


def system_ids(enc, conv):
    """The system turn's parts, each encoded on its own, labels as markers."""
    ids = enc(conv["system"]) if "system" in conv else []
    for note in conv.get("memory", []):
        ids += enc("Memory:") + enc(note)
    for d in conv.get("documents", []):
        ids += enc(f"Document {d['id']}:") + enc(d["text"])
    return ids


def chat_ids(sp, template, conv=CONVERSATION):
    """The documented templates, part by part, with sentencepiece's own ids."""
    ids, msgs = [], conv["messages"]
    enc = sp.encode
    if template == "plain":  # no template or system prompt: BOS, the parts, the prompt
        parts = {k: v for k, v in conv.items() if k != "system"}
        return [BOS] + system_ids(enc, parts) + enc(msgs[0]["content"])
    if template == "llama2":
        for i in range(0, len(msgs), 2):
            ids += [BOS] + enc("[INST]")
            if i == 0:
                ids += enc("<<SYS>>") + system_ids(enc, conv) + enc("<</SYS>>")
            ids += enc(msgs[i]["content"]) + enc("[/INST]")
            if i + 1 < len(msgs):
                ids += enc(msgs[i + 1]["content"]) + [EOS]
    else:
        ids += [BOS] + enc("<|im_start|>") + enc("system") + system_ids(enc, conv) \
            + enc("<|im_end|>")
        for m in msgs:
            ids += enc("<|im_start|>") + enc(m["role"]) + enc(m["content"]) + enc("<|im_end|>")
        ids += enc("<|im_start|>") + enc("assistant")
    return ids


def write_chat(path):
    sp = processor()
    doc = {"source": "sentencepiece %s with tok512.model; tests/sentencepiece_check.py chat"
                     % spm.__version__,
           "conversation": CONVERSATION,
           "llama2": chat_ids(sp, "llama2"), "chatml": chat_ids(sp, "chatml"),
           "with_parts": {"conversation": WITH_PARTS,
                          **{t: chat_ids(sp, t, WITH_PARTS) for t in ("llama2", "chatml", "plain")}}}
    with open(path, "w", encoding="utf-8") as f:
        json.dump(doc, f, ensure_ascii=False, indent=1)
        f.write("\n")


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "write":
        write(sys.argv[2])
    elif len(sys.argv) == 3 and sys.argv[1] == "chat":
        write_chat(sys.argv[2])
    elif len(sys.argv) == 4 and sys.argv[1] == "check":
        sys.exit(0 if check(sys.argv[2], int(sys.argv[3])) else 1)
    else:
        sys.exit(__doc__)
