/*
 * hreply.h - the API's replies, shared by the HTTP routes (http.c): every
 * reply leaves through ctl_reply_body, which answers HEAD with the
 * headers only and turns a body that would pass limits.reply_buffer into
 * a 503 (hconn.h).
 */
#ifndef SLUICE_CTL_HREPLY_H
#define SLUICE_CTL_HREPLY_H

#include <stdarg.h>

#include "base/buf.h"
#include "net/hconn.h"

struct evhttp_request;

/* Sends body (consumed) as the reply to req with status and content type
 * ctype. Can't fail (a connection gone frees the request). */
void ctl_reply_body(ctl_hconns_t *hc, struct evhttp_request *req, int status, const char *ctype,
                    ctl_buf_t *body);
/* Sends the error object: code, field (NULL or "": none), position (< 0:
 * none) and the message from fmt. Counts it in http_errors. */
void ctl_reply_verror(ctl_hconns_t *hc, struct evhttp_request *req, int status, const char *code,
                      const char *field, long position, const char *fmt, va_list ap);

#endif
