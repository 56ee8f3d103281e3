/*
 * epoch.c - the controller's epoch and whether it leads (ctl.h,
 * ctl_set_epoch and ctl_set_leader; docs/protocol.md, "Controllers and
 * epochs"). The agent port reads both fields as it answers and encodes.
 */
#include <string.h>

#include "domain/ctl.h"
#include "log.h"
#include "sluice/error.h"

int ctl_set_epoch(ctl_t *c, uint64_t epoch) {
    if (epoch < c->epoch) {
        sl_log(SL_LOG_ERROR, "ctl", "epoch %llu refused: the controller is at epoch %llu, and an "
               "epoch only grows", (unsigned long long)epoch, (unsigned long long)c->epoch);
        return SL_EINVAL;
    }
    if (epoch != c->epoch)
        sl_log(SL_LOG_INFO, "ctl", "epoch=%llu", (unsigned long long)epoch);
    c->epoch = epoch;
    return 0;
}

int ctl_set_leader(ctl_t *c, bool leader, const char *leader_agent) {
    size_t len = leader_agent ? strlen(leader_agent) : 0;
    if (len >= sizeof c->leader_agent)
        return SL_EINVAL;
    c->standby = !leader;
    memcpy(c->leader_agent, leader_agent ? leader_agent : "", len + 1);
    return 0;
}
