#!/usr/bin/python3
"""`make mutants`: the project's mutation round. Each mutant of
tests/mutants_list.py (a realistic bug, one exact edit) is applied in turn
to a copy of the checkout (build/mutants/tree: the tracked files and the
untracked ones git does not ignore), which is built, and the test area that
owns the code runs (`tests/run_area.py AREA --first-failure`, the rows of
`make test T=AREA`). A failing area catches the mutant; a passing one lets
it survive. The file is then put back. The checkout itself is never
touched.

Before any mutant, the copy is built and every area the list names runs
once unmutated: an area that fails then cannot judge a mutant, and the
round stops. A mutant that does not build is a mistake in the list (an
error), not a catch.

    tests/mutants.py              every mutant (about 15 minutes on two cores)
    tests/mutants.py NAME-PART... the mutants whose names hold one of them
    tests/mutants.py --check      each mutant's text occurs exactly once in
                                  its file (in `make test`: the list stays
                                  applicable as the code changes)
    tests/mutants.py --list       the mutants, by area
    tests/mutants.py --skip-baseline [NAME-PART...]
                                  leave out the unmutated runs of the areas
                                  (when `make test` has just passed on the
                                  same tree)

Prints a line a mutant and the score; writes build/mutants/report.txt.
Exit 1 when a mutant survives that is not named equivalent, or on an
error.
"""
import os
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from mutants_list import EQUIVALENT, MUTANTS  # noqa: E402
from check_util import TIMEOUT  # noqa: E402

WORK = os.path.join(ROOT, "build", "mutants")
TREE = os.path.join(WORK, "tree")
AREA_TIMEOUT = 1800  # seconds: an area that hangs on a mutant catches it
# built once in the checkout and shared: the npm installs (no network in a mutant's run)
SHARED_BUILD = ("npm", "npm-llama-cpp")


def check_list():
    """Problems with the list: a text that is not in its file exactly once,
    a name twice, an unknown area."""
    import run_area
    areas = {r[2] for r in run_area.rows()} - run_area.NOT_RUN
    problems, names = [], set()
    for name, path, old, new, area, what in MUTANTS:
        text = open(os.path.join(ROOT, path), encoding="utf-8").read()
        if text.count(old) != 1:
            problems.append(f"{name}: its text occurs {text.count(old)} times in {path}, not once")
        if old == new:
            problems.append(f"{name}: changes nothing")
        if name in names:
            problems.append(f"{name}: named twice")
        if area not in areas:
            problems.append(f"{name}: no area {area} in tests/README.md")
        names.add(name)
    problems += [f"EQUIVALENT names {n}, which is no mutant" for n in EQUIVALENT if n not in names]
    return problems


def copy_tree():
    """build/mutants/tree: the checkout's files as they are now, and the
    shared npm folders linked in."""
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT,
                           capture_output=True, check=True, timeout=TIMEOUT).stdout.decode().split("\0")
    os.makedirs(TREE, exist_ok=True)
    for f in filter(None, files):
        src, dst = os.path.join(ROOT, f), os.path.join(TREE, f)
        if not os.path.isfile(src):
            continue
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        if not os.path.exists(dst) or open(src, "rb").read() != open(dst, "rb").read():
            shutil.copy2(src, dst)
    # a file the checkout no longer has goes from the copy too: a source
    # left behind (ref/api/stepwise.c after its split) is built and linked
    kept = {os.path.normpath(f) for f in files if f}
    for top, dirs, names in os.walk(TREE):
        rel = os.path.relpath(top, TREE)
        if rel == ".":
            dirs[:] = [d for d in dirs if d != "build"]
        for n in names:
            f = os.path.normpath(os.path.join(rel, n))
            if f not in kept:
                os.remove(os.path.join(TREE, f))
    os.makedirs(os.path.join(TREE, "build"), exist_ok=True)
    for d in SHARED_BUILD:
        src, dst = os.path.realpath(os.path.join(ROOT, "build", d)), os.path.join(TREE, "build", d)
        if not os.path.isdir(src):
            raise SystemExit(f"mutants: no build/{d} (make npm-fixtures llama-cpp-peer first)")
        if os.path.isdir(dst) and not os.path.islink(dst):
            shutil.rmtree(dst)
        if not os.path.lexists(dst):
            os.symlink(src, dst)


