"""`stepwise view` in a real browser (in `make test`): Debian's chromium,
headless, loads each page with #selftest; the page's own self-test steps
through the run with the arrow keys, moves the temperature slider, counts
the heatmap's cells and the KV rows, and writes what it saw, with every
console error, into the page, which --dump-dom returns. Checked here:

1. pages for traces at every level, a two-trace comparison and the (2, 1, 0)
   example load with no console error, and every step is visited;
2. on the example, the slider at T = 0.5, 1 and 2 shows the classroom
   table, computed here from the formula;
3. the attention heatmap is there exactly when the trace has patterns, with
   one cell for every (query, key) of layer 0, head 0;
4. the comparison names the first position whose tokens differ;
5. a page for a trace without some data says which flag would add it;
6. the page follows the step: opened at #step=1 of the 24-step stories260K
   trace (position 4) the KV panel lists positions 0-4 and the heatmap
   queries 0-4; at #step=21 (position 24) both reach 24, and the K and V
   heatmaps (the trace has --trace-kv) hold rows 0-24, the step's row 24
   outlined, its values those of the trace's kv event (layer 0, K/V head 0),
   within the 720 px of a 1280 x 720 window; a trace without --trace-kv
   says which flag adds them;
7. at those steps the numbers agree with the trace, which stepwise's C
   sampler wrote: the table's logits and logits / T, p (a softmax computed
   here), p after the cuts (the sample event's renormalised probs), the
   stages in words ("top-k 40 kept 40 of 512", the event's n_kept), and
   1,000 seeded draws whose counts sum to 1,000 and sit within 5 standard
   deviations of p after the cuts;
8. at every step the step's panels (the K and V heatmaps among them) end
   within the 720 px of a 1280 x 720 window; BOS shows as <s>; the example
   page says its u is fixed at 0.5 and shows no attention or KV notes;
9. the steps listed as worth opening are exactly those whose sample event
   kept more than one survivor;
10. (first, without a browser) every window size the texts about this
    check state, the Makefile's screenshots comment, docs/viewer.md and
    this docstring, is one the browser is opened at;
11. presentation mode (#present, at 1280 x 720 and at 1920 x 1080, on the
    stories260K page at step 23, where 16 tokens survive): every K and V
    cell at least 24 CSS px a side, the page's type at least 20 px and the
    charts' text drawn at least 16 px tall, the KV panel's formula caption
    whole (its scrollWidth within its clientWidth, its right edge within
    the window) and no page wider than the window; a click where the step's
    V cell at dimension 3 is drawn (the element found there) shows the
    trace's value for it, the V key every value of the step's K and V rows
    in its cell, to the two decimals shown (one from 10 up), and V again
    hides them; on the plain page, the P key turns presenting on and off,
    and the address keeps it (#...&present).

Screenshots (1280 x 720) of the stories260K, comparison and example pages go
to build/screenshots/ (make screenshots copies two into docs/img/), and one
of the stories260K page presenting at 1920 x 1080.

    /usr/bin/python3 tests/viewer_check.py build/stepwise
"""
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_util import Checks, run_stepwise  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODELS = os.path.abspath(os.path.join(ROOT, os.environ.get("STEPWISE_MODELS", "../shared/models")))
BIN = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build/stepwise")
SHOTS = os.path.join(ROOT, "build", "screenshots")
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--window-size=1280,720"]
PRESENT_WINDOWS = ((1280, 720), (1920, 1080))  # a projector's two usual sizes, for presentation mode
check = Checks()


def run(*args):
    run_stepwise(BIN, *args)


def selftest(page, shoot, at="", window=None, shot_name=None):
    """What the page's self-test wrote (opened at the fragment `at`, such as
    "step=3&"), and with shoot a screenshot of the page (at the fragment
    shoot names, when it is a string: "#step=21"); in a window of FLAGS'
    size, or of `window` (width, height)."""
    url = "file://" + page
    flags = FLAGS if window is None else FLAGS[:-1] + ["--window-size=%d,%d" % window]
    dom = subprocess.run([CHROMIUM, *flags, "--virtual-time-budget=5000", "--dump-dom",
                          url + "#" + at + "selftest"], capture_output=True, text=True, timeout=120).stdout
    m = re.search(r'<pre id="selftest-result"[^>]*>(.*?)</pre>', dom, re.S)
    shot = os.path.join(SHOTS, shot_name or os.path.basename(page)[:-5] + ".png")
    if shoot:
        subprocess.run([CHROMIUM, *flags, "--screenshot=" + shot,
                        url + (shoot if isinstance(shoot, str) else "")], capture_output=True,
                       timeout=120)
    return json.loads(m.group(1).replace("&amp;", "&").replace("&lt;", "<").replace("&gt;", ">")
                      .replace("&quot;", '"')) if m and m.group(1) else None


