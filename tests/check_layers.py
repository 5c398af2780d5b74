#!/usr/bin/python3
"""The engine's layering, checked by `make test`:

- no include cycle among modules: a module is a .c file with its .h
  (forward.c + forward.h), and module A depends on B when A's .c or .h
  includes B.h; a cycle (A uses B, B uses A) is an error, whatever its length;
- includes are from the project's root ("ref/kernels/pack.h"), never
  relative to the including file;
- the engine's parts, by folder, use only the parts below them:
    util     (ref/util/: errors, files, JSON, half floats, hashes)  util
    kernels  (ref/kernels/: matrices, packing, int8, threads)       util
    text     (ref/text/: tokenizers, pretokenizing, chat)           util, core
    core     (ref/*: config, model, forward, layers, sampler, ...)  util, kernels, text
    formats  (ref/formats/: every file: llama2.c, .q8, GGUF, HF...) util, kernels, text, core
    serve    (ref/serve/: batches, requests, the prefix cache)      all of the engine
  so the kernels are a floor (a matrix, its packed and int8 forms, the
  attention and SwiGLU kernels: nothing of a model), the core never
  includes a file format or the serving layer, and the formats never
  include the serving layer;
- the engine includes nothing of the command line (ref/cli/) or of the
  trace layer (trace/): the maths never formats JSON;
- the trace layer includes nothing of the command line;
- the library's API (ref/api/) stands on the engine and the trace layer,
  and only the command line may include it.

usage: tests/check_layers.py   (from the project root; exit 1 on a violation)
"""
import glob
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


ENGINE_PARTS = ("kernels", "formats", "text", "serve", "util")


def layer_of(path):
    parts = path.split(os.sep)
    if parts[0] == "ref" and len(parts) > 2 and parts[1] in ("cli", "api") + ENGINE_PARTS:
        return parts[1]
    if parts[0] == "ref":
        return "core"
    return {"trace": "trace"}.get(parts[0], "other")


def module_of(path):
    return os.path.splitext(os.path.normpath(path))[0]


def main():
    files = sorted(glob.glob("ref/**/*.[ch]", recursive=True) + glob.glob("trace/*.[ch]"))
    deps, problems = {}, []
    engine = {"util", "kernels", "text", "core", "formats", "serve"}
    allowed = {"util": {"util"}, "kernels": {"util", "kernels"}, "text": {"util", "core", "text"},
               "core": {"util", "kernels", "text", "core"},
               "formats": {"util", "kernels", "text", "core", "formats"}, "serve": engine,
               "trace": engine | {"trace"}, "api": engine | {"trace", "api"},
               "cli": engine | {"trace", "api", "cli"}}
    for f in files:
        here = module_of(f)
        for name in INCLUDE.findall(open(f).read()):
            target = os.path.normpath(name)
            if not os.path.exists(target):
                if os.path.exists(os.path.join(os.path.dirname(f), name)):
                    problems.append("%s includes \"%s\": includes are from the project's root" % (f, name))
                continue  # generated or system-like; not a module of ours
            if layer_of(target) not in allowed[layer_of(f)]:
                problems.append("%s includes %s: the %s layer may not use the %s layer"
                                % (f, name, layer_of(f), layer_of(target)))
            there = module_of(target)
            if there != here:
                deps.setdefault(here, set()).add(there)
    # Cycles, by depth-first search with the path kept.
    state, seen_cycles = {}, set()

    def visit(m, path):
        state[m] = "open"
        for d in sorted(deps.get(m, ())):
            if state.get(d) == "open":
                cycle = path[path.index(d):] + [d]
                key = frozenset(cycle)
                if key not in seen_cycles:
                    seen_cycles.add(key)
                    problems.append("include cycle: " + " -> ".join(cycle))
            elif d not in state:
                visit(d, path + [d])
        state[m] = "done"

    for m in sorted(deps):
        if m not in state:
            visit(m, [m])
    for p in problems:
        print("check_layers: " + p)
    print("layers: %d modules, %d problems" % (len({module_of(f) for f in files}), len(problems)))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
