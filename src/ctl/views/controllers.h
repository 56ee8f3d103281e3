/*
 * controllers.h - GET /v1/controllers and `sluice controllers`: the
 * group of controllers (docs/ha.md).
 */
#ifndef SLUICE_CTL_VIEWS_CONTROLLERS_H
#define SLUICE_CTL_VIEWS_CONTROLLERS_H

#include "base/buf.h"
#include "domain/ctl.h"

/* Appends the JSON object: {"mode":"ha"|"single","self","leader","epoch",
 * "applied","members":[{"name","api","agent","role","applied","lag"}]}.
 * In HA mode one etcd read (ha.h, ctl_ha_view); a single controller is
 * its own leader. Can't fail (an unreachable etcd gives "error"). */
void ctl_controllers_view(ctl_t *c, ctl_buf_t *b);

#endif
