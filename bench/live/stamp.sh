#!/bin/bash
# Job payload shared by the Sluice and the Slurm side of bench/live: the
# first thing the job's own process does is write its start time, so "all
# started" means the processes really began (not "RUNNING" in a listing).
#   stamp.sh DIR SLEEP_S [end]
# writes DIR/<job id>.s = "<EPOCHREALTIME> <CUDA_VISIBLE_DEVICES>", then
# either execs `sleep SLEEP_S` (no end stamp) or, with "end", sleeps and
# writes DIR/<job id>.e = "<EPOCHREALTIME>" as its last action before exit.
# The job id is $SLUICE_JOB_ID (sluice-agent) or $SLURM_JOB_ID (slurmd).
t=$EPOCHREALTIME
id=${SLUICE_JOB_ID:-$SLURM_JOB_ID}
printf '%s %s\n' "$t" "${CUDA_VISIBLE_DEVICES:-}" > "$1/$id.s"
if [ "${3:-}" = end ]; then
    [ "$2" != 0 ] && sleep "$2"
    printf '%s\n' "$EPOCHREALTIME" > "$1/$id.e"
    exit 0
fi
# argv[0] names the stamp directory so that bench/live can find (and, if a
# run is interrupted, stop) the task processes it caused, by PID.
[ "$2" != 0 ] && exec -a "sleep-stamped:$1" sleep "$2"
exit 0