def events(path):
    return [json.loads(line) for line in open(path)]


def pct(p):
    return "%.1f%%" % (100 * p)


def check_step_numbers(view, evs):
    """The table, the stages and the draws at one step against the trace."""
    pos = view["pos"]
    logits = next(e["logits"] for e in evs if e["event"] == "logits" and e["pos"] == pos)
    sample = next(e for e in evs if e["event"] == "sample" and e["pos"] == pos)
    t = sample["temperature"]["t"]
    scaled = [x / t for x in logits]
    top = max(scaled)
    e = [math.exp(x - top) for x in scaled]
    p = [x / sum(e) for x in e]
    after = dict(zip(sample["survivors"], sample["probs"]))
    order = sorted(range(len(p)), key=lambda i: (-p[i], i))[:8]
    want = [[i, "%.4f" % logits[i], "%.4f" % (logits[i] / t), pct(p[i]),
             pct(after[i]) if i in after else "cut"] for i in order]
    check(view["table"] == want, f"step {view['step']}: the table's logit, logit/T, p and p after the cuts "
          f"are the trace's (first row {want[0]})")
    k, tp = sample["top_k"], sample["top_p"]
    words = (f"top-k {k['k']} kept {k['n_kept']} of {sample['temperature']['n_kept']}; "
             f"top-p {round(tp['p'], 4)} kept {tp['n_kept']} of {k['n_kept']}")
    check(words in (view["stages"] or ""), f"step {view['step']}: the stages in words, as the sample event "
          f"counts them: {view['stages']!r}")
    draws = view["draws"]
    n = sum(c for _, c, _ in draws)
    close = all(abs(c - 1000 * after[i]) <= 5 * math.sqrt(1000 * after[i] * (1 - after[i])) + 1e-9
                for i, c, _ in draws)
    check(draws and n <= 1000 and close and (len(after) > len(draws) or n == 1000),
          f"step {view['step']}: 1,000 seeded draws against p after the cuts: "
          f"{[(i, c, round(q, 4)) for i, c, q in draws[:4]]}")


def check_steps(page, trace, results):
    """The page at #step=1 and #step=21 of the stories260K trace."""
    evs = events(trace)
    one, later = selftest(page, False, "step=1&"), selftest(page, False, "step=21&")
    for view, step, pos in ((one and one["at_load"], 1, 4), (later and later["at_load"], 21, 24)):
        if view is None:
            check(False, f"the page opens at #step={step}")
            continue
        check(view["step"] == step and view["pos"] == pos and view["kv_positions"] == list(range(pos + 1))
              and view["heatmap_queries"] == list(range(pos + 1)),
              f"#step={step} (position {view['pos']}): the KV panel lists positions "
              f"{view['kv_positions'][:1]}..{view['kv_positions'][-1:]}, the heatmap queries "
              f"{view['heatmap_queries'][:1]}..{view['heatmap_queries'][-1:]}")
        check_step_numbers(view, evs)
        kv = next(e for e in evs if e["event"] == "kv" and e["layer"] == 0 and e["pos"] == pos)
        hd = len(kv["k"]) // 4  # stories260K: 4 K/V heads of 8
        check(view["kv_value_positions"] == list(range(pos + 1)) and view["kv_new"] == [pos, pos]
              and view["kv_new_k"] == kv["k"][:hd] and view["kv_new_v"] == kv["v"][:hd]
              and view["kv_values_bottom"] <= 720,
              f"#step={step}: the K and V heatmaps hold rows 0..{pos}, row {pos} outlined with the "
              f"trace's values (K {kv['k'][:2]}...), ending at {round(view['kv_values_bottom'])} px")
    # the step with the most survivors, where the draws spread over several tokens
    samples = [e for e in evs if e["event"] == "sample"]
    best = max(range(len(samples)), key=lambda i: (samples[i]["n_survivors"], -i))
    spread = selftest(page, False, f"step={best + 1}&")
    if spread is not None:
        check(spread["at_load"]["pos"] == samples[best]["pos"],
              f"#step={best + 1}: position {samples[best]['pos']}, {samples[best]['n_survivors']} survivors")
        check_step_numbers(spread["at_load"], evs)
    r = results["stories"]
    check(r is not None and 0 < r["lowest_bottom"] <= 720,
          f"at every step the step's panels end within 720 px (lowest: {r and round(r['lowest_bottom'])} px)")
    worth = [i + 1 for i, e in enumerate(samples) if e["n_survivors"] > 1]
    check(r is not None and r["worth_showing"] == worth and len(worth) > 1,
          f"the steps worth opening are those where several tokens survive: {worth}")
    plain = results["sampling"]
    check(plain is not None and any("--trace-kv" in n for n in plain["notes"]),
          "a trace without --trace-kv says which flag adds the K and V values")
    check(r is not None and r["bos_shown"] == "<s>", f"BOS shows as {r and r['bos_shown']!r}")
    ex = results["example"]
    check(ex is not None and ex["notes"] == [] and "u = 0.5" in ex["notes_meta"],
          "the example page says its u is fixed at 0.5 and has no attention or KV notes")


