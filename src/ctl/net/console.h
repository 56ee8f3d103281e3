/*
 * console.h - GET /ui/...: the web console's files (views/ui.h) with their
 * security headers (docs/console.md). They need no token: the page asks
 * for one and sends it on each API request itself.
 */
#ifndef SLUICE_CTL_CONSOLE_H
#define SLUICE_CTL_CONSOLE_H

#include "net/hconn.h"

struct evhttp_request;

/* Answers req with the console's file at path, or 404 in JSON. */
void ctl_console_http(ctl_hconns_t *conns, struct evhttp_request *req, const char *path);

#endif
