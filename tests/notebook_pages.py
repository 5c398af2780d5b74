#!/usr/bin/python3
"""The notebooks as pages a student reads without running them: each
notebook, executed, rendered to Markdown with its figures as PNG files
(docs/notebooks/NN-name.md and docs/notebooks/img/NN-*.png), and a check
that the committed pages are what the current code produces.

  notebook_pages.py write EXECUTED_DIR NOTEBOOK.ipynb ...   (make notebook-pages)
  notebook_pages.py check EXECUTED_DIR NOTEBOOK.ipynb ...   (make notebooks)
  notebook_pages.py --self-test                             (make notebooks)

EXECUTED_DIR holds the executed copies `make notebooks` writes
(build/notebooks/). The rendering is nbconvert's Markdown exporter on a
copy of each executed notebook with its volatile parts left out: no cell
metadata (execution times), no stderr streams (a font cache being built,
a warning), the checkout's path replaced, and each figure written as a
file named for the name the cell gives st.show_figure, its bytes those of
the executed notebook (matplotlib's Agg PNGs carry no date, and
stepwise_trace saves them without the Software line: two runs of the same
code give the same bytes). Links in the notebooks' prose are rewritten
from notebooks/ to docs/notebooks/ and must lead to a file.

Cells tagged `timing` (cell metadata "tags": ["timing"]) measure this
machine, so their output differs from run to run. Their output on the page
is that of one reference run: `write` records it in
docs/runs/DATE-notebook-pages.txt (the date, the machine by nproc and
lscpu, the command, every timed cell's output and its figures' sha256), and
the page names that record above the cell. `check` renders the freshly
executed notebooks again and compares each page with the committed one
byte for byte, but for the output of timed cells, and then:
  - every untimed figure's PNG must be the committed file's bytes;
  - every timed output on a committed page must be in the record it names,
    and every timed figure's sha256 the record's (no figure from elsewhere);
  - every page names the same record (one machine's figures, one record);
  - no page or figure without a notebook, and docs/index.md and
    notebooks/README.md link every page.
A notebook without an executed copy (skipped for want of models) is
skipped, saying so. Prints ok/FAIL lines; exits 1 on a failure.
"""
import base64
import datetime
import glob
import hashlib
import os
import re
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_util import Checks, run  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NOTEBOOKS_DIR = os.path.join(ROOT, "notebooks")
PAGES_DIR = os.path.join(ROOT, "docs", "notebooks")
RUNS_DIR = os.path.join(ROOT, "docs", "runs")
TAG = "timing"
TIMED_BEGIN = "<!-- timed output: the reference run's, not compared -->"
TIMED_END = "<!-- /timed output -->"
TIMED = re.compile(re.escape(TIMED_BEGIN) + r"\n(.*?)" + re.escape(TIMED_END), re.S)
MASK = TIMED_BEGIN + "\n(masked)\n" + TIMED_END
RECORD_LINK = re.compile(r"\]\(\.\./runs/([^)/]+-notebook-pages\.txt)\)")
LINK = re.compile(r"(\]\()([^)\s]+)(\))")
FIGURE_NAME = re.compile(r"show_figure\(\s*\"([^\"]+\.png)\"")


def rewrite_links(text, problems):
    """Relative links of a notebook's prose, from notebooks/ to docs/notebooks/."""
    def one(m):
        target = m.group(2)
        if "://" in target or target.startswith(("#", "mailto:", "/")):
            return m.group(0)
        path, hashmark, fragment = target.partition("#")
        resolved = os.path.normpath(os.path.join(NOTEBOOKS_DIR, path))
        if not os.path.exists(resolved):
            problems.append("link to a missing file: " + target)
        return m.group(1) + os.path.relpath(resolved, PAGES_DIR) + hashmark + fragment + m.group(3)
    return LINK.sub(one, text)


def markdown_output(text):
    import nbformat
    return nbformat.v4.new_output("display_data", data={"text/markdown": text})


