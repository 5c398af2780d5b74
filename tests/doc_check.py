#!/usr/bin/python3
"""doc-check: the commands in the docs still do what the docs say.

  doc_check.py FILE.md ...
  doc_check.py --figures-only FILE.md ...   (links, names and figures; no blocks run)
  doc_check.py --self-test

A fenced block opened with ```sh runnable is run with bash in a scratch
directory that looks like a checkout: build/, data/, docs/, notebooks/,
ref/, tests/ and trace/ link to the project's, and ../shared/models links to $STEPWISE_MODELS (as for the
tests), so the commands read as a reader would type them and leave no files
behind. If the next fenced block is opened with ```text expected, the
command's standard output must equal it (line ends trimmed); otherwise it
must just succeed. A ```sh block not marked runnable is a failure: every
command in docs/ is run (a usage form goes in a text block). Blocks that use
../shared/models are skipped, saying so, when stories260K is absent.

Figures in prose are checked the same way. A passage between
<!-- figures: COMMAND --> and <!-- /figures --> marks its figures in bold
(and a table in it is all figures); COMMAND is run as a runnable block is,
and every number in every bold span and table row of the passage
(thousands separators and a trailing unit aside) must be a number COMMAND
prints. A passage with no bold number fails, and so does a
figure the command does not print: a wrong number planted in marked prose
fails doc-check (`doc_check.py --self-test` proves it on a planted one).
Figures from a timed run are checked against the run's record, committed
beside the page (docs/runs/), which is the run's own output.

Every relative link must lead to a file, and every function a page's
"> **Code:**" line names must be defined in the file it links.

A page must not print its prose twice: three consecutive prose lines (not
in a fenced block, a table or an HTML comment) that appear again further
down the page fail, as a paragraph pasted twice does. And a page must not
make a claim about the code that the code contradicts, where a pattern can
tell: "no intrinsics", "without intrinsics", "intrinsics are outside ...
plain C" fail while ref/ or trace/ includes an intrinsics header or calls
an _mm or __builtin_ia32 function, and "no assembly" while they hold an
asm statement, unless the sentence scopes the claim to the reference path
(--kernels plain, the plain loops or kernels).

Prints one line per block and "doc-check: N passed, N failed, N skipped";
exits 1 on any failure.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile
from check_util import LONG_TIMEOUT

FENCE = re.compile(r"^```(\S*)(.*)$")
FIGURES = re.compile(r"<!-- figures: (.*?) -->\n(.*?)<!-- /figures -->", re.S)
BOLD = re.compile(r"\*\*([^*]+)\*\*")
NUMBER = re.compile(r"(?<![\w.])-?\d[\d,]*(?:\.\d+)?")
LINK = re.compile(r"\]\(([^)#\s]+)(#[^)]*)?\)")
CODE_ITEM = re.compile(r"`([a-z_][a-z0-9_]*)`")


def check_links(path):
    """Problems with the page's relative links and its **Code:** line: every
    linked file must exist, and every function the **Code:** line names must
    be defined in the file linked after it (in the same clause)."""
    found = []
    here = os.path.dirname(path)
    text = open(path, encoding="utf-8").read()
    for m in LINK.finditer(text):
        target = m.group(1)
        if "://" in target or target.startswith("mailto:"):
            continue
        if not os.path.exists(os.path.join(here, target)):
            found.append("link to a missing file: " + target)
    for line in text.split("\n"):
        if not line.startswith("> **Code:**"):
            continue
        code = line.split("**Notebook", 1)[0]
        for clause in code.split(";"):
            files = [os.path.join(here, t) for t, _ in LINK.findall(clause)]
            names = CODE_ITEM.findall(clause)
            for name in names:
                pattern = re.compile(r"\b%s\(" % re.escape(name))
                if not any(os.path.exists(f) and pattern.search(open(f, encoding="utf-8").read())
                           for f in files):
                    found.append("**Code:** names %s, not found in %s" % (name, ", ".join(files)))
    return found


SOURCE_DIRS = ("ref", "trace", "tests", "notebooks", "data")
_source_text = None


def source_text():
    """Every source file of the project, as one string (read once)."""
    global _source_text
    if _source_text is None:
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        parts = []
        for d in SOURCE_DIRS:
            for dirpath, _, files in os.walk(os.path.join(root, d)):
                if "crashes" in dirpath:
                    continue
                for f in files:
                    if f.endswith((".c", ".h", ".py", ".sh", ".ipynb", ".json")):
                        parts.append(open(os.path.join(dirpath, f), encoding="utf-8",
                                          errors="replace").read())
        parts.append(open(os.path.join(root, "Makefile"), encoding="utf-8").read())
        _source_text = "\n".join(parts)
    return _source_text


FUNC_CALL = re.compile(r"`([a-z_][a-z0-9_]*)\([^`]*\)`")
NAMED_IN = re.compile(r"`([a-z_][a-z0-9_]*)`(?: \([^)]*\))? in \[[^\]]*\]\(([^)#\s]+)\)")
SNAKE = re.compile(r"(?<![.\w])`([a-z][a-z0-9]*_[a-z0-9_]*)`")


def prose(text):
    """The page without its fenced blocks (commands and outputs)."""
    return re.sub(r"```.*?```", "", text, flags=re.S)


def check_names(path):
    """Every function a page names must exist: `name()` must be defined in
    the sources; `name` in [file](link) must be defined in that file; and
    any other code-formatted snake_case name must occur somewhere in the
    sources (a function, a field, a hook), so that a renamed or removed
    function cannot linger in the docs."""
    found = []
    here = os.path.dirname(path)
    text = prose(open(path, encoding="utf-8").read())
    sources = source_text()
    for name in sorted(set(FUNC_CALL.findall(text))):
        if not re.search(r"\b%s\(" % re.escape(name), sources):
            found.append("names %s(), which no source file defines" % name)
    for name, target in NAMED_IN.findall(text):
        f = os.path.join(here, target)
        if not target.endswith((".c", ".h", ".py")) or not os.path.exists(f):
            continue
        # a function is defined as name( ; a Criterion test as Test(suite, name
        definition = r"\b%s\(|^Test\(\w+, %s\b" % (re.escape(name), re.escape(name))
        if not re.search(definition, open(f, encoding="utf-8").read(), re.M):
            found.append("names %s in %s, which does not define it" % (name, target))
    for name in sorted(set(SNAKE.findall(text))):
        if not re.search(r"\b%s\b" % re.escape(name), sources):
            found.append("names `%s`, which appears nowhere in the sources" % name)
    return found


PROSE_WINDOW = 3  # lines: a repeat of fewer is a phrase, not a paragraph
PROSE_MIN_CHARS = 60  # three short lines ("yes", "-") repeat without being prose


def prose_lines(text):
    """(line number, text) of every prose line of a page, whitespace
    collapsed: not blank, not in a fenced block, not a table row, not in an
    HTML comment (the figures markers)."""
    fenced = comment = False
    for number, line in enumerate(text.split("\n"), 1):
        stripped = line.strip()
        if stripped.startswith("```"):
            fenced = not fenced
            continue
        if fenced:
            continue
        if comment or stripped.startswith("<!--"):
            comment = "-->" not in stripped
            if comment:
                continue
            stripped = stripped.split("-->", 1)[1].strip()  # prose may follow a marker
        if not stripped or stripped.startswith("|"):
            continue
        yield number, " ".join(stripped.split())


def check_repeats(path):
    """Runs of PROSE_WINDOW consecutive prose lines that the page prints
    again further down: a paragraph pasted twice. One problem per run."""
    lines = list(prose_lines(open(path, encoding="utf-8").read()))
    seen, found, last = {}, [], None
    for k in range(len(lines) - PROSE_WINDOW + 1):
        window = lines[k:k + PROSE_WINDOW]
        if window[-1][0] - window[0][0] != PROSE_WINDOW - 1:
            continue  # not consecutive in the page
        key = "\n".join(t for _, t in window)
        if len(key) < PROSE_MIN_CHARS:
            continue
        first = seen.setdefault(key, window[0][0])
        if first != window[0][0] and first + PROSE_WINDOW <= window[0][0]:
            if last is None or window[0][0] != last + 1:
                found.append("lines %d to %d repeat lines %d to %d (prose printed twice): %.60s..."
                             % (window[0][0], window[-1][0], first, first + PROSE_WINDOW - 1, window[0][1]))
            last = window[0][0]
    return found


# Claims about the code, each with what in the code contradicts it.
INTRINSICS_USE = re.compile(r"#include\s*<\w*intrin\.h>|#include\s*<arm_neon\.h>|\b_mm\d*_\w+\s*\(|"
                            r"\b__builtin_ia32_\w+\s*\(")
ASM_USE = re.compile(r"\b(?:__asm__|__asm|asm)\s*(?:volatile|__volatile__)?\s*\(")
CLAIMS = (
    (re.compile(r"\b(?:no|without|never uses?|does not use|do not use)\s+(?:any\s+)?(?:compiler\s+)?"
                r"intrinsics\b|\bintrinsics\s+are\s+outside\b|\boutside\b[^.]{0,40}\bplain C\b", re.I),
     INTRINSICS_USE, "intrinsics"),
    (re.compile(r"\b(?:no|without|never uses?|does not use)\s+(?:any\s+)?(?:inline\s+)?assembly\b", re.I),
     ASM_USE, "an asm statement"),
)
CLAIM_SCOPE = re.compile(r"--kernels plain|reference path|plain (?:loops|kernels)", re.I)


def code_files(root):
    """(path, text) of the program's C sources: ref/ and trace/."""
    for d in ("ref", "trace"):
        for dirpath, _, files in os.walk(os.path.join(root, d)):
            for f in sorted(files):
                if f.endswith((".c", ".h")):
                    p = os.path.join(dirpath, f)
                    yield p, open(p, encoding="utf-8", errors="replace").read()


