#!/usr/bin/python3
"""The engine's layering, checked by `make test`:

- no include cycle among modules: a module is a .c file with its .h
  (forward.c + forward.h), and module A depends on B when A's .c or .h
  includes B.h; a cycle (A uses B, B uses A) is an error, whatever its length;
- includes are from the project's root ("ref/kernels/pack.h"), never
  relative to the including file;
- the parts, by folder, in one order, each using only parts before it:
    util     (ref/util/: errors, files, JSON, half floats, hashes)
    kernels  (ref/kernels/: matrices, packing, int8, threads)
    text     (ref/text/: tokenizers, pretokenizing, chat)
    core     (ref/*.c, ref/model/, any other ref/ folder: config,
              model, forward, layers, sampler, generate, ...)
    formats  (ref/formats/: every file: llama2.c, .q8, GGUF, HF...)
    serve    (ref/serve/: batches, requests, the prefix cache)
    trace    (trace/: the trace, its reader, diff)
    api      (ref/api/: libstepwise, stepwise.h)
    cli      (ref/cli/: the command line)
  and which earlier parts each may use is the list ALLOWED below, kept
  minimal: a permission no include uses is an error too, so that the list
  says what the code does (the text layer uses no core, the trace no
  serving layer, and nothing in ref/ includes the API: lib/ and python/
  stand on it). So the kernels are a floor (nothing of a model), the core
  includes no file format, no serving, trace or command line (the maths
  never formats JSON), and the formats no serving;
- `--self-test` (also run first by every check) plants each fault in a
  made-up tree of includes and fails unless each is reported.

usage: tests/check_layers.py [--self-test]   (from the project root; exit 1 on a violation)
"""
import glob
import os
import re
import sys

# "ref/x.h" and <ref/x.h> alike: -I. lets either spelling reach a header of ours
INCLUDE = re.compile(r'^\s*#\s*include\s+(["<])([^">]+)[">]', re.M)


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


# The parts in their order: each may use only parts before it (and itself).
ORDER = ("util", "kernels", "text", "core", "formats", "serve", "trace", "api", "cli")

# What each part uses besides itself: every entry used by some include.
ALLOWED = {
    "util": set(),
    "kernels": {"util"},
    "text": {"util"},
    "core": {"util", "kernels", "text"},
    "formats": {"util", "kernels", "text", "core"},
    "serve": {"util", "kernels", "text", "core"},
    "trace": {"util", "kernels", "text", "core", "formats"},
    "api": {"util", "kernels", "core", "formats", "trace"},
    "cli": {"util", "kernels", "text", "core", "formats", "serve", "trace"},
}


def layer_problems(edges, allowed=ALLOWED, order=ORDER):
    """The problems of the parts' edges: edges is [(file, included name, file's part, its
    part)]. An include the list does not allow, a permission against the order, and a
    permission no include uses are each one."""
    problems, used = [], set()
    for f, name, here, there in edges:
        if there == here:
            continue
        used.add((here, there))
        if there not in allowed.get(here, ()):
            problems.append("%s includes %s: the %s layer may not use the %s layer"
                            % (f, name, here, there))
    for here in order:
        for there in sorted(allowed[here], key=order.index):
            if order.index(there) >= order.index(here):
                problems.append("the %s layer may use %s, which is not before it in the order"
                                % (here, there))
            elif (here, there) not in used:
                problems.append("the %s layer may use %s, but no include does: drop the permission"
                                % (here, there))
    return problems


def self_test():
    """Each fault planted in a made-up tree must be reported: the problems' count, or 1."""
    edges = [(a + ".c", b + ".h", a, b) for a in ORDER for b in ALLOWED[a]]
    cases = [
        ("a clean tree", edges, ALLOWED, 0),
        ("an include going up (text uses core)", edges + [("t.c", "c.h", "text", "core")], ALLOWED, 1),
        ("a permission nothing uses (serve may use formats)",
         [e for e in edges if e[2:] != ("serve", "formats")],
         dict(ALLOWED, serve=ALLOWED["serve"] | {"formats"}), 1),
        ("a permission against the order (util may use cli)",
         edges + [("u.c", "m.h", "util", "cli")], dict(ALLOWED, util={"cli"}), 1),
    ]
    failed = 0
    found = INCLUDE.findall('#include "ref/layers.h"\n#include <ref/cli/common.h>\n#include <stdio.h>\n')
    if [name for _, name in found] != ["ref/layers.h", "ref/cli/common.h", "stdio.h"]:
        failed += 1
        print("check_layers: self-test: an include in angle brackets is not read: %s" % found)
    for what, e, allowed, want in cases:
        got = layer_problems(e, allowed)
        if len(got) != want:
            failed += 1
            print("check_layers: self-test: %s: %d problems, not %d: %s" % (what, len(got), want, got))
    return failed


def main():
    if self_test():
        return 1
    if sys.argv[1:] == ["--self-test"]:
        print("check_layers: self-test: each planted fault reported")
        return 0
    files = sorted(glob.glob("ref/**/*.[ch]", recursive=True) + glob.glob("trace/*.[ch]"))
    deps, problems, edges = {}, [], []
    for f in files:
        here = module_of(f)
        for quote, name in INCLUDE.findall(open(f).read()):
            target = os.path.normpath(name)
            if not os.path.exists(target):  # <error.h> is the C library's, not ref/util's
                if quote == '"' and os.path.exists(os.path.join(os.path.dirname(f), name)):
                    problems.append("%s includes \"%s\": includes are from the project's root" % (f, name))
                continue  # generated or system-like; not a module of ours
            edges.append((f, name, layer_of(f), layer_of(target)))
            there = module_of(target)
            if there != here:
                deps.setdefault(here, set()).add(there)
    problems += layer_problems(edges)
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
    for here in ORDER:
        print("  %-8s uses %s" % (here, ", ".join(sorted(ALLOWED[here], key=ORDER.index)) or "nothing"))
    print("layers: %s; %d modules, %d problems"
          % (" < ".join(ORDER), len({module_of(f) for f in files}), len(problems)))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
