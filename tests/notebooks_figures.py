#!/usr/bin/python3
"""The executed notebooks show their figures: every notebook that draws
(calls st.show_figure) has as many inline PNG outputs in its executed copy,
and its HTML embeds them (data:image/png). A figure that exists only as a
file beside the notebook is not shown to a class.

  notebooks_figures.py BUILD_NOTEBOOKS_DIR NOTEBOOK.ipynb ...
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_util import Checks  # noqa: E402


def main(out_dir, paths):
    check = Checks()
    for path in paths:
        drawn = open(path, encoding="utf-8").read().count("st.show_figure(")
        executed = os.path.join(out_dir, os.path.basename(path))
        html = executed[:-len(".ipynb")] + ".html"
        if not os.path.exists(executed):
            continue  # skipped (no models): make notebooks said so
        nb = json.load(open(executed, encoding="utf-8"))
        pngs = sum(1 for c in nb["cells"] if c.get("cell_type") == "code"
                   for o in c.get("outputs", []) if "image/png" in o.get("data", {}))
        embedded = open(html, encoding="utf-8").read().count("data:image/png;base64,")
        check(pngs == drawn and embedded >= drawn, "%s: %d figures drawn, %d inline, %d in its HTML" % (
            os.path.basename(path), drawn, pngs, embedded))
    return check.summary("notebook figures")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2:]))
