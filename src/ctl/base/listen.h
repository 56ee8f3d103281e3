/*
 * listen.h - a listening port with connection limits and accept back-off,
 * for the HTTP API and the agent port (docs/config.md, "limits").
 *
 * A port admits a connection only while it holds fewer than max_conns and
 * the peer address fewer than max_per_peer; over a limit the oldest idle
 * connection (of that peer, or of the port) is evicted to make room, and
 * when none is idle the new one is refused and closed at once. accept()
 * failures (EMFILE, ENFILE, ENOBUFS...) pause the listener for a growing
 * interval instead of spinning. Refusals, evictions and accept failures
 * are counted (ctl_port_counters_t, for /metrics) and logged at most once
 * per CTL_LISTEN_LOG_INTERVAL_US per port, with the counts since the last
 * line.
 */
#ifndef SLUICE_CTL_LISTEN_H
#define SLUICE_CTL_LISTEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sluice/hash.h"
#include "sluice/list.h"

struct event_base;
struct event;
struct evconnlistener;
struct sockaddr;

#define CTL_LISTEN_LOG_INTERVAL_US (10 * 1000000)
#define CTL_LISTEN_BACKOFF_MIN_MS 10
#define CTL_LISTEN_BACKOFF_MAX_MS 1000
/* File descriptors kept free beyond both ports' connection limits: the
 * database, the log, the listeners, and accept()'s own short-lived fd. */
#define CTL_LISTEN_FD_RESERVE 64

/* A port's counters; they live in ctl_counters_t so /metrics sees them. */
typedef struct ctl_port_counters {
    uint64_t conns;         /* connections open now (a gauge) */
    uint64_t refused;       /* closed at once: over a limit, none idle to evict */
    uint64_t evicted;       /* idle connections closed to make room */
    uint64_t accept_errors; /* accept() failures other than EAGAIN/ECONNABORTED */
} ctl_port_counters_t;

typedef struct ctl_lport ctl_lport_t;
typedef struct ctl_lpeer ctl_lpeer_t;

/* One admitted connection. The port owns it; the owner of the connection
 * keeps the pointer and gives it back with ctl_lport_release. */
typedef struct ctl_lconn {
    sl_list_t link;         /* on the port's conns */
    ctl_lpeer_t *peer;
    bool idle;              /* no request in progress: may be evicted */
    int64_t idle_mono_us;   /* when it last became idle */
    void *ud;               /* the owner's record, given to evict */
} ctl_lconn_t;

/* Closes the connection whose record is ud (which then calls
 * ctl_lport_release before returning), or returns false to keep it (for
 * example while it still writes a reply). */
typedef bool (*ctl_lport_evict_fn)(void *arg, void *ud);

struct ctl_lport {
    const char *name;               /* "api", "agent": logs */
    struct event_base *base;
    struct evconnlistener *lst;
    bool own_lst;                   /* freed by ctl_lport_fini (else by evhttp) */
    int64_t max_conns, max_per_peer;
    ctl_port_counters_t *n;
    ctl_lport_evict_fn evict;       /* NULL: never evict */
    void *evict_arg;
    sl_hash_t peers;                /* ctl_lpeer_t by hash of the address */
    sl_list_t conns;                /* ctl_lconn_t by link: least recently idle first */
    struct event *resume_ev;        /* re-enables the listener after a pause */
    int64_t backoff_ms;             /* the next pause; 0 after a good accept */
    int64_t log_mono_us;            /* the last log line */
    ctl_port_counters_t logged;     /* the counters at that line */
};

/* Raises RLIMIT_NOFILE's soft limit to at least want (and to its hard
 * limit), past the hard limit too where the process may (root), and
 * returns the soft limit now in force. Can't fail. */
int64_t ctl_listen_raise_nofile(int64_t want);

/* Binds addr ("HOST:PORT", HOST a literal address or a name) and listens,
 * calling cb(listener, fd, sa, salen, ud) for each accepted socket (NULL:
 * the listener stays disabled until someone sets a callback, as
 * evhttp_bind_listener does; own_lst false then leaves it to that owner).
 * 0, or -1 with "NAME: ..." in err and nothing to free. */
int ctl_lport_open(ctl_lport_t *p, struct event_base *base, const char *name, const char *addr,
                   int64_t max_conns, int64_t max_per_peer, ctl_port_counters_t *n,
                   void (*cb)(struct evconnlistener *, int, struct sockaddr *, int, void *),
                   void *ud, bool own_lst, char *err, size_t errlen);
/* Frees the port's state and (own_lst) its listener, and any connection
 * not released. Accepts a port that ctl_lport_open never saw (all zeros)
 * or that it failed to open. */
void ctl_lport_fini(ctl_lport_t *p);
/* Counts a new connection from sa for the owner's record ud (idle to
 * begin with), evicting an idle one if a limit is reached. The new
 * connection, or NULL when it is refused (the caller closes it at once).
 * O(1), or O(connections) when the port is full. */
ctl_lconn_t *ctl_lport_admit(ctl_lport_t *p, const struct sockaddr *sa, void *ud);
/* Forgets lc (accepts NULL). O(1). */
void ctl_lport_release(ctl_lport_t *p, ctl_lconn_t *lc);
/* Marks lc idle (moving it to the end of the eviction order, stamped now)
 * or busy. O(1). */
void ctl_lport_set_idle(ctl_lport_t *p, ctl_lconn_t *lc, bool idle, int64_t now_mono_us);

#endif