def run(cmd, log, timeout):
    """cmd in the copy, its output into log; its exit status (124: timed out)."""
    from check_util import models_dir
    env = dict(os.environ, STEPWISE_MODELS=models_dir())
    with open(log, "w") as out:
        try:
            return subprocess.run(cmd, cwd=TREE, stdout=out, stderr=subprocess.STDOUT, env=env,
                                  timeout=timeout).returncode
        except subprocess.TimeoutExpired:
            return 124


def build(log):
    return run(["make", "-j2", "build", "build/stepwise-tests", "build/bench/forward", "build/bench/bandwidth",
                "build/bench/ports"], log, 900) == 0


def run_area(area, log):
    return run(["/usr/bin/python3", "tests/run_area.py", area, "--first-failure"], log, AREA_TIMEOUT)


def main():
    args = sys.argv[1:]
    if args == ["--check"]:
        problems = check_list()
        for p in problems:
            print("FAIL  " + p)
        print("mutants: %d listed, %s" % (len(MUTANTS), "%d problems" % len(problems) if problems
                                          else "each applies exactly once"))
        return 1 if problems else 0
    if args == ["--list"]:
        for name, path, _, _, area, what in sorted(MUTANTS, key=lambda m: m[4]):
            print("%-9s %-28s %-28s %s" % (area, name, path, what))
        return 0
    skip_baseline = args[:1] == ["--skip-baseline"]
    args = args[1:] if skip_baseline else args
    if any(a.startswith("-") for a in args):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    problems = check_list()
    if problems:
        print("\n".join(problems), file=sys.stderr)
        return 2
    chosen = [m for m in MUTANTS if not args or any(a in m[0] for a in args)]
    copy_tree()
    logs = os.path.join(WORK, "logs")
    os.makedirs(logs, exist_ok=True)
    if not build(os.path.join(logs, "baseline-build.log")):
        print("mutants: the unmutated copy does not build (build/mutants/logs/baseline-build.log)")
        return 2
    for area in [] if skip_baseline else sorted({m[4] for m in chosen}):
        start = time.monotonic()
        status = run_area(area, os.path.join(logs, f"baseline-{area}.log"))
        print("baseline  %-9s %s (%.0f s)" % (area, "passes" if status == 0 else "FAILS", time.monotonic() - start),
              flush=True)
        if status != 0:
            print(f"mutants: area {area} fails unmutated (build/mutants/logs/baseline-{area}.log)")
            return 2
    results = []
    for name, path, old, new, area, what in chosen:
        target = os.path.join(TREE, path)
        original = open(target, encoding="utf-8").read()
        start = time.monotonic()
        try:
            with open(target, "w", encoding="utf-8") as f:
                f.write(original.replace(old, new, 1))
            if not build(os.path.join(logs, f"{name}-build.log")):
                verdict = "ERROR (does not build)"
            else:
                status = run_area(area, os.path.join(logs, f"{name}.log"))
                verdict = ("caught" if status != 0 else
                           "survived (equivalent: %s)" % EQUIVALENT[name] if name in EQUIVALENT else "SURVIVED")
        finally:
            with open(target, "w", encoding="utf-8") as f:  # a new mtime: make rebuilds it
                f.write(original)
        line = "%-28s %-9s %-22s %5.0f s  %s" % (name, area, verdict, time.monotonic() - start, what)
        print(line, flush=True)
        results.append((name, verdict, line))
    build(os.path.join(logs, "restored-build.log"))
    caught = sum(v == "caught" for _, v, _ in results)
    equivalent = sum(v.startswith("survived (equivalent") for _, v, _ in results)
    bad = [n for n, v, _ in results if v == "SURVIVED" or v.startswith("ERROR")]
    summary = "mutants: %d run, %d caught, %d equivalent, %d survived or broken%s" % (
        len(results), caught, equivalent, len(bad), (": " + ", ".join(bad)) if bad else "")
    print(summary)
    with open(os.path.join(WORK, "report.txt"), "w") as f:
        f.write("\n".join(line for _, _, line in results) + "\n" + summary + "\n")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
