/*
 * bpf.h - device access on cgroup v2 (bpf.c): a
 * BPF_PROG_TYPE_CGROUP_DEVICE program, built from raw instructions and
 * loaded with the bpf(2) system call (as crun does; no libbpf), that allows
 * a list of devices and denies every other.
 */
#ifndef SLUICE_AGENT_CGROUP_BPF_H
#define SLUICE_AGENT_CGROUP_BPF_H

#include <stddef.h>

#include "cgroup/fs.h"

/*
 * Loads a program that allows exactly the devices of rules[0..n) (each
 * rule's type and major, its minor or any minor when -1, every access) and
 * attaches it to the cgroup directory dirfd (BPF_F_ALLOW_MULTI, so that a
 * program a parent holds, systemd's say, still applies too). The
 * attachment lives as long as the cgroup. Returns 0, or -errno of the
 * bpf(2) call that failed (EPERM: no CAP_BPF / CAP_SYS_ADMIN; EINVAL: the
 * kernel lacks cgroup device programs). At most 200 rules.
 */
int cg_bpf_attach_devices(int dirfd, const cg_dev_rule_t *rules, size_t n);

#endif
