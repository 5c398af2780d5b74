#!/usr/bin/python3
"""A chat of three turns, as a chat API serves it, written as `stepwise
batch` requests (JSON lines) on standard output.

A request's KV cache lasts the request: when it ends, its rows are freed.
So a chat API is stateless, and each turn's request carries the whole
conversation so far (the system prompt, every user turn and every answer),
which the engine prefills again: turn 2 resends turn 1 and its answer, turn 3
resends turns 1 and 2 and both answers. Each answer here is the model's own
(greedy, 16 tokens): turn k's request is served alone first, and its
completion becomes the assistant message of turn k + 1. docs/batching.md
("A chat resends its history") serves the three with and without
`--prefix-cache` and counts the resent tokens.

    /usr/bin/python3 tests/chat_turns.py build/stepwise MODEL TOKENIZER > chat.jsonl
"""
import json
import os
import sys
import tempfile

from check_util import run_stepwise

SYSTEM = "You tell short stories to small children."
USER = ["Tell me a story about a cat.", "What did the cat find?", "How did the story end?"]
MAX_TOKENS = 16


def turns(binary, model, tokenizer):
    """The three requests, each with the conversation so far."""
    messages, requests = [], []
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "turn.jsonl")
        for k, text in enumerate(USER):
            messages.append({"role": "user", "content": text})
            request = {"id": "turn%d" % (k + 1), "system": SYSTEM, "messages": list(messages),
                       "max_tokens": MAX_TOKENS}
            requests.append(request)
            if k + 1 < len(USER):  # the answer, which the next turn sends back
                with open(path, "w", encoding="utf-8") as f:
                    f.write(json.dumps(request) + "\n")
                out = run_stepwise(binary, "batch", "--model", model, "--tokenizer", tokenizer,
                                   "--requests", path, "--quiet")
                messages.append({"role": "assistant", "content": json.loads(out.stdout)["completion"]})
    return requests


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    for r in turns(*sys.argv[1:]):
        print(json.dumps(r))
