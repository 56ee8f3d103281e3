/*
 * console.c - the web console's files over HTTP (console.h).
 *
 * Every reply carries the Content-Security-Policy of views/ui.h (no inline
 * script: the page's one script is /ui/app.js), nosniff, no referrer and
 * no framing; the files are revalidated on each load (no-cache), which
 * costs a few kilobytes on a page that then lives on the event stream.
 */
#include <event2/buffer.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <stdio.h>

#include "base/buf.h"
#include "net/console.h"
#include "views/ui.h"

void ctl_console_http(ctl_hconns_t *conns, struct evhttp_request *req, const char *path) {
    struct evkeyvalq *oh = evhttp_request_get_output_headers(req);
    evhttp_add_header(oh, "Content-Security-Policy", CTL_UI_CSP);
    evhttp_add_header(oh, "X-Content-Type-Options", "nosniff");
    evhttp_add_header(oh, "Referrer-Policy", "no-referrer");
    evhttp_add_header(oh, "X-Frame-Options", "DENY");
    evhttp_add_header(oh, "Cache-Control", "no-cache");
    const ctl_ui_file_t *f = ctl_ui_find(path);
    struct evbuffer *out = evbuffer_new();
    if (f == NULL) {
        evhttp_add_header(oh, "Content-Type", "application/json");
        ctl_buf_t b;
        ctl_buf_init(&b);
        ctl_buf_puts(&b, "{\"error\":{\"code\":\"not_found\",\"message\":");
        char msg[256];
        snprintf(msg, sizeof msg, "the console has no file %.200s", path);
        ctl_buf_jstr(&b, msg);
        ctl_buf_puts(&b, "}}\n");
        evbuffer_add(out, b.p, b.len);
        ctl_buf_fini(&b);
        conns->c->n.http_errors++;
        ctl_hconns_send(conns, req, 404, "Not Found", out);
    } else {
        evhttp_add_header(oh, "Content-Type", f->ctype);
        if (evhttp_request_get_command(req) == EVHTTP_REQ_HEAD) {
            char cl[24];
            snprintf(cl, sizeof cl, "%zu", f->len);
            evhttp_add_header(oh, "Content-Length", cl);
        } else {
            evbuffer_add_reference(out, f->data, f->len, NULL, NULL);
        }
        ctl_hconns_send(conns, req, 200, "OK", out);
    }
    evbuffer_free(out);
}
