#!/usr/bin/python3
"""The 32 requests of `make bench-batch`'s prefix-cache run, as JSON lines:
a system prompt of some 277 tok512 tokens (three times one story-teller's
instructions), then "Tell me about a cat." and seven other animals in turn,
32 new tokens each. docs/batching.md's figures come from serving them.

    /usr/bin/python3 tests/prefix_requests.py > requests.jsonl
"""
import json

SYSTEM = ("You are a kind storyteller. You tell short, happy stories to small children about "
          "animals who live in the forest, by the river and in the sea, and every story ends well. ") * 3
ANIMALS = ["cat", "dog", "fish", "bird", "frog", "bear", "fox", "owl"]

for i in range(32):
    print(json.dumps({"id": "p%02d" % i, "prompt": SYSTEM + "Tell me about a %s." % ANIMALS[i % 8],
                      "max_tokens": 32}))