def check_claims(path, root):
    """Sentences of the page's prose that claim something of the code that
    the sources under root contradict (CLAIMS), unless the sentence scopes
    the claim to the reference path."""
    text = " ".join(t for _, t in prose_lines(open(path, encoding="utf-8").read()))
    found = []
    for sentence in re.split(r"(?<=[.!?:;])\s+", text):
        for claim, use, what in CLAIMS:
            m = claim.search(sentence)
            if not m or CLAIM_SCOPE.search(sentence):
                continue
            where = sorted(os.path.relpath(p, root) for p, code in code_files(root) if use.search(code))
            if where:
                found.append('claims "%s", but %s use%s %s' % (m.group(0), ", ".join(where),
                                                              "" if len(where) > 1 else "s", what))
    return found


def blocks(path):
    """(info, text, line) of every fenced block of a markdown file."""
    lines = open(path, encoding="utf-8").read().split("\n")
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if m and m.group(1):
            start, body = i + 1, []
            i += 1
            while i < len(lines) and not lines[i].startswith("```"):
                body.append(lines[i])
                i += 1
            yield (m.group(1) + m.group(2)).strip(), "\n".join(body), start
        i += 1


def numbers(text):
    """The numbers in text, thousands separators removed: '1,280' -> '1280'."""
    return [n.replace(",", "") for n in NUMBER.findall(text)]