def render(executed, record):
    """The page of one executed notebook: (markdown, {figure file: bytes},
    set of timed figure files, problems). record: the file name in
    docs/runs/ the timed cells' note names."""
    import nbformat
    from nbconvert import MarkdownExporter
    name = os.path.basename(executed)[:-len(".ipynb")]
    number = name.split("-", 1)[0]
    nb = nbformat.read(executed, as_version=4)
    problems, figures, timed_figures = [], {}, set()
    out = nbformat.v4.new_notebook()
    out.metadata = {"language_info": {"name": "python"}}
    out.cells.append(nbformat.v4.new_markdown_cell(
        "<!-- Rendered from notebooks/%s.ipynb by `make notebook-pages`: do not edit. `make notebooks`\n"
        "fails when this page is not what the notebook gives (tests/notebook_pages.py). -->\n"
        "*This page is [notebooks/%s.ipynb](../../notebooks/%s.ipynb) run, with its outputs and figures, "
        "for reading without running it.*" % (name, name, name)))
    for k, cell in enumerate(nb.cells):
        if cell.cell_type == "markdown":
            out.cells.append(nbformat.v4.new_markdown_cell(rewrite_links(cell.source, problems)))
            continue
        if cell.cell_type != "code":
            continue
        timed = TAG in cell.metadata.get("tags", [])
        # a figure's file is the name the cell gives st.show_figure, when
        # each of its figures has one; else the cell's place
        names = FIGURE_NAME.findall(cell.source)
        if len(names) != sum("image/png" in o.get("data", {}) for o in cell.get("outputs", [])):
            names = []
        outputs, pngs = [], 0
        for o in cell.get("outputs", []):
            if o.output_type == "stream":
                if o.name == "stdout":
                    outputs.append(nbformat.v4.new_output("stream", name="stdout",
                                                          text=o.text.replace(ROOT + os.sep, "")))
            elif o.output_type in ("display_data", "execute_result"):
                if "image/png" in o.data:
                    fig = names[pngs] if names else "%s-cell%d-%d.png" % (name, k, pngs)
                    if not fig.startswith(number + "-"):
                        fig = "%s-%s" % (number, fig)
                    pngs += 1
                    if fig in figures:
                        problems.append("two figures named %s" % fig)
                    figures[fig] = base64.b64decode(o.data["image/png"])
                    if timed:
                        timed_figures.add(fig)
                    outputs.append(markdown_output("![%s](img/%s)" % (fig[:-len(".png")], fig)))
                elif "text/plain" in o.data:
                    outputs.append(nbformat.v4.new_output(
                        "execute_result" if o.output_type == "execute_result" else "display_data",
                        data={"text/plain": o.data["text/plain"].replace(ROOT + os.sep, "")}))
            elif o.output_type == "error":
                problems.append("cell %d failed: %s" % (k, o.get("ename", "?")))
        if timed:
            out.cells.append(nbformat.v4.new_markdown_cell(
                "*Timed cell: it measures the machine it runs on. Its output below is the reference run's, "
                "recorded in [docs/runs/%s](../runs/%s); a run on another machine, or a busy one, prints "
                "its own figures.*" % (record, record)))
            outputs = [markdown_output(TIMED_BEGIN)] + outputs + [markdown_output(TIMED_END)]
        code = nbformat.v4.new_code_cell(cell.source)
        code.outputs = outputs
        out.cells.append(code)
    body, _ = MarkdownExporter().from_notebook_node(out)
    lines = [line.rstrip() for line in body.split("\n")]
    text = re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip("\n") + "\n"
    return text, figures, timed_figures, problems


def mask(text):
    return TIMED.sub(MASK, text)


def first_difference(committed, fresh):
    a, b = committed.split("\n"), fresh.split("\n")
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return "line %d: committed %r, now %r" % (i + 1, x[:100], y[:100])
    return "committed has %d lines, now %d" % (len(a), len(b))


def sha256(data):
    return hashlib.sha256(data).hexdigest()


def record_section(name, region):
    """A timed output as the record holds it, whole lines from header to end."""
    return "== %s: timed output ==\n%s== end ==\n" % (name, region)


def in_record(section, record_text):
    return "\n" + section in "\n" + record_text


