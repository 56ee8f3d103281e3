/*
 * history.h - `sluice history` (`sluice sacct`): finished jobs from the
 * controller's database, a page at a time (GET /v1/history).
 *
 * A page is read on a thread of its own with a read-only connection of its
 * own, as a report is (report.h): the loop's thread only parses the query,
 * starts the read and writes the answer the thread prepared. Jobs come in
 * the order they ended (end time, then id) from the index jobs_end, so a
 * page is one range read whatever the history's length; filters (tenant,
 * state, name) are applied to the rows of the range, and one page examines
 * at most CTL_HISTORY_SCAN_MAX rows: a page may then hold fewer jobs than
 * asked, and its next_after says where the next one starts. The time of a
 * request is therefore bounded at any history size (bench/history_scale.py).
 */
#ifndef SLUICE_CTL_HISTORY_H
#define SLUICE_CTL_HISTORY_H

#include <stdbool.h>
#include <stdint.h>

#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include "base/buf.h"
#include "domain/ctl.h"

/* Most jobs in a page, and the default. */
#define CTL_HISTORY_LIMIT_MAX 10000
#define CTL_HISTORY_LIMIT_DEFAULT 1000
/* Most rows one page examines. */
#define CTL_HISTORY_SCAN_MAX 200000
/* Most reads at once; more get 503 (Retry-After). */
#define CTL_HISTORY_MAX_INFLIGHT 4
/* Most names in the tenant, state and name filters. */
#define CTL_HISTORY_MAX_NAMES 32

typedef struct ctl_history ctl_history_t;

/* The read's end, on the loop's thread: status 200 with the JSON page in
 * body, or 500 with the reason in body as plain text. req is the request
 * the read was started for; body is the callee's (ctl_buf_fini). */
typedef void (*ctl_history_done_fn)(void *ud, struct evhttp_request *req, int status,
                                    ctl_buf_t *body);

/*
 * Parses the query of GET /v1/history (docs/api.md): since, until
 * (seconds since the epoch; default: the last 24 hours), tenant, state,
 * name (each comma-separated), limit, after (the next_after of the page
 * before). A tenant's token sees its own tenant only (status 403), the
 * admin token every tenant. Then starts the read; done is called once,
 * later, from the loop, unless ctl_history_abandon_all comes first.
 * In-flight reads are kept on *list, the caller's.
 * Returns 0; or an HTTP status (400, 403, 503, 500) with the field and a
 * message that names it in field/msg. O(query) on the loop's thread.
 */
int ctl_history_start(ctl_t *c, const struct evkeyvalq *query, bool admin, int32_t tenant,
                      ctl_history_done_fn done, void *ud, struct evhttp_request *req,
                      ctl_history_t **list, char *field, size_t flen, char *msg, size_t mlen);

/* Waits for every read on *list and frees them without calling done (at
 * shutdown). Accepts an empty list. */
void ctl_history_abandon_all(ctl_history_t **list);

#endif
