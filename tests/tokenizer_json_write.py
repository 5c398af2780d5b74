"""tokenizer_json_write.py: small tokenizer.json files written to the format
(Hugging Face tokenizers' serialisation), for the fuzz seeds and the
bad-input matrix: one of each supported form, a few hundred bytes to a few
kilobytes, unlike the real ones (megabytes).

tokenizers() -> {name: (tokenizer_json_dict, tokenizer_config_dict or None)}
"""

LLAMA3_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|"
                  r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")


def byte_level_symbols():
    """GPT-2's bytes_to_unicode, in byte order."""
    printable = list(range(33, 127)) + list(range(161, 173)) + list(range(174, 256))
    extra = 256
    out = []
    for b in range(256):
        if b in printable:
            out.append(chr(b))
        else:
            out.append(chr(extra))
            extra += 1
    return out


def byte_level():
    sym = byte_level_symbols()
    vocab = {s: i for i, s in enumerate(sym)}
    merges = [("Ġ", "t"), ("h", "e"), ("Ġt", "he"), ("a", "t"), ("c", "at")]
    for a, b in merges:
        vocab.setdefault(a + b, len(vocab))
    n = len(vocab)
    added = [{"id": n + i, "content": c, "single_word": False, "lstrip": False, "rstrip": False,
              "normalized": False, "special": True}
             for i, c in enumerate(["<|endoftext|>", "<|im_start|>", "<|im_end|>"])]
    tok = {"version": "1.0", "added_tokens": added, "normalizer": {"type": "NFC"},
           "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
               {"type": "Split", "pattern": {"Regex": LLAMA3_PATTERN}, "behavior": "Isolated",
                "invert": False},
               {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False,
                "use_regex": False}]},
           "post_processor": None, "decoder": {"type": "ByteLevel"},
           "model": {"type": "BPE", "dropout": None, "unk_token": None, "fuse_unk": False,
                     "byte_fallback": False, "ignore_merges": True, "vocab": vocab,
                     "merges": [[a, b] for a, b in merges]}}
    config = {"bos_token": None, "eos_token": "<|im_end|>", "add_bos_token": False,
              "chat_template": "{% for m in messages %}{{'<|im_start|>' + m['role'] + '\\n'}}"
                               "{% endfor %}"}
    return tok, config


def sentencepiece_style(metaspace=False):
    vocab = {"<unk>": 0, "<s>": 1, "</s>": 2}
    for b in range(256):
        vocab[f"<0x{b:02X}>"] = len(vocab)
    merges = [("▁", "t"), ("h", "e"), ("▁t", "he"), ("a", "t"), ("c", "at"), ("▁", "cat")]
    for ch in "▁abcdefghijklmnopqrstuvwxyz":
        vocab.setdefault(ch, len(vocab))
    for a, b in merges:
        vocab.setdefault(a + b, len(vocab))
    added = [{"id": i, "content": c, "single_word": False, "lstrip": False, "rstrip": False,
              "normalized": False, "special": True} for i, c in enumerate(["<unk>", "<s>", "</s>"])]
    tok = {"version": "1.0", "added_tokens": added,
           "post_processor": {"type": "TemplateProcessing",
                              "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
                                         {"Sequence": {"id": "A", "type_id": 0}}]},
           "model": {"type": "BPE", "dropout": None, "unk_token": "<unk>", "fuse_unk": True,
                     "byte_fallback": True, "vocab": vocab,
                     "merges": [f"{a} {b}" for a, b in merges]}}
    if metaspace:
        tok["normalizer"] = None
        tok["pre_tokenizer"] = {"type": "Metaspace", "replacement": "▁",
                                "prepend_scheme": "first", "split": False}
        tok["decoder"] = {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "first",
                          "split": False}
    else:
        tok["normalizer"] = {"type": "Sequence", "normalizers": [
            {"type": "Prepend", "prepend": "▁"},
            {"type": "Replace", "pattern": {"String": " "}, "content": "▁"}]}
        tok["pre_tokenizer"] = None
        tok["decoder"] = {"type": "Sequence", "decoders": [
            {"type": "Replace", "pattern": {"String": "▁"}, "content": " "},
            {"type": "ByteFallback"}, {"type": "Fuse"},
            {"type": "Strip", "content": " ", "start": 1, "stop": 0}]}
    config = {"bos_token": {"content": "<s>"}, "eos_token": "</s>", "add_bos_token": True,
              "chat_template": "{{ bos_token + '[INST] ' }}<<SYS>>"}
    return tok, config


def tokenizers():
    return {"byte_level": byte_level(), "sentencepiece": sentencepiece_style(),
            "metaspace": sentencepiece_style(metaspace=True)}
