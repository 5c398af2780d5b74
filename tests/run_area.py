#!/usr/bin/python3
"""One area of the tests, by tests/README.md's table (`make test T=AREA`).

    tests/run_area.py AREA     run every row of AREA, each with its command
    tests/run_area.py AREA --first-failure
                               stop at the first row that fails (make mutants)
    tests/run_area.py list     the areas and their files
    tests/run_area.py --check  every file in tests/ is in the table, and every
                               row names a file that exists (in `make test`);
                               every subprocess run of tests/*.py has a timeout

Rows of the areas "helper" and "benchmark" are not tests: they are listed,
never run by an area. Exit 1 when a command fails or the table is wrong, 2
for an unknown area.
"""
import ast
import os
import signal
import subprocess
import sys
from check_util import LONG_TIMEOUT

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
NOT_RUN = {"helper", "benchmark"}


def rows():
    """[(file, what, area, needs, command)] of the table, in its order."""
    out = []
    for line in open(os.path.join(HERE, "README.md"), encoding="utf-8"):
        line = line.strip()
        cells = [c.strip() for c in line.strip("|").split("|")] if line.startswith("|") else []
        if len(cells) == 5 and cells[0] not in ("file", "---"):
            out.append((cells[0], cells[1], cells[2], cells[3], cells[4].strip("`")))
    return out


def check(table):
    problems = []
    listed = [r[0] for r in table]
    files = sorted(f for f in os.listdir(HERE) if os.path.isfile(os.path.join(HERE, f))
                   and f != "README.md" and not f.endswith(".h") and not f.startswith("."))
    problems += ["tests/%s is in no row of tests/README.md's table" % f for f in files if f not in listed]
    problems += ["tests/README.md names %s, which does not exist" % f for f in listed
                 if not os.path.exists(os.path.join(HERE, f))]
    problems += ["tests/README.md lists %s twice" % f for f in set(listed) if listed.count(f) > 1]
    problems += ["tests/README.md: %s (area %s) has no command" % (f, a) for f, _, a, _, c in table
                 if a not in NOT_RUN and not c]
    problems += untimed_runs()
    for p in problems:
        print("FAIL  " + p)
    print("ok    tests/README.md maps all %d files of tests/ (%d areas)" % (
        len(files), len({r[2] for r in table})) if not problems else "test map: %d problems" % len(problems))
    return 1 if problems else 0


def run_row(command):
    """A row's command, its exit status; a row that has not ended within
    LONG_TIMEOUT fails with a message, its whole process group killed (a
    check's own children too): a hang is a failure, never a wait."""
    p = subprocess.Popen(["bash", "-c", command], cwd=ROOT, start_new_session=True)
    try:
        return p.wait(timeout=LONG_TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.wait(timeout=60)  # killed: it ends at once
        print("FAIL  no exit within %d s (a hang): %s" % (LONG_TIMEOUT, command), flush=True)
        return 1


SUBPROCESS_CALLS = {"run", "call", "check_call", "check_output"}


def untimed_runs():
    """Every subprocess.run/call/check_call/check_output, and every .wait()
    or .communicate(), in tests/*.py that passes no timeout: each is a check
    a hang would hold forever (make test, make mutants)."""
    found = []
    for name in sorted(os.listdir(HERE)):
        if not name.endswith(".py"):
            continue
        tree = ast.parse(open(os.path.join(HERE, name), encoding="utf-8").read())
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                continue
            f = node.func
            timed = any(k.arg == "timeout" for k in node.keywords)
            if f.attr in SUBPROCESS_CALLS and isinstance(f.value, ast.Name) and f.value.id == "subprocess":
                untimed = not timed
            else:  # p.wait(), p.communicate(): their first argument may be the timeout
                untimed = f.attr in ("wait", "communicate") and not timed and not node.args and \
                    not (isinstance(f.value, ast.Name) and f.value.id in ("os", "signal"))
            if untimed:
                found.append("tests/%s:%d: %s without a timeout" % (name, node.lineno, f.attr))
    return found


def main():
    first_failure = sys.argv[2:] == ["--first-failure"]
    if len(sys.argv) != 2 and not first_failure:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    table = rows()
    area = sys.argv[1]
    if area == "--check":
        return check(table)
    areas = {}
    for r in table:
        areas.setdefault(r[2], []).append(r)
    if area == "list":
        for a, rs in areas.items():
            print("%-10s %s%s" % (a, ", ".join(r[0] for r in rs), "  (not run)" if a in NOT_RUN else ""))
        return 0
    if area not in areas or area in NOT_RUN:
        print("stepwise tests: unknown area '%s'; the areas: %s" % (
            area, ", ".join(a for a in areas if a not in NOT_RUN)), file=sys.stderr)
        return 2
    failed = []
    for file, what, _, needs, command in areas[area]:
        print("== %s: %s%s\n   %s" % (file, what, " (needs %s)" % needs if needs else "", command), flush=True)
        if run_row(command) != 0:
            failed.append(file)
            if first_failure:
                break
    print("area %s: %d run, %s" % (area, len(areas[area]), "%d FAILED: %s" % (len(failed), ", ".join(failed))
                                    if failed else "all passed"))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