def decimals(text):
    return len(text.split(".", 1)[1]) if "." in text else 0


def check_present(page, trace):
    """Presentation mode at each of PRESENT_WINDOWS, on the step with the
    most survivors, against the trace's kv event of its position."""
    evs = events(trace)
    samples = [e for e in evs if e["event"] == "sample"]
    best = max(range(len(samples)), key=lambda i: (samples[i]["n_survivors"], -i))
    pos = samples[best]["pos"]
    kv = next(e for e in evs if e["event"] == "kv" and e["layer"] == 0 and e["pos"] == pos)
    hd = len(kv["k"]) // 4  # stories260K: 4 K/V heads of 8; the panel opens at K/V head 0
    for window in PRESENT_WINDOWS:
        size = "%d x %d" % window
        shoot = "#step=%d&values" % (best + 1) if window == PRESENT_WINDOWS[-1] else False
        r = selftest(page, shoot, "step=%d&present&" % (best + 1), window, "view-stories-present.png")
        view, clicks = (r or {}).get("present"), (r or {}).get("present_clicks") or {}
        if not view:
            check(False, f"{size}: the page opens presenting at #step={best + 1}&present")
            continue
        check(r["errors"] == [] and view["present"] and r["at_load"]["pos"] == pos and samples[best]["n_survivors"] > 1,
              f"{size}: presenting step {best + 1} (position {pos}, {samples[best]['n_survivors']} "
              f"survivors) with no console error")
        check(view["kv_cells"] == 2 * (pos + 1) * hd and view["cell_width"] >= 24 and view["cell_height"] >= 24,
              f"{size}: the {view['kv_cells']} K and V cells are at least 24 px a side "
              f"({view['cell_width']} x {view['cell_height']} px)")
        font = view["font"]
        check(min(font.values()) >= 18 and font["body"] >= 20 and view["chart_text_height"] >= 16,
              f"{size}: type at least 20 px on the page and 18 in the panels ({font}); the charts' text "
              f"drawn {view['chart_text_height']} px tall")
        cap = view["caption"]
        check(cap is not None and "x 4 bytes; the cache: f32)" in cap["text"] and cap["scroll_width"] <= cap["client_width"]
              and cap["right"] <= view["window_width"] and view["page_width"] <= view["window_width"],
              f"{size}: the KV panel's caption is whole ({cap and cap['scroll_width']} px of text in "
              f"{cap and cap['client_width']}, ending at {cap and round(cap['right'])} of "
              f"{view['window_width']}); the page {view['page_width']} px wide")
        got = re.search(r"^V\[(\d+)\]\[3\] = (\S+) ", (clicks.get("clicked") or {}).get("readout", ""))
        check(clicks.get("hit_cell") and got and int(got.group(1)) == pos and float(got.group(2)) == kv["v"][3],
              f"{size}: a click on V[{pos}][3] shows the trace's value {kv['v'][3]}: "
              f"{(clicks.get('clicked') or {}).get('readout')!r}")
        shown = {"k": clicks.get("values_k") or [], "v": clicks.get("values_v") or []}
        close = all(len(shown[x]) == hd and all(
            decimals(t) >= 1 and abs(float(t) - kv[x][j]) <= 0.5 * 10 ** -decimals(t) + 1e-12
            for j, t in enumerate(shown[x])) for x in "kv")
        check(close and clicks.get("values_all") == view["kv_cells"] and clicks.get("values_after_second_v") == 0,
              f"{size}: the V key shows every cell's value, the step's K row {shown['k'][:3]}... "
              f"being the trace's {[round(x, 3) for x in kv['k'][:3]]}...; V again hides them")