def executed_copy(executed_dir, notebook):
    """The executed copy of notebook, or None when there is none as new as it."""
    path = os.path.join(executed_dir, os.path.basename(notebook))
    if not os.path.exists(path) or os.path.getmtime(path) < os.path.getmtime(notebook):
        return None
    return path


def executed_times(path):
    """When the cells of an executed notebook ran (ISO 8601, UTC)."""
    import nbformat
    nb = nbformat.read(path, as_version=4)
    return [t for c in nb.cells for k, t in c.metadata.get("execution", {}).items()
            if k in ("iopub.execute_input", "shell.execute_reply")]


def loadavg(path):
    """The three load averages of a copy of /proc/loadavg; ? without one."""
    return " ".join(open(path).read().split()[:3]) if os.path.exists(path) else "?"


def machine():
    """This machine, as the records of docs/runs/ name it."""
    lscpu = run(["lscpu"], capture_output=True, text=True).stdout
    fields = dict(line.split(":", 1) for line in lscpu.splitlines() if ":" in line)
    cpu = fields.get("Model name", "?").strip()
    hyper = fields.get("Hypervisor vendor", "").strip()
    cores = run(["nproc"], capture_output=True, text=True).stdout.strip()
    return "%s cores (nproc), %s (lscpu)%s" % (cores, cpu, ", under %s" % hyper if hyper else "")


def write(executed_dir, notebooks):
    """Render every notebook into docs/notebooks/, and the record of the run."""
    missing = [nb for nb in notebooks if executed_copy(executed_dir, nb) is None]
    if missing or not notebooks:
        print("notebook-pages: no executed copy as new as %s in %s (make notebooks runs them; "
              "a notebook skipped for want of models has none)" % (", ".join(missing) or "any notebook", executed_dir))
        return 1
    now = datetime.datetime.now(datetime.timezone.utc)
    record = "%s-notebook-pages.txt" % now.strftime("%Y-%m-%d")
    pages, sections, problems, times = {}, [], [], []
    for nb in notebooks:
        name = os.path.basename(nb)[:-len(".ipynb")]
        ran = [t[:19].replace("T", " ") for t in executed_times(executed_copy(executed_dir, nb))]
        times.append("  %s: %s to %s\n" % (name, min(ran, default="?"), max(ran, default="?")))
        text, figures, timed_figures, found = render(executed_copy(executed_dir, nb), record)
        problems += ["%s: %s" % (name, p) for p in found]
        pages[name] = (text, figures)
        for region in TIMED.findall(text):
            sections.append(record_section(name, region))
        for fig in sorted(timed_figures):
            sections.append("figure img/%s sha256 %s\n" % (fig, sha256(figures[fig])))
    if problems:
        print("\n".join(problems))
        return 1
    os.makedirs(os.path.join(PAGES_DIR, "img"), exist_ok=True)
    wanted = set()
    for name, (text, figures) in pages.items():
        wanted.add(os.path.join(PAGES_DIR, name + ".md"))
        with open(os.path.join(PAGES_DIR, name + ".md"), "w", encoding="utf-8") as f:
            f.write(text)
        for fig, data in figures.items():
            wanted.add(os.path.join(PAGES_DIR, "img", fig))
            with open(os.path.join(PAGES_DIR, "img", fig), "wb") as f:
                f.write(data)
    for old in glob.glob(os.path.join(PAGES_DIR, "*.md")) + glob.glob(os.path.join(PAGES_DIR, "img", "*")):
        if old not in wanted:
            os.remove(old)
    head = run(["git", "-C", ROOT, "describe", "--always", "--dirty"], capture_output=True, text=True).stdout.strip()
    with open(os.path.join(RUNS_DIR, record), "w", encoding="utf-8") as f:
        f.write("The reference run of the notebooks' timed cells, as docs/notebooks/ shows them.\n\n"
                "rendered: %s\nexecuted (UTC, the cells' own times):\n%smachine: %s\n"
                "load average (1, 5, 15 minutes) before the last make notebooks run: %s; when rendered: %s\n"
                "commit: %s\n"
                "command: make notebook-pages: each notebook executed headless by nbconvert as make notebooks "
                "does (stepwise on one thread), then tests/notebook_pages.py write build/notebooks "
                "notebooks/*.ipynb\n\n%s"
                % (now.strftime("%Y-%m-%d %H:%M UTC"), "".join(times), machine(),
                   loadavg(os.path.join(executed_dir, "loadavg-before")), loadavg("/proc/loadavg"),
                   head or "?", "\n".join(sections)))
    print("notebook-pages: %d pages and %d figures in %s; timed outputs recorded in docs/runs/%s"
          % (len(pages), sum(len(f) for _, f in pages.values()), os.path.relpath(PAGES_DIR, ROOT), record))
    return 0


