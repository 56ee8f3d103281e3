#!/bin/bash
# bench/enforce/slurm/setup.sh - start the allocation-precision benchmark's
# own Slurm 22.05: munged, slurmctld, slurmd on 127.0.0.1 (ports 6837 and
# 6838), node "sluiceenf", with proctrack/cgroup and task/cgroup
# (slurm.conf.in, cgroup.conf beside this script).  Everything at run time
# lives under $RUN (default /tmp/sluice-enforce-slurm): config copy, state,
# spool, logs, pid files, munge key and socket.  The packages are Debian's
# (slurm-wlm slurmctld slurmd slurm-client munge); this script does not
# install them: ../shared/peers/slurm/setup.sh does, or
#   apt-get install --no-install-recommends slurm-wlm slurmctld slurmd slurm-client munge
# Idempotent: an older instance (by the pid files under $RUN) is stopped
# first with teardown.sh.  Needs root.  It runs beside the live
# benchmarks' peer cluster (/tmp/slurm-peer, ports 6817/6818) without
# touching it.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
RUN="${RUN:-/tmp/sluice-enforce-slurm}"
export SLURM_CONF="$RUN/etc/slurm.conf"
log() { printf '[enforce-slurm] %s\n' "$*"; }

[ "$(id -u)" -eq 0 ] || { echo "setup.sh: must run as root" >&2; exit 1; }
for b in slurmctld slurmd srun sinfo scontrol /usr/sbin/munged munge; do
    command -v "$b" >/dev/null || {
        echo "setup.sh: $b not installed (apt-get install --no-install-recommends slurm-wlm slurmctld slurmd slurm-client munge)" >&2
        exit 2; }
done
log "$(slurmctld -V)"
if [ -d "$RUN/run" ]; then
    RUN="$RUN" "$HERE/teardown.sh" || true
fi
rm -rf "$RUN"
mkdir -p "$RUN"/{etc,state,spool,log,run,munge,jobs}
sed "s|@RUN@|$RUN|g" "$HERE/slurm.conf.in" > "$RUN/etc/slurm.conf"
cp "$HERE/cgroup.conf" "$RUN/etc/"
chmod 0755 "$RUN" "$RUN/etc" "$RUN/jobs"
chmod 0644 "$RUN/etc/"*.conf

M="$RUN/munge"
chown munge:munge "$M"
chmod 0755 "$M"
dd if=/dev/urandom of="$M/munge.key" bs=1 count=1024 status=none
chown munge:munge "$M/munge.key"
chmod 0400 "$M/munge.key"
runuser -u munge -- /usr/sbin/munged --key-file="$M/munge.key" \
    --socket="$M/munge.socket.2" --pid-file="$M/munged.pid" \
    --log-file="$M/munged.log" --seed-file="$M/munged.seed" --num-threads=2
for _ in $(seq 1 50); do
    [ -S "$M/munge.socket.2" ] && [ -s "$M/munged.pid" ] && break
    sleep 0.1
done
munge -n -S "$M/munge.socket.2" | unmunge -S "$M/munge.socket.2" >/dev/null
log "munged up, pid $(cat "$M/munged.pid")"

slurmctld -f "$SLURM_CONF"
ok=0
for _ in $(seq 1 100); do
    if scontrol ping 2>/dev/null | grep -q 'is UP'; then ok=1; break; fi
    sleep 0.2
done
[ "$ok" = 1 ] || { echo "slurmctld did not come up; see $RUN/log/slurmctld.log" >&2; exit 1; }
log "slurmctld up, pid $(cat "$RUN/run/slurmctld.pid")"

slurmd -f "$SLURM_CONF" -N sluiceenf
ok=0
st=
for _ in $(seq 1 150); do
    st="$(sinfo -h -n sluiceenf -o '%T' 2>/dev/null || true)"
    if [ "$st" = idle ]; then ok=1; break; fi
    sleep 0.2
done
[ "$ok" = 1 ] || { echo "node sluiceenf not idle (state '$st'); see $RUN/log/" >&2; exit 1; }
log "slurmd up, pid $(cat "$RUN/run/slurmd-sluiceenf.pid")"
out="$(srun -N1 -n1 -c1 --mem=64M -t 1 --chdir="$RUN/jobs" cat /proc/self/cgroup)"
log "smoke step's cgroups: $(echo "$out" | grep -E 'memory|cpuset' | tr '\n' ' ')"
log "ready.  Use: export SLURM_CONF=$SLURM_CONF"