SIZE = re.compile(r"\b(\d{3,4}) ?[x×] ?(\d{3,4})\b")  # "1280 x 720", "1280 × 720"


def check_stated_size():
    """Every window size the texts about this check state (the Makefile,
    comment on its screenshots target, docs/viewer.md, this docstring) is
    one the browser is opened at (FLAGS', or presentation mode's): a size
    changed in one place and not in the others fails here, before the
    browser is looked for."""
    window = tuple(re.search(r"--window-size=(\d+),(\d+)", " ".join(FLAGS)).groups())
    windows = {window} | {(str(w), str(h)) for w, h in PRESENT_WINDOWS}
    make = open(os.path.join(ROOT, "Makefile"), encoding="utf-8").read()
    comment = re.search(r"((?:^#[^\n]*\n)+)screenshots:", make, re.M)
    for name, text in (("Makefile's screenshots comment", comment.group(1) if comment else ""),
                       ("docs/viewer.md", open(os.path.join(ROOT, "docs", "viewer.md"), encoding="utf-8").read()),
                       ("this check's docstring", __doc__)):
        stated = SIZE.findall(text)
        check(stated and window in stated and all(s in windows for s in stated),
              f"{name} states the windows the browser opens, {' x '.join(window)} among them: {sorted(set(stated))}")


