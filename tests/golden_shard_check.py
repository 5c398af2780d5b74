#!/usr/bin/python3
"""golden --shard K/N and golden merge (in `make test`).

On stories260K: the unsharded set is made once; for N = 1, 2 and 5 the N
parts (each with --threads 1, the whole set with the default) are merged and
compared with it file by file and byte for byte, manifest included. Each
part's manifest lists only its own files, numbered in the set, with their
SHA-256 (checked here with hashlib). Then what merge must refuse, each in
one line with exit status 2 and no --out written: a missing part, a part
given twice, a part of another model, a part made with other options, a
file whose bytes no longer match its checksum, a file entry that names a
path outside its part, a folder that is not a part, and bad --shard values.
With --tensors: every score and kv file has its safetensors file beside
it, listed with its SHA-256 and size; each holds the JSON set's numbers
(diff: max |d| 0); parts merge to the whole set byte for byte; a tampered
tensors file, a tensors entry outside its part, a part whose manifest lost
a tensors entry (its score file still names the file) and a part without
--tensors are refused; a set with tensors files is replaced by a new one,
and a stray .safetensors keeps a folder from being replaced.

    /usr/bin/python3 tests/golden_shard_check.py build/stepwise
"""
import filecmp
import hashlib
import json
import os
import shutil
import sys
import tempfile

from check_util import Checks, run_stepwise, stories260k

BIN = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build/stepwise")


def same_tree(a, b):
    names = sorted(os.listdir(a))
    if names != sorted(os.listdir(b)):
        return False
    return all(filecmp.cmp(os.path.join(a, n), os.path.join(b, n), shallow=False) for n in names)


def main():
    check = Checks()
    model_args = stories260k("golden shards")
    if model_args is None:
        return 0
    common = ["golden", *model_args]
    with tempfile.TemporaryDirectory() as tmp:
        whole = os.path.join(tmp, "whole")
        run_stepwise(BIN, *common, "--out", whole)
        total = len(json.load(open(os.path.join(whole, "manifest.json")))["files"])
        for n in (1, 2, 5):
            parts = [os.path.join(tmp, f"n{n}-part{k}") for k in range(1, n + 1)]
            for k, part in enumerate(parts, 1):
                run_stepwise(BIN, *common, "--shard", f"{k}/{n}", "--threads", "1", "--out", part)
            listed, good = [], True
            for k, part in enumerate(parts, 1):
                m = json.load(open(os.path.join(part, "manifest.json")))
                idx = [f["index"] for f in m["files"]]
                listed += idx
                good &= all(i % n == k - 1 for i in idx)
                good &= all(hashlib.sha256(open(os.path.join(part, f["file"]), "rb").read()).hexdigest()
                            == f["sha256"] for f in m["files"])
                good &= sorted(os.listdir(part)) == sorted([f["file"] for f in m["files"]] + ["manifest.json"])
                good &= n == 1 or m["shard"] == {"index": k, "count": n, "files_in_set": total}
            check(good and sorted(listed) == list(range(total)),
                  f"{n} part(s): each lists its own files (number mod {n}), checksums right, all {total} once")
            merged = os.path.join(tmp, f"merged-{n}")
            run_stepwise(BIN, "golden", "merge", *reversed(parts), "--out", merged)
            check(same_tree(whole, merged), f"{n} part(s) merged = the unsharded set, byte for byte")

        p = [os.path.join(tmp, f"n2-part{k}") for k in (1, 2)]
        out = os.path.join(tmp, "refused")

        def refused(what, parts, want, extra=()):
            r = run_stepwise(BIN, "golden", "merge", *parts, "--out", out, *extra, expect=(2,))
            line = r.stderr.strip()
            check(want in line and len(line.splitlines()) == 1 and not os.path.exists(out),
                  f"refused: {what}: {line}")

        refused("a missing part", [p[0]], "the set has 2 parts, 1 given")
        refused("a part twice", [p[0], p[0]], "part 1 of 2 given twice")
        other = os.path.join(tmp, "other.bin")
        run_stepwise(BIN, "make-model", "--dim", "64", "--hidden", "96", "--layers", "1", "--heads", "4",
                     "--vocab", "512", "--seq-len", "64", "--out", other)
        foreign = os.path.join(tmp, "foreign")
        run_stepwise(BIN, "golden", "--model", other, *model_args[2:],
                     "--shard", "2/2", "--out", foreign)
        refused("a part of another model", [p[0], foreign], '"model" differ')
        hooks = os.path.join(tmp, "hooks")
        run_stepwise(BIN, *common, "--shard", "2/2", "--hooks", "none", "--out", hooks)
        refused("a part made with other options", [p[0], hooks], '"options" differ')
        bad = os.path.join(tmp, "tampered")
        shutil.copytree(p[1], bad)
        m = json.load(open(os.path.join(bad, "manifest.json")))
        with open(os.path.join(bad, m["files"][0]["file"]), "ab") as f:
            f.write(b" ")
        refused("a file grown after its part was made", [p[0], bad],
                "bytes, its manifest says %d" % m["files"][0]["bytes"])
        with open(os.path.join(bad, m["files"][0]["file"]), "r+b") as f:  # the size again
            f.truncate(m["files"][0]["bytes"])
            f.seek(0)
            f.write(b"[")
        refused("a file changed after its part was made (same size)", [p[0], bad],
                "not the one its manifest gives")
        escape = os.path.join(tmp, "escape")
        shutil.copytree(p[1], escape)
        m["files"][0]["file"] = "../whole/manifest.json"
        json.dump(m, open(os.path.join(escape, "manifest.json"), "w"))
        refused("a file entry outside its part", [p[0], escape], "plain file name")
        refused("a folder that is no part", [p[0], tmp], "manifest.json")
        for shard in ("0/2", "3/2", "1/0", "two", "1/2/3"):
            r = run_stepwise(BIN, *common, "--shard", shard, "--out", out, expect=(2,))
            check("--shard takes K/N" in r.stderr and not os.path.exists(out), f"--shard {shard} refused")
        check_tensors(check, common, tmp, whole, refused)
    return check.summary("golden shards")


