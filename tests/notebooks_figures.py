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


def main(out_dir, paths):
    bad = 0
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
        ok = pngs == drawn and embedded >= drawn
        bad += not ok
        print("%s  %s: %d figures drawn, %d inline, %d in its HTML" % (
            "ok  " if ok else "FAIL", os.path.basename(path), drawn, pngs, embedded))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2:]))