def main():
    check_stated_size()
    if CHROMIUM is None:
        print("viewer check: chromium is not installed (make deps installs it)")
        return 1
    os.makedirs(SHOTS, exist_ok=True)
    stories = ["--model", os.path.join(MODELS, "stories260K.bin"), "--tokenizer",
               os.path.join(MODELS, "tok512.bin")]
    with tempfile.TemporaryDirectory() as tmp:
        traces = {}
        for level in ("tokens", "logits", "sampling", "layers", "full"):
            traces[level] = os.path.join(tmp, f"tiny-{level}.jsonl")
            run("generate", "--prompt", "cat", "--temperature", "1", "--seed", "2", "--trace-level",
                level, "--trace", traces[level], "--quiet")
        traces["stories"] = os.path.join(tmp, "stories.jsonl")
        run("generate", *stories, "--prompt", "Once upon a time", "--steps", "24", "--temperature",
            "0.9", "--top-k", "40", "--top-p", "0.9", "--seed", "4", "--trace-level", "full",
            "--trace-kv", "--trace", traces["stories"], "--quiet")
        traces["greedy"] = os.path.join(tmp, "greedy.jsonl")
        run("generate", *stories, "--prompt", "Once upon a time", "--steps", "24", "--trace-level",
            "logits", "--trace", traces["greedy"], "--quiet")
        pages = {}
        for name, path in traces.items():
            pages[name] = os.path.join(tmp, f"view-{name}.html")
            extra = ["--tokenizer", os.path.join(MODELS, "tok512.bin")] if name == "stories" else []
            run("view", path, "-o", pages[name], *extra)
        pages["compare"] = os.path.join(tmp, "view-compare.html")
        run("view", traces["greedy"], traces["stories"], "-o", pages["compare"])
        # Markup where text belongs: in the prompt and the pieces (a valid
        # trace: view refuses one that fails `trace validate`) and in the
        # file's name, which the page shows.
        hostile = os.path.join(tmp, "<img src=x onerror=alert(1)>.jsonl")
        run("generate", *stories, "--prompt", "</script><img src=x onerror=alert(2)> <b>",
            "--steps", "4", "--trace-level", "sampling", "--trace", hostile, "--quiet")
        pages["hostile"] = os.path.join(tmp, "view-hostile.html")
        run("view", hostile, hostile, "-o", pages["hostile"],
            "--tokenizer", os.path.join(MODELS, "tok512.bin"))
        moe = os.path.join(tmp, "mixtral")  # a mixture of experts: its routing grid
        run("make-model", "--format", "hf", "--arch", "mixtral", "--experts", "4", "--dim", "16", "--hidden",
            "24", "--layers", "2", "--heads", "4", "--vocab", "512", "--seq-len", "32", "--out", moe)
        traces["moe"] = os.path.join(tmp, "moe.jsonl")
        run("score", "--model", moe, "--tokens", "1,5,9,3,12,11,4", "--top-n", "0", "--out", traces["moe"])
        pages["moe"] = os.path.join(tmp, "view-moe.html")
        run("view", traces["moe"], "-o", pages["moe"])
        pages["example"] = os.path.join(tmp, "view-example.html")
        run("view", "--example", "-o", pages["example"])
        shots = ("stories", "compare", "example")  # the ones docs/ may show
        at = {"stories": "#step=23"}  # a grown cache and 16 survivors, as docs/viewer.md shows it
        results = {name: selftest(page, at.get(name, name in shots)) for name, page in pages.items()}

        loaded = [n for n, r in results.items() if r is not None and r["errors"] == []
                  and r["visited"] == r["steps"] and (r["steps"] == 0 or r["last_step"] == r["steps"])]
        check(len(loaded) == len(pages), f"{len(loaded)} of {len(pages)} pages load with no console "
              f"error and step through every step ({', '.join(loaded)})")
        dom = subprocess.run([CHROMIUM, *FLAGS, "--virtual-time-budget=3000", "--dump-dom",
                              "file://" + pages["hostile"]], capture_output=True, text=True,
                             timeout=120).stdout
        check(results["hostile"] is not None and "<img" not in dom.split('id="stepwise-data"')[-1]
              .split("</script>", 1)[-1],
              "a trace whose fields hold markup shows it as text: no element made of it")
        slider = results["example"] and results["example"]["slider"]
        want = {}
        for t in (0.5, 1, 2):
            e = [math.exp(z / t) for z in (2, 1, 0)]
            want[t] = ["%.1f%%" % (100 * x / sum(e)) for x in e]
        got = {float(t): [cell for _, cell in sorted(rows)] for t, rows in (slider or {}).items()}
        check(got == want, f"the slider reproduces the (2, 1, 0) table: {want}")
        pattern_cells = sum(len(e["data"]) for e in events(traces["stories"])
                            if e["event"] == "activation" and e["hook"] == "blocks.0.attn.pattern"
                            and e["head"] == 0)
        with_patterns = [n for n, r in results.items() if r and r["heatmap"]]
        check(with_patterns == ["full", "stories"] and results["stories"]["heatmap_cells"] == pattern_cells,
              f"heatmaps exactly for the traces with patterns ({with_patterns}); layer 0 head 0 has "
              f"its {pattern_cells} cells")
        a = [e["token"] for e in events(traces["greedy"]) if e["event"] == "token"]
        b = [e["token"] for e in events(traces["stories"]) if e["event"] == "token"]
        p = next(i for i, (x, y) in enumerate(zip(a, b)) if x != y)
        pos = [e["pos"] for e in events(traces["greedy"]) if e["event"] == "token"][p]
        compare = results["compare"]["compare"] if results["compare"] else ""
        check(compare.startswith(f"first divergence at position {pos}:"),
              f"the comparison names the first divergence: {compare!r}")
        notes = results["tokens"]["notes"] if results["tokens"] else []
        check(any("--trace-level logits" in n for n in notes),
              "a tokens-level trace says which flag adds the logits")
        routed = [e for e in events(traces["moe"]) if e["event"] == "routing" and e["layer"] == 0]
        cells = sum(len(e["experts"]) for e in routed)
        others = [n for n, r in results.items() if r and r.get("routing_cells") and n != "moe"]
        check(results["moe"] and results["moe"]["routing_cells"] == cells == 7 * 2 and not others,
              f"a mixture's page draws layer 0's routing grid, one cell a chosen expert ({cells}); "
              f"no other page draws one")
        check_steps(pages["stories"], traces["stories"], results)
        check_present(pages["stories"], traces["stories"])
        p_key = results["stories"] and results["stories"].get("p_key")
        check(p_key and p_key["on"]["present"] and p_key["on"]["cell_width"] >= 24
              and "&present" in p_key["hash"] and p_key["off"] is False,
              f"the P key turns presenting on (cells {p_key and p_key['on']['cell_width']} px wide, the address "
              f"{p_key and p_key['hash']!r}) and off again")
    made = [os.path.join(SHOTS, f"view-{n}.png") for n in (*shots, "stories-present")]
    check(all(os.path.exists(p) and os.path.getsize(p) > 10000 for p in made),
          f"screenshots in build/screenshots: {', '.join(os.path.basename(p) for p in made)}")
    return check.summary("viewer check")


if __name__ == "__main__":
    sys.exit(main())