def figure_passages(path):
    """(command, passage, line) of every passage marked with figures."""
    text = open(path, encoding="utf-8").read()
    for m in FIGURES.finditer(text):
        yield m.group(1).strip(), m.group(2), text.count("\n", 0, m.start()) + 1


_figure_runs = {}


def check_figures(command, passage, work, env):
    """Problems with one marked passage: the figures COMMAND does not print.
    The figures are the numbers in bold spans, and every number in the
    passage's table rows (a table of results is all figures)."""
    table = [l for l in passage.split("\n") if l.startswith("|") and not set(l) <= set("|-: ")]
    wanted = [n for span in BOLD.findall(passage) for n in numbers(span)]
    wanted += [n for line in table for n in numbers(line)]
    if not wanted:
        return ["a figures passage with no number in bold"]
    done = _figure_runs.get(command)  # passages that quote one run share it
    if done is None:
        done = _figure_runs[command] = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", command],
                                                      capture_output=True, text=True, env=env, cwd=work,
                                                      timeout=LONG_TIMEOUT)
    if done.returncode != 0:
        return ["its command failed (exit %d): %s" % (done.returncode, done.stderr.strip()[:300])]
    printed = set(numbers(done.stdout))
    return ["the figure %s is not what `%s` prints" % (n, command) for n in wanted
            if n not in printed]


def trim(text):
    return "\n".join(line.rstrip() for line in text.strip("\n").split("\n"))


def make_sandbox(root, models):
    """A scratch checkout: links to build/, data/, docs/, tests/ and ../shared/models."""
    top = tempfile.mkdtemp(prefix="stepwise-doc-check-")
    work = os.path.join(top, "stepwise")
    os.makedirs(os.path.join(top, "shared"))
    os.makedirs(work)
    for name in ("build", "data", "docs", "notebooks", "python", "ref", "tests", "trace"):
        os.symlink(os.path.join(root, name), os.path.join(work, name))
    os.symlink(models, os.path.join(top, "shared", "models"))
    return top, work


def main(paths, figures_only=False):
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ)
    models = os.path.abspath(os.path.join(root, env.get("STEPWISE_MODELS", "../shared/models")))
    env["STEPWISE_MODELS"] = models
    top, work = make_sandbox(root, models)
    try:
        return check_all([os.path.abspath(p) for p in paths], work, env, figures_only)
    finally:
        shutil.rmtree(top)


