/*
 * hreply.c - the API's replies (hreply.h): a JSON or text body through the
 * connection limits (hconn.h), and the error object every refusal has,
 * {"error":{"code":..,"field":..,"position":..,"message":..}}.
 */
#include <event2/buffer.h>
#include <event2/http.h>
#include <stdio.h>

#include "net/hreply.h"

static void free_body(const void *data, size_t len, void *arg) {
    sl_free((void *)data);
}

/* The reply to req: a HEAD request gets the headers of the GET with the
 * body's Content-Length and no body; a large body that would pass
 * limits.reply_buffer becomes a 503 (hconn.h). */
void ctl_reply_body(ctl_hconns_t *hc, struct evhttp_request *req, int status, const char *ctype,
                    ctl_buf_t *body) {
    if (!ctl_hconns_room(hc, body->len)) {
        hc->c->n.replies_refused++;
        hc->c->n.http_errors++;
        ctl_buf_fini(body);
        ctl_buf_puts(body, "{\"error\":{\"code\":\"unavailable\",\"message\":\"too many unread "
                           "replies are queued (limits.reply_buffer); retry later\"}}\n");
        status = 503;
        ctype = "application/json";
        evhttp_remove_header(evhttp_request_get_output_headers(req), "Sluice-Next-After");
        evhttp_add_header(evhttp_request_get_output_headers(req), "Retry-After", "1");
    }
    struct evbuffer *out = evbuffer_new();
    size_t len;
    char *p = ctl_buf_steal(body, &len);
    struct evkeyvalq *oh = evhttp_request_get_output_headers(req);
    if (evhttp_request_get_command(req) == EVHTTP_REQ_HEAD) {
        char cl[24];
        snprintf(cl, sizeof cl, "%zu", len);
        evhttp_add_header(oh, "Content-Length", cl);
        sl_free(p);
    } else if (p) {
        evbuffer_add_reference(out, p, len, free_body, NULL);
    }
    evhttp_add_header(oh, "Content-Type", ctype);
    const char *reason = status == 200   ? "OK"
                         : status == 201 ? "Created"
                         : status == 400 ? "Bad Request"
                         : status == 401 ? "Unauthorized"
                         : status == 403 ? "Forbidden"
                         : status == 404 ? "Not Found"
                         : status == 405 ? "Method Not Allowed"
                         : status == 409 ? "Conflict"
                         : status == 413 ? "Payload Too Large"
                         : status == 429 ? "Too Many Requests"
                         : status == 500 ? "Internal Server Error"
                         : status == 502 ? "Bad Gateway"
                         : status == 503 ? "Service Unavailable"
                         : status == 504 ? "Gateway Timeout"
                                         : "Error";
    ctl_hconns_send(hc, req, status, reason, out);
    evbuffer_free(out);
}

void ctl_reply_verror(ctl_hconns_t *hc, struct evhttp_request *req, int status, const char *code,
                      const char *field, long position, const char *fmt, va_list ap) {
    char msg[1200];
    vsnprintf(msg, sizeof msg, fmt, ap);
    ctl_buf_t b;
    ctl_buf_init(&b);
    ctl_buf_puts(&b, "{\"error\":{\"code\":");
    ctl_buf_jstr(&b, code);
    if (field && field[0]) {
        ctl_buf_puts(&b, ",\"field\":");
        ctl_buf_jstr(&b, field);
    }
    if (position >= 0) {
        ctl_buf_puts(&b, ",\"position\":");
        ctl_buf_i64(&b, position);
    }
    ctl_buf_puts(&b, ",\"message\":");
    ctl_buf_jstr(&b, msg);
    ctl_buf_puts(&b, "}}\n");
    hc->c->n.http_errors++;
    ctl_reply_body(hc, req, status, "application/json", &b);
}