def sha256(path):
    return hashlib.sha256(open(path, "rb").read()).hexdigest()


def check_tensors(check, common, tmp, whole, refused):
    tset = os.path.join(tmp, "tensors")
    run_stepwise(BIN, *common, "--tensors", "--out", tset)
    m = json.load(open(os.path.join(tset, "manifest.json")))
    scored = [f for f in m["files"] if f["kind"] in ("score", "kv")]
    listed = [f["file"] for f in m["files"]] + [f["tensors"]["file"] for f in scored]
    good = m["options"].get("tensors") == "safetensors" and len(scored) == 5
    good &= all("tensors" not in f for f in m["files"] if f["kind"] not in ("score", "kv"))
    good &= sorted(os.listdir(tset)) == sorted(listed + ["manifest.json"])
    for f in scored:
        t, path = f["tensors"], os.path.join(tset, f["tensors"]["file"])
        good &= t["file"] == f["file"].replace(".jsonl", ".safetensors")
        good &= sha256(path) == t["sha256"] and os.path.getsize(path) == t["bytes"]
        good &= f"--tensors {t['file']}" in f["command"]
    check(good, "--tensors: a safetensors file beside each of the 5 score and kv files, "
                "its SHA-256 and size in the manifest")
    worst = []
    for f in scored:
        r = run_stepwise(BIN, "diff", os.path.join(whole, f["file"]), os.path.join(tset, f["file"]),
                         "--json")
        rep = json.loads(r.stdout)
        kv = max([max(k["max_abs_k"], k["max_abs_v"]) for k in rep["kv_layers"]], default=0)
        worst.append((rep["verdict"], rep["max_abs"]["value"], kv, rep["positions"] > 0))
    check(all(w == ("pass", 0, 0, True) for w in worst), f"--tensors: each file's numbers are the JSON set's "
          f"(diff max |d| 0): {worst}")
    parts = [os.path.join(tmp, f"t-part{k}") for k in (1, 2)]
    for k, part in enumerate(parts, 1):
        run_stepwise(BIN, *common, "--tensors", "--shard", f"{k}/2", "--threads", "1", "--out", part)
    merged = os.path.join(tmp, "t-merged")
    run_stepwise(BIN, "golden", "merge", *parts, "--out", merged)
    check(same_tree(tset, merged), "--tensors: 2 parts merged = the unsharded set, byte for byte")
    plain = os.path.join(tmp, "n2-part1")
    refused("a part without --tensors", [plain, parts[1]], '"options" differ')
    bad = os.path.join(tmp, "t-tampered")
    shutil.copytree(parts[1], bad)
    pm = json.load(open(os.path.join(bad, "manifest.json")))
    t = next(f["tensors"] for f in pm["files"] if "tensors" in f)
    with open(os.path.join(bad, t["file"]), "r+b") as f:
        f.seek(t["bytes"] - 1)
        last = f.read(1)
        f.seek(t["bytes"] - 1)
        f.write(bytes([last[0] ^ 1]))
    refused("a tensors file changed after its part was made", [parts[0], bad],
            f"{t['file']}: its SHA-256 is not the one its manifest gives")
    escape = os.path.join(tmp, "t-escape")
    shutil.copytree(parts[1], escape)
    t["file"] = "../tensors/manifest.json"
    json.dump(pm, open(os.path.join(escape, "manifest.json"), "w"))
    refused("a tensors entry outside its part", [parts[0], escape], "tensors need a plain file name")
    t["file"] = "manifest.json"
    json.dump(pm, open(os.path.join(escape, "manifest.json"), "w"))
    refused("a tensors file named manifest.json", [parts[0], escape], "not manifest.json")
    lost = os.path.join(tmp, "t-lost")  # issue 45: the manifest lost a "tensors" entry
    shutil.copytree(parts[1], lost)
    pm = json.load(open(os.path.join(lost, "manifest.json")))
    entry = next(f for f in pm["files"] if "tensors" in f)
    os.remove(os.path.join(lost, entry.pop("tensors")["file"]))
    json.dump(pm, open(os.path.join(lost, "manifest.json"), "w"))
    refused("a part whose manifest lost a tensors entry (its file gone too)", [parts[0], lost],
            f"{entry['file']} names the tensors file \"{entry['file'].replace('.jsonl', '.safetensors')}\""
            " but its part's manifest lists none")
    r = run_stepwise(BIN, *common, "--tensors", "--hooks", "none", "--out", tset)
    m2 = json.load(open(os.path.join(tset, "manifest.json")))
    check(m2["options"]["hooks"] == "none" and sorted(os.listdir(tset)) == sorted(listed + ["manifest.json"]),
          "--tensors: a set with tensors files is replaced by a new one")
    stray = os.path.join(tmp, "stray")
    shutil.copytree(whole, stray)
    open(os.path.join(stray, "score-00.safetensors"), "wb").write(b"x")
    r = run_stepwise(BIN, *common, "--out", stray, expect=(2,))
    check("holds score-00.safetensors, which is not a file of its golden set" in r.stderr
          and os.path.getsize(os.path.join(stray, "score-00.safetensors")) == 1,
          "a .safetensors its manifest does not list keeps the folder from being replaced")


if __name__ == "__main__":
    sys.exit(main())
