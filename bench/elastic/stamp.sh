#!/bin/bash
# Task payload of bench/elastic: the first thing the task's own process does
# is write when it began, so "running" means the process really started.
#   stamp.sh DIR
# writes DIR/<job>.<task>.<node>.<n> = "<EPOCHREALTIME>" (n counts earlier
# stamps of the same task on the node, so a task launched again leaves a
# new file), then sleeps until it is stopped.
t=$EPOCHREALTIME
n=0
while [ -e "$1/$SLUICE_JOB_ID.$SLUICE_TASK_INDEX.$SLUICE_NODE.$n" ]; do n=$((n + 1)); done
printf '%s\n' "$t" > "$1/$SLUICE_JOB_ID.$SLUICE_TASK_INDEX.$SLUICE_NODE.$n.tmp"
mv "$1/$SLUICE_JOB_ID.$SLUICE_TASK_INDEX.$SLUICE_NODE.$n.tmp" "$1/$SLUICE_JOB_ID.$SLUICE_TASK_INDEX.$SLUICE_NODE.$n"
exec -a "sleep-elastic:$1" sleep 100000