def check_all(paths, work, env, figures_only):
    passed = failed = skipped = 0
    have_models = os.path.exists(os.path.join(env["STEPWISE_MODELS"], "stories260K.bin"))
    for path in paths:
        # the sources a claim is held to: the checkout's (the self-test plants its own)
        root = os.environ.get("DOC_CHECK_SOURCES", os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        for problem in check_links(path) + check_names(path) + check_repeats(path) + check_claims(path, root):
            failed += 1
            print("FAIL  %s: %s" % (os.path.relpath(path), problem))
        for command, passage, line in figure_passages(path):
            where = "%s:%d (figures)" % (os.path.relpath(path), line)
            if "shared/models" in command and not have_models:
                skipped += 1
                print("skip  %s (no stories260K in $STEPWISE_MODELS: make models)" % where)
                continue
            problems = check_figures(command, passage, work, env)
            for problem in problems:
                print("FAIL  %s: %s" % (where, problem))
            failed += bool(problems)
            passed += not problems
            if not problems:
                print("ok    " + where)
        found = [] if figures_only else list(blocks(path))
        for k, (info, text, line) in enumerate(found):
            if info == "sh":
                failed += 1
                print("FAIL  %s:%d: a sh block not marked runnable (every command in docs/ "
                      "is run; a usage form goes in a text block)" % (os.path.relpath(path), line))
                continue
            if info != "sh runnable":
                continue
            where = "%s:%d" % (os.path.relpath(path), line)
            if "shared/models" in text and not have_models:
                skipped += 1
                print("skip  %s (no stories260K in $STEPWISE_MODELS: make models)" % where)
                continue
            expected = None
            if k + 1 < len(found) and found[k + 1][0] == "text expected":
                expected = found[k + 1][1]
            done = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", text],
                                  capture_output=True, text=True, env=env, cwd=work, timeout=LONG_TIMEOUT)
            ok = done.returncode == 0 and (expected is None or trim(done.stdout) == trim(expected))
            if ok:
                passed += 1
                print("ok    " + where)
            else:
                failed += 1
                print("FAIL  %s (exit %d)" % (where, done.returncode))
                if done.stderr:
                    print("  stderr: " + done.stderr.strip()[:500])
                if expected is not None:
                    print("  expected:\n" + expected + "\n  got:\n" + done.stdout)
    print("doc-check: %d passed, %d failed, %d skipped" % (passed, failed, skipped))
    return 1 if failed or passed + skipped == 0 else 0


def self_test():
    """doc-check itself: a marked passage whose bold figures the command
    prints passes; the same passage with one figure planted wrong fails. A
    paragraph planted twice fails, and a false claim about the code
    planted in prose fails, against a planted source tree."""
    good = ("<!-- figures: echo 'per token: 1280 bytes; int8: 480 bytes, 2.67x smaller' -->\n"
            "A token costs **1,280** bytes, or **480** in int8 (**2.67×** smaller).\n"
            "<!-- /figures -->\n")
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        table = ("<!-- figures: echo 'decode 291.5 tokens/s; prefill 3,662' -->\n"
                 "| measurement | tokens/s |\n|---|---|\n| decode | 291.5 |\n| prefill | 3662 |\n"
                 "<!-- /figures -->\n")
        for name, text, want in (("good", good, 0), ("planted", good.replace("**480**", "**470**"), 1),
                                 ("unmarked", good.replace("**", ""), 1), ("table", table, 0),
                                 ("planted in a table", table.replace("291.5 |", "295.1 |"), 1)):
            page = os.path.join(tmp, name + ".md")
            with open(page, "w", encoding="utf-8") as f:
                f.write(text)
            got = subprocess.run([sys.executable, os.path.abspath(__file__), page], capture_output=True,
                                 text=True, timeout=LONG_TIMEOUT)
            results.append(got.returncode == want)
            print("%s  %s passage: doc-check exits %d (want %d)"
                  % ("ok  " if got.returncode == want else "FAIL", name, got.returncode, want))
        results += self_test_prose(tmp)
    print("doc-check self-test: %s" % ("PASS" if all(results) else "FAILED"))
    return 0 if all(results) else 1


