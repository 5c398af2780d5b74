#!/usr/bin/python3
"""The committed notebooks are clean and say what they teach.

  notebooks_clean.py NOTEBOOK.ipynb ...

Each notebook must be committed without outputs (make notebooks writes the
executed copies under build/notebooks/), open with a markdown cell naming its
seed concept and what a student will learn, and assert at least one fact;
every cell that draws a figure (st.show_figure) must label both axes
(xlabel and ylabel: a figure on a projector says what it measures).
Prints one line per problem; exits 1 if there is any.
"""
import json
import sys


def problems(path):
    try:
        with open(path, encoding="utf-8") as f:
            nb = json.load(f)
    except (OSError, ValueError) as e:
        return ["cannot read: %s" % e]
    cells = nb.get("cells", [])
    found = []
    if not cells or cells[0].get("cell_type") != "markdown":
        found.append("does not open with a markdown cell")
    else:
        head = "".join(cells[0]["source"])
        for needed in ("**Seed concept:**", "**You will learn**"):
            if needed not in head:
                found.append("first cell does not say %s" % needed)
    code = [c for c in cells if c.get("cell_type") == "code"]
    for k, c in enumerate(code):
        if c.get("outputs") or c.get("execution_count") is not None:
            found.append("code cell %d has outputs: commit notebooks cleared" % (k + 1))
    for k, c in enumerate(code):
        src = "".join(c["source"])
        if "show_figure(" in src and not ("xlabel" in src and "ylabel" in src):
            found.append("code cell %d draws a figure without labelling both axes" % (k + 1))
    if not any("assert " in "".join(c["source"]) for c in code):
        found.append("asserts nothing it teaches")
    return found


def main(paths):
    bad = 0
    for path in paths:
        for p in problems(path):
            print("%s: %s" % (path, p))
            bad += 1
    return 1 if bad or not paths else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
