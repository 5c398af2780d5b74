#!/bin/sh
# sha256_speed.sh OLD NEW FILE: the run header's SHA-256 of FILE, by two
# builds of stepwise, 3 interleaved rounds from a warm page cache: each
# build's `inspect --json` with the hash and with --no-hash, the difference
# the hash's seconds, and FILE's bytes over it. A benchmark, not a test.
set -eu
OLD=$1 NEW=$2 FILE=$3
BYTES=$(stat -c %s "$FILE")
echo "# sha256_speed.sh $OLD $NEW $FILE ($BYTES bytes), $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
cat "$FILE" > /dev/null
secs() { # seconds of one run of $@
    /usr/bin/python3 -c 'import subprocess, sys, time; t = time.monotonic(); subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL); print("%.3f" % (time.monotonic() - t))' "$@"
}
for round in 1 2 3; do
    for build in "$OLD" "$NEW"; do
        with=$(secs "$build" inspect --model "$FILE" --json)
        without=$(secs "$build" inspect --model "$FILE" --json --no-hash)
        /usr/bin/python3 -c "import sys; w, n, b = float(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3]); print('round %s, %s: with the hash %.3f s, without %.3f s: the hash %.3f s, %.2f GB/s' % (sys.argv[4], sys.argv[5], w, n, w - n, b / (w - n) / 1e9))" "$with" "$without" "$BYTES" "$round" "$build"
    done
done
