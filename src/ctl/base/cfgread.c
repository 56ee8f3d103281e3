/*
 * cfgread.c - a config reader's errors (cfgread.h).
 */
#include <stdarg.h>
#include <stdio.h>

#include "base/cfgread.h"
#include "yamldoc.h"

int ctl_cfg_fail(ctl_cfg_rd_t *r, const sl_yaml_node_t *n, const char *fmt, ...) {
    char msg[320];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    snprintf(r->err, r->errlen, "%s:%d: %s", r->path, n ? n->line : 1, msg);
    return -1;
}