def compare(check, name, committed, fresh, figures, timed_figures, pages_dir, record_text):
    """The checks of one page against its fresh rendering."""
    same = mask(committed) == mask(fresh)
    check(same, "%s.md: the page is what the notebook gives now%s" % (
        name, "" if same else " (%s; make notebook-pages)" % first_difference(mask(committed), mask(fresh))))
    for region in TIMED.findall(committed):
        check(in_record(record_section(name, region), record_text),
              "%s.md: a timed output is the record's (%s)" % (name, region.strip().split("\n")[0][:60]))
    for fig, data in sorted(figures.items()):
        path = os.path.join(pages_dir, "img", fig)
        have = open(path, "rb").read() if os.path.exists(path) else None
        if fig in timed_figures:
            check(have is not None and in_record("figure img/%s sha256 %s\n" % (fig, sha256(have)), record_text),
                  "img/%s: a timed figure, the record's" % fig)
        else:
            check(have == data, "img/%s: the figure the notebook draws now" % fig)


def check_all(executed_dir, notebooks):
    check = Checks()
    names = [os.path.basename(nb)[:-len(".ipynb")] for nb in notebooks]
    pages = {os.path.basename(p)[:-len(".md")] for p in glob.glob(os.path.join(PAGES_DIR, "*.md"))}
    check(pages <= set(names), "every page has its notebook (%s)" % (", ".join(sorted(pages - set(names))) or "none without"))
    committed = {n: open(os.path.join(PAGES_DIR, n + ".md"), encoding="utf-8").read() for n in names if n in pages}
    records = {r for text in committed.values() for r in RECORD_LINK.findall(text)}
    check(len(records) <= 1, "the timed outputs come from one record (%s)" % (", ".join(sorted(records)) or "none"))
    record = sorted(records)[0] if records else "none-notebook-pages.txt"
    record_path = os.path.join(RUNS_DIR, record)
    record_text = open(record_path, encoding="utf-8").read() if os.path.exists(record_path) else ""
    if records:
        check(bool(record_text), "docs/runs/%s exists" % record)
    referenced = set()
    for text in committed.values():
        referenced |= set(re.findall(r"\]\(img/([^)]+)\)", text))
    on_disk = {os.path.basename(p) for p in glob.glob(os.path.join(PAGES_DIR, "img", "*"))}
    check(on_disk <= referenced, "every figure in docs/notebooks/img/ is on a page (%s)"
          % (", ".join(sorted(on_disk - referenced)) or "none left over"))
    for index in ("docs/index.md", "notebooks/README.md"):
        text = open(os.path.join(ROOT, index), encoding="utf-8").read()
        here = os.path.relpath(PAGES_DIR, os.path.dirname(os.path.join(ROOT, index)))
        unlinked = [n for n in names if "(%s/%s.md)" % (here, n) not in text]
        check(not unlinked, "%s links every page (%s)" % (index, ", ".join(unlinked) or "all linked"))
    for nb, name in zip(notebooks, names):
        executed = executed_copy(executed_dir, nb)
        if executed is None:
            check.skip("%s: no executed copy as new as the notebook (skipped for want of models?)" % name)
            continue
        if name not in committed:
            check(False, "%s: no page docs/notebooks/%s.md (make notebook-pages)" % (name, name))
            continue
        fresh, figures, timed_figures, problems = render(executed, record)
        for p in problems:
            check(False, "%s: %s" % (name, p))
        compare(check, name, committed[name], fresh, figures, timed_figures, PAGES_DIR, record_text)
    return check.summary("notebook pages")


