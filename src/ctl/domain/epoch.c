/*
 * epoch.c - the controller's epoch (ctl.h, ctl_set_epoch; docs/protocol.md,
 * "Controllers and epochs"). The agent port reads it as it encodes. A
 * standby in HA mode answers agents with a redirect itself (ha/standby.c).
 */
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
