#!/usr/bin/python3
"""The engine's layering, checked by `make test`:

- no include cycle among modules: a module is a .c file with its .h
  (forward.c + forward.h), and module A depends on B when A's .c or .h
  includes B.h; a cycle (A uses B, B uses A) is an error, whatever its length;
- the engine (ref/*.c, ref/*.h) includes nothing of the command line
  (ref/cli/) or of the trace layer (trace/): the maths never formats JSON;
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


def layer_of(path):
    parts = path.split(os.sep)
    if parts[0] == "ref" and len(parts) > 2 and parts[1] in ("cli", "api"):
        return parts[1]
    return {"ref": "engine", "trace": "trace"}.get(parts[0], "other")


def module_of(path):
    return os.path.splitext(os.path.normpath(path))[0]


def main():
    files = sorted(glob.glob("ref/*.[ch]") + glob.glob("ref/cli/*.[ch]") + glob.glob("ref/api/*.[ch]")
                   + glob.glob("trace/*.[ch]"))
    deps, problems = {}, []
    allowed = {"engine": {"engine"}, "trace": {"engine", "trace"},
               "api": {"engine", "trace", "api"}, "cli": {"engine", "trace", "api", "cli"}}
    for f in files:
        here = module_of(f)
        for name in INCLUDE.findall(open(f).read()):
            target = os.path.normpath(os.path.join(os.path.dirname(f), name))
            if not os.path.exists(target):
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