def self_test():
    """The check on a page it must fail: a number changed outside the timed
    outputs (between two of them too), a timed output not in the record
    (one the record holds longer too), an untimed figure's byte changed, a
    timed figure not the record's; and one it must pass: timed outputs from
    another run, which the record holds."""
    def page(first, second):  # a rendered page with two timed outputs
        return ("# t\n\n```python\nprint(2 + 2)\n```\n\n    4\n\n```python\nt = time()\n```\n\n" +
                TIMED_BEGIN + "\n    %s ms\n![t](img/t.png)\n" % first + TIMED_END +
                "\n\n```python\nprint(3)\n```\n\n    3\n\n```python\nu = time()\n```\n\n" +
                TIMED_BEGIN + "\n    %s ms\n" % second + TIMED_END + "\n")
    figures = {"u.png": b"\x89PNG untimed", "t.png": b"\x89PNG timed"}

    def record(first, second):  # as write() records a run, written out by hand
        return ("== p: timed output ==\n    %s ms\n![t](img/t.png)\n== end ==\n\n"
                "== p: timed output ==\n    %s ms\n== end ==\n\nfigure img/t.png sha256 %s\n"
                % (first, second, sha256(figures["t.png"])))
    text, recorded = page("12.5", "7.5"), record("12.5", "7.5")
    cases = [("the page as rendered", text, figures, recorded, 0),
             ("a number changed outside a timed output", text.replace("    4\n", "    5\n"), figures, recorded, 1),
             ("a number changed between two timed outputs", text.replace("    3\n", "    9\n"), figures, recorded, 1),
             ("timed outputs from another run, recorded", page("13.5", "6.5"), figures, record("13.5", "6.5"), 0),
             ("a timed output not in the record", page("13.5", "6.5"), figures, recorded, 1),
             ("a timed output the record holds longer", text, figures, record("12.5", "7.5 ms\n    8.5"), 1),
             ("an untimed figure's byte changed", text, dict(figures, **{"u.png": b"\x89PNG untimeD"}), recorded, 1),
             ("a timed figure not the record's", text, dict(figures, **{"t.png": b"\x89PNG timeD"}), recorded, 1)]
    check = Checks()
    with tempfile.TemporaryDirectory() as tmp:
        os.makedirs(os.path.join(tmp, "img"))
        for what, committed, on_disk, record_text, fails in cases:
            for fig, data in on_disk.items():
                with open(os.path.join(tmp, "img", fig), "wb") as f:
                    f.write(data)
            inner = Checks()
            out = sys.stdout
            sys.stdout = open(os.devnull, "w")
            try:
                compare(inner, "p", committed, text, figures, {"t.png"}, tmp, record_text)
            finally:
                sys.stdout.close()
                sys.stdout = out
            check((inner.failures > 0) == bool(fails), "self-test: %s %s" % (what, "fails" if fails else "passes"))
    problems = []
    link = rewrite_links("[a](../docs/roofline.md#the-roof) [b](stepwise_trace.py) [c](https://x/y)", problems)
    check(link == "[a](../roofline.md#the-roof) [b](../../notebooks/stepwise_trace.py) [c](https://x/y)" and not problems,
          "self-test: links rewritten from notebooks/ to docs/notebooks/ (%s)" % link)
    rewrite_links("[a](../docs/no-such-page.md)", problems)
    check(len(problems) == 1, "self-test: a link to a missing file is a problem")
    return check.summary("notebook pages self-test")


def main(argv):
    if argv[:1] == ["--self-test"]:
        return self_test()
    if len(argv) < 2 or argv[0] not in ("write", "check"):
        print(__doc__.split("\n\n")[1])
        return 2
    notebooks = sorted(argv[2:])
    return write(argv[1], notebooks) if argv[0] == "write" else check_all(argv[1], notebooks)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
