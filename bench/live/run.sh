#!/bin/bash
# bench/live/run.sh - the live-cluster benchmarks of issue 4 (100-task
# start-up, GPU turnover, durable submissions/s, queue latency with 10,000
# pending), Sluice and Slurm 22.05 measured side by side in one run.
#
#   bench/live/run.sh                   # full run (~10 min on 2 cores, Slurm's 10,000 sbatch dominate)
#   bench/live/run.sh --quick           # smaller counts, ~6 min; the queue figures
#                                       # still on 10,000 pending jobs (Slurm's too)
#   bench/live/run.sh --quick --queue-builds ../before/build
#                                       # also the queue figures of another build on
#                                       # the same jobs, interleaved (before/after)
#   bench/live/run.sh --slurm-setup     # first start Slurm (../shared/peers/slurm/setup.sh,
#                                       # root + apt), tear it down at the end
#   bench/live/run.sh --slurm skip      # Sluice only
#   bench/live/run.sh --agent-args "--cgroup v1 --cgroup-root {root}"
#                                       # every agent enforces with cgroup v1
#                                       # under a root of its own (bench/enforce/cost.py)
#   bench/live/run.sh --help            # every knob of livebench.py
#
# Needs build/sluiced, build/sluice-agent, build/sluice (`make`), Debian's
# /usr/bin/python3 with python3-yaml.  Everything listens on 127.0.0.1;
# scratch, raw JSON and the summary go to /tmp/sluice-live-bench/<date>/.
# Prints one line per figure, then a markdown summary table.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
export SLUICE_BUILD="${SLUICE_BUILD:-$REPO/build}"
SLURM_PEER="${SLURM_PEER:-$REPO/../shared/peers/slurm}"

args=()
setup=0
for a in "$@"; do
    case "$a" in
        --slurm-setup) setup=1 ;;
        --quick) args+=(--reps 2 --turnover-reps 2 --submit-n 10000 --pending 10000
                        --seq-n 500 --slurm-reps 1 --slurm-turnover-reps 1
                        --slurm-pending 10000 --queue-reps 5 --no-easy-variant) ;;
        -h|--help) exec /usr/bin/python3 "$HERE/livebench.py" --help ;;
        *) args+=("$a") ;;
    esac
done
for b in sluiced sluice-agent sluice; do
    if [ ! -x "$SLUICE_BUILD/$b" ]; then
        echo "run.sh: $SLUICE_BUILD/$b is not built (run make, or set SLUICE_BUILD)" >&2
        exit 2
    fi
done
if [ "$setup" = 1 ]; then
    "$SLURM_PEER/setup.sh"
    trap '"$SLURM_PEER/teardown.sh"' EXIT
fi
/usr/bin/python3 "$HERE/livebench.py" "${args[@]}"
