/*
 * cfgread.h - what every reader of sluiced's YAML config shares: its
 * errors, "PATH:LINE: message" with the line of the node a problem is at
 * (config.c, sitecfg.c and volcfg.c read their keys with it).
 */
#ifndef SLUICE_CTL_CFGREAD_H
#define SLUICE_CTL_CFGREAD_H

#include <stddef.h>

/* A config file's reader: the file's path and where its error goes. */
typedef struct ctl_cfg_rd {
    const char *path;
    char *err;
    size_t errlen;
} ctl_cfg_rd_t;
struct sl_yaml_node;
/* Writes "PATH:LINE: " and the message into r->err (n NULL: line 1) and
 * returns -1, for `return ctl_cfg_fail(...)`. The message is cut to 320
 * bytes. */
int ctl_cfg_fail(ctl_cfg_rd_t *r, const struct sl_yaml_node *n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
