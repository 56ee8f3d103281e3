#!/bin/sh
# bench/cli_startup.sh - the start-up cost of the `sluice` CLI: runs
# `sluice queue` N times (default 200) against a running sluiced on
# 127.0.0.1 and prints the mean and median wall time per call, for each
# binary given, the runs of the binaries interleaved (a, b, a, b, ...) so
# that drift in the machine's load falls on both alike.
#
#   bench/cli_startup.sh [-n N] SLUICE_BIN [SLUICE_BIN...]
#
# The daemons (sluiced and a one-node sluice-agent) come from `sluice up
# --detach` of the build/ next to this script (BUILD=dir to change), in a
# temporary state directory that is removed afterwards; the queue holds 20
# pending jobs so that each call gets a real table back. `sluice up` serves
# HTTPS (its own CA); PLAIN=1 makes it serve plain HTTP instead, to measure
# what TLS costs a call (docs/security.md).
set -eu
N=200
if [ "${1:-}" = "-n" ]; then N=$2; shift 2; fi
[ $# -ge 1 ] || { echo "usage: $0 [-n N] SLUICE_BIN [SLUICE_BIN...]" >&2; exit 2; }
HERE=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-$HERE/build}
DIR=$(mktemp -d /tmp/cli_startup.XXXXXX)
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
APORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cleanup() { SLUICE_DIR=$DIR "$BUILD/sluice" down --dir "$DIR" >/dev/null 2>&1 || true; rm -rf "$DIR"; }
trap cleanup EXIT
if [ "${PLAIN:-0}" = 1 ]; then
    printf 'listen: 127.0.0.1:%s\nagent_listen: 127.0.0.1:%s\nstate: %s/sluiced.db\nadmin_token: adm-bench\ncluster_token: clu-bench\ntenants:\n  - name: default\n    token: tok-bench\n' \
        "$PORT" "$APORT" "$DIR" > "$DIR/sluiced.yaml"
fi
"$BUILD/sluice" up --dir "$DIR" --port "$PORT" --agent-port "$APORT" --gpus 0 --detach >/dev/null
export SLUICE_DIR=$DIR
i=0
while [ $i -lt 20 ]; do
    "$BUILD/sluice" submit -q --gpus 16 -- true >/dev/null  # never fits: stays pending
    i=$((i + 1))
done
python3 - "$N" "$@" <<'PY'
import statistics, subprocess, sys, time
n, bins = int(sys.argv[1]), sys.argv[2:]
times = {b: [] for b in bins}
for b in bins:  # warm the page cache and the server
    subprocess.run([b, "queue"], check=True, stdout=subprocess.DEVNULL)
for _ in range(n):
    for b in bins:
        t = time.perf_counter()
        subprocess.run([b, "queue"], check=True, stdout=subprocess.DEVNULL)
        times[b].append((time.perf_counter() - t) * 1000)
for b in bins:
    t = times[b]
    print("%-50s n=%d mean %.3f ms  median %.3f ms  min %.3f ms" %
          (b, n, statistics.mean(t), statistics.median(t), min(t)))
PY
