#!/bin/bash
# bench/enforce/slurm/teardown.sh - stop what setup.sh started (slurmd,
# slurmctld, munged), each by the PID in its pid file under $RUN and only
# after checking /proc/PID/exe is the expected binary; jobs left in the
# queue are cancelled first.  Then the (by now empty) cgroup v1 directories
# slurmd made, /sys/fs/cgroup/<controller>/slurm_sluiceenf, are removed.
set -uo pipefail
RUN="${RUN:-/tmp/sluice-enforce-slurm}"
export SLURM_CONF="$RUN/etc/slurm.conf"
log() { printf '[enforce-slurm teardown] %s\n' "$*"; }

stop_pid() {
    local name="$1" pidfile="$2" bin="$3" pid exe
    [ -s "$pidfile" ] || { log "$name: no pid file"; return 0; }
    pid="$(tr -dc '0-9' < "$pidfile")"
    if [ -z "$pid" ] || [ ! -e "/proc/$pid" ]; then
        log "$name: not running"; rm -f "$pidfile"; return 0
    fi
    exe="$(readlink -f "/proc/$pid/exe" 2>/dev/null || true)"
    if [ "$exe" != "$(readlink -f "$bin")" ]; then
        log "$name: pid $pid runs '$exe', leaving it alone"; return 0
    fi
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 1 100); do [ -e "/proc/$pid" ] || break; sleep 0.1; done
    if [ -e "/proc/$pid" ]; then
        log "$name: pid $pid ignored SIGTERM for 10 s, SIGKILL"
        kill -KILL "$pid" 2>/dev/null || true
    fi
    log "$name: pid $pid stopped"
    rm -f "$pidfile"
}

if [ -s "$RUN/run/slurmctld.pid" ] && [ -r "$SLURM_CONF" ] &&
   timeout 10 scontrol ping 2>/dev/null | grep -q 'is UP'; then
    if [ "$(timeout 30 squeue -h -o %A 2>/dev/null | wc -l)" -gt 0 ]; then
        timeout 60 scancel --user=root 2>/dev/null || true
        for _ in $(seq 1 300); do
            [ "$(timeout 30 squeue -h -o %A 2>/dev/null | wc -l)" -eq 0 ] && break
            sleep 0.2
        done
    fi
fi
stop_pid slurmd "$RUN/run/slurmd-sluiceenf.pid" "$(command -v slurmd || echo /usr/sbin/slurmd)"
stop_pid slurmctld "$RUN/run/slurmctld.pid" "$(command -v slurmctld || echo /usr/sbin/slurmctld)"
stop_pid munged "$RUN/munge/munged.pid" /usr/sbin/munged
for d in /sys/fs/cgroup/*/slurm_sluiceenf; do
    [ -d "$d" ] || continue
    find "$d" -depth -type d -exec rmdir {} \; 2>/dev/null || true
    if [ -d "$d" ]; then log "could not remove $d"; else log "removed $d"; fi
done
exit 0