def self_test_prose(tmp):
    """The repeat and claim checks: each planted fault must fail, and the
    near misses (a repeated command or table, a claim scoped to the
    reference path, a claim the code does not contradict) must pass."""
    paragraph = ("The decode reads every weight once a token, so it can go no\n"
                 "faster than the memory delivers them: the ceiling is its own\n"
                 "bytes re-read by the same threads, in the same process, and\n"
                 "no decode can pass it: the fraction is at most 1.\n")
    twice_in_figures = ("# P\n\n" + paragraph + "\n<!-- figures: echo 1 -->\nAs measured, **1** run, and\n"
                        + paragraph.split("\n", 1)[1] + "<!-- /figures -->\n")
    three = "".join(paragraph.splitlines(True)[:3])
    command = "```text\nbuild/stepwise generate --model m.bin --steps 8 --seed 42\na\nb\n```\n\n"
    table = ("| a | b |\n|---|---|\n| the same row of a table, long enough to count |\n"
             "| and another row of it, just as long as that |\n| and a third row, which makes three |\n\n")
    pages = {
        "once": "# P\n\n" + paragraph + "\nAnother paragraph.\n",
        "twice": "# P\n\n" + paragraph + "\nAnother paragraph.\n\n" + paragraph,
        "twice, the second in a figures passage": twice_in_figures,
        "a command and a table twice": "# P\n\n" + (command + table) * 2,
        "twice, after a fenced block": "# P\n\n" + command + paragraph + "\nAnother paragraph.\n\n" + paragraph,
        # three lines, the second copy's first after the marker: nothing else repeats
        "twice, the second after a marker on its line": "# P\n\n" + three + "\nAnother paragraph.\n\n"
                                                          "<!-- figures: echo 1 --> " + three + "<!-- /figures -->\n",
        "claim": "# P\n\nstepwise stays plain C: no intrinsics, and every logit is run.c's.\n",
        "claim, outside plain C": "# P\n\nA dot-product instruction would help, but intrinsics are outside\n"
                                  "stepwise's plain C.\n",
        "claim, scoped": "# P\n\nThe reference path (`--kernels plain`) uses no intrinsics.\n",
        "claim, asm": "# P\n\nIt is written without assembly.\n",
    }
    trees = {"with intrinsics": "#include <immintrin.h>\nvoid f(void) { _mm_pause(); }\n",
             "with asm": "void f(void) { __asm__ volatile(\"nop\"); }\n",
             "plain": "/* no intrinsics here */\nvoid f(void) { }\n"}
    for tree, code in trees.items():
        os.makedirs(os.path.join(tmp, tree, "ref"))
        with open(os.path.join(tmp, tree, "ref", "k.c"), "w", encoding="utf-8") as f:
            f.write(code)
    cases = (("once", None, False), ("twice", None, True),
             ("twice, the second in a figures passage", None, True), ("a command and a table twice", None, False),
             ("twice, after a fenced block", None, True),
             ("twice, the second after a marker on its line", None, True),
             ("claim", "with intrinsics", True), ("claim", "plain", False),
             ("claim, outside plain C", "with intrinsics", True), ("claim, scoped", "with intrinsics", False),
             ("claim, asm", "with asm", True), ("claim, asm", "with intrinsics", False))
    results = []
    for name, tree, want in cases:
        page = os.path.join(tmp, name + ".md")
        with open(page, "w", encoding="utf-8") as f:
            f.write(pages[name])
        found = check_repeats(page) if tree is None else check_claims(page, os.path.join(tmp, tree))
        results.append(bool(found) == want)
        print("%s  %s%s: %s (want %s)" % ("ok  " if results[-1] else "FAIL", name,
                                          "" if tree is None else ", sources " + tree,
                                          "; ".join(found) or "no problem", "a problem" if want else "none"))
    # and the whole tool, on a page with a paragraph printed twice and on
    # one with a false claim (against the planted sources, then the plain
    # ones); a page with nothing to check exits 1 too, so count the failures
    for name, tree, want in (("twice", "plain", 1), ("claim", "with intrinsics", 1), ("claim", "plain", 0)):
        env = dict(os.environ, DOC_CHECK_SOURCES=os.path.join(tmp, tree))
        got = subprocess.run([sys.executable, os.path.abspath(__file__), os.path.join(tmp, name + ".md")],
                             capture_output=True, text=True, env=env, timeout=LONG_TIMEOUT)
        failed = got.stdout.count("\nFAIL ") + got.stdout.startswith("FAIL ")
        results.append(failed == want)
        print("%s  doc-check on the page %s, sources %s: %d failed (want %d)"
              % ("ok  " if failed == want else "FAIL", name, tree, failed, want))
    return results


if __name__ == "__main__":
    if sys.argv[1:] == ["--self-test"]:
        sys.exit(self_test())
    if sys.argv[1:2] == ["--figures-only"]:  # pages whose commands set a machine up (README.md)
        sys.exit(main(sys.argv[2:], figures_only=True))
    sys.exit(main(sys.argv[1:]))
