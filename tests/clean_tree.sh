#!/usr/bin/env bash
# The checkout is unchanged by `make test`: the tests write only under
# build/ or a temporary folder. `snapshot FILE` records the tree's state
# (git status, a hash of every change to tracked files and of every
# untracked file's bytes) before the tests; `check FILE` fails, naming the
# paths, when the state after them differs. Changes a developer had before
# the run are part of both states; a fresh clone (CI) starts empty.
# Without git or outside a work tree both steps say so and pass.
#   bash tests/clean_tree.sh snapshot build/tree-before.txt
#   bash tests/clean_tree.sh check build/tree-before.txt
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:?usage: clean_tree.sh snapshot|check FILE}
file=${2:?usage: clean_tree.sh snapshot|check FILE}
state() {
    git status --porcelain=v1 --untracked-files=all
    echo "--"
    git diff HEAD --binary | sha256sum
    git ls-files --others --exclude-standard -z | xargs -0 -r sha256sum --
}
if ! command -v git >/dev/null 2>&1 || ! git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    echo "clean tree: not a git work tree, not checked"
    exit 0
fi
case $mode in
snapshot)
    mkdir -p "$(dirname "$file")"
    state > "$file"
    ;;
check)
    if [ ! -f "$file" ]; then echo "clean tree: no snapshot $file (run the snapshot first)"; exit 1; fi
    if state | cmp -s - "$file"; then
        echo "ok    clean tree: the checkout is as it was before the tests"
    else
        echo "FAIL  clean tree: the tests changed the checkout:"
        diff <(sed -n '/^--$/q;p' "$file") <(state | sed -n '/^--$/q;p') | sed -n 's/^[<>] /      /p' | head -20
        state | diff "$file" - | grep '^[<>] [0-9a-f]\{64\}  ' | sed 's/^[<>] [0-9a-f]*  /      changed: /' | sort -u | head -20
        exit 1
    fi
    ;;
*) echo "usage: clean_tree.sh snapshot|check FILE"; exit 2 ;;
esac
