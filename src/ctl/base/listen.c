/*
 * listen.c - listening ports with connection limits and accept back-off
 * (see listen.h).
 *
 * Why: a client that opens sockets and sends nothing must not be able to
 * stall the controller. Without limits, 1,100 idle sockets took every file
 * descriptor; accept() then failed with EMFILE on each loop iteration (the
 * pending connection stays in the backlog, so the listener stays readable)
 * and libevent logged each failure: 100% CPU and hundreds of MB of log.
 *
 * Limits: every admitted connection is on one list in the order it last
 * became idle, and counted per peer address in a hash table (peers are
 * few; a peer's record goes when its last connection does). Over a limit
 * the list is walked from its head for the oldest idle connection (of the
 * peer for the per-peer limit): evicting it lets a real client in past a
 * flood of silent sockets from the same address, which a plain refusal
 * would not; a busy connection (a request in progress, a reply still
 * draining) is never evicted. The walk is O(connections) and happens only
 * when the port is full.
 *
 * Back-off: an accept() failure disables the listener and a timer enables
 * it again after CTL_LISTEN_BACKOFF_MIN_MS, doubling up to
 * CTL_LISTEN_BACKOFF_MAX_MS while failures continue; a good accept resets
 * it. Nothing is logged per failure: one line per interval says how many.
 */
#include <errno.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <event2/util.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include "base/listen.h"
#include "log.h"
#include "base/loop.h"
#include "connlimit.h"
#include "osutil.h"
#include "sluice/alloc.h"

struct ctl_lpeer {
    uint8_t addr[17]; /* family tag, then the IPv4 or IPv6 address */
    uint64_t key;
    int64_t nconns;
};

int64_t ctl_listen_raise_nofile(int64_t want) {
    /* Past the hard limit first, for a controller of 10,000 agents whose
     * hard limit is lower (docs/scale.md); then up to the hard limit. */
    sl_nofile_raise(want);
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
        return 1024;
    if (rl.rlim_cur < rl.rlim_max) {
        rlim_t old = rl.rlim_cur;
        rl.rlim_cur = rl.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
            rl.rlim_cur = old;
    }
    return rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > INT32_MAX ? INT32_MAX : (int64_t)rl.rlim_cur;
}

static ctl_lpeer_t *peer_get(ctl_lport_t *p, const uint8_t addr[17], bool create) {
    uint64_t key = sl_connlimit_addr_key(addr);
    size_t it = 0;
    ctl_lpeer_t *pe;
    while ((pe = sl_hash_find_next(&p->peers, key, &it)) != NULL)
        if (memcmp(pe->addr, addr, 17) == 0)
            return pe;
    if (!create)
        return NULL;
    pe = sl_xcalloc(1, sizeof *pe);
    memcpy(pe->addr, addr, 17);
    pe->key = key;
    sl_hash_add(&p->peers, key, pe);
    return pe;
}

/* One line per interval at most, with what happened since the last. */
static void log_events(ctl_lport_t *p) {
    int64_t now = ctl_mono_us();
    if (p->log_mono_us != 0 && now - p->log_mono_us < CTL_LISTEN_LOG_INTERVAL_US)
        return;
    sl_log(SL_LOG_WARN, "listen",
           "port=%s refused=%llu evicted=%llu accept_errors=%llu since the last such line "
           "(limits: %lld connections, %lld per peer; open now: %llu)",
           p->name, (unsigned long long)(p->n->refused - p->logged.refused),
           (unsigned long long)(p->n->evicted - p->logged.evicted),
           (unsigned long long)(p->n->accept_errors - p->logged.accept_errors), (long long)p->max_conns,
           (long long)p->max_per_peer, (unsigned long long)p->n->conns);
    p->logged = *p->n;
    p->log_mono_us = now;
}

static void resume_cb(evutil_socket_t fd, short what, void *ud) {
    ctl_lport_t *p = ud;
    evconnlistener_enable(p->lst);
}

/* The open ports, for error_cb: libevent passes it the listener's user
 * data, which evhttp_bind_listener sets to the evhttp, so the port is
 * found by its listener here (a process has two ports). */
#define MAX_PORTS 8
static ctl_lport_t *open_ports[MAX_PORTS];

static void error_cb(struct evconnlistener *lst, void *ud) {
    int err = EVUTIL_SOCKET_ERROR();
    ctl_lport_t *p = NULL;
    for (int i = 0; i < MAX_PORTS && p == NULL; i++)
        if (open_ports[i] && open_ports[i]->lst == lst)
            p = open_ports[i];
    if (p == NULL)
        return; /* every listener is opened by ctl_lport_open: cannot happen */
    p->n->accept_errors++;
    if (p->backoff_ms == 0)
        p->backoff_ms = CTL_LISTEN_BACKOFF_MIN_MS;
    if (p->n->accept_errors - p->logged.accept_errors == 1 || p->log_mono_us == 0)
        sl_log(SL_LOG_WARN, "listen", "port=%s accept failed: %s; pausing accepts, %lld ms at first",
               p->name, evutil_socket_error_to_string(err), (long long)p->backoff_ms);
    log_events(p);
    evconnlistener_disable(lst);
    struct timeval tv = {(time_t)(p->backoff_ms / 1000), (suseconds_t)(p->backoff_ms % 1000) * 1000};
    event_add(p->resume_ev, &tv);
    p->backoff_ms *= 2;
    if (p->backoff_ms > CTL_LISTEN_BACKOFF_MAX_MS)
        p->backoff_ms = CTL_LISTEN_BACKOFF_MAX_MS;
}

/* "HOST:PORT" (HOST may be [v6]) to a socket address, resolving a name. */
static int parse_addr(const char *addr, struct sockaddr_storage *ss, int *sslen) {
    *sslen = (int)sizeof *ss;
    if (evutil_parse_sockaddr_port(addr, (struct sockaddr *)ss, sslen) == 0)
        return 0;
    const char *colon = strrchr(addr, ':');
    char host[256];
    if (colon == NULL || colon == addr || (size_t)(colon - addr) >= sizeof host || colon[1] == '\0')
        return -1;
    memcpy(host, addr, (size_t)(colon - addr));
    host[colon - addr] = '\0';
    struct evutil_addrinfo hints = {0}, *res = NULL;
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = EVUTIL_AI_PASSIVE | EVUTIL_AI_ADDRCONFIG;
    if (evutil_getaddrinfo(host, colon + 1, &hints, &res) != 0 || res == NULL)
        return -1;
    memcpy(ss, res->ai_addr, res->ai_addrlen);
    *sslen = (int)res->ai_addrlen;
    evutil_freeaddrinfo(res);
    return 0;
}

int ctl_lport_open(ctl_lport_t *p, struct event_base *base, const char *name, const char *addr,
                   int64_t max_conns, int64_t max_per_peer, ctl_port_counters_t *n,
                   void (*cb)(struct evconnlistener *, int, struct sockaddr *, int, void *),
                   void *ud, bool own_lst, char *err, size_t errlen) {
    *p = (ctl_lport_t){.name = name, .base = base, .own_lst = own_lst, .max_conns = max_conns,
                       .max_per_peer = max_per_peer, .n = n};
    sl_hash_init(&p->peers);
    sl_list_init(&p->conns);
    struct sockaddr_storage ss;
    int sslen;
    if (parse_addr(addr, &ss, &sslen) < 0) {
        snprintf(err, errlen, "%s: cannot parse \"%s\" (want HOST:PORT)", name, addr);
        return -1;
    }
    p->lst = evconnlistener_new_bind(base, cb, ud,
                                     LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE | LEV_OPT_CLOSE_ON_EXEC,
                                     512, (struct sockaddr *)&ss, sslen);
    if (p->lst == NULL) {
        snprintf(err, errlen, "%s: cannot listen on %s: %s", name, addr,
                 evutil_socket_error_to_string(EVUTIL_SOCKET_ERROR()));
        return -1;
    }
    int slot = 0;
    while (slot < MAX_PORTS && open_ports[slot] != NULL)
        slot++;
    if (slot == MAX_PORTS) {
        snprintf(err, errlen, "%s: too many ports", name);
        evconnlistener_free(p->lst);
        p->lst = NULL;
        return -1;
    }
    open_ports[slot] = p;
    evconnlistener_set_error_cb(p->lst, error_cb);
    p->resume_ev = evtimer_new(base, resume_cb, p);
    return 0;
}

void ctl_lport_fini(ctl_lport_t *p) {
    for (int i = 0; i < MAX_PORTS; i++)
        if (open_ports[i] == p)
            open_ports[i] = NULL;
    size_t it = 0;
    for (const sl_hash_entry_t *e; (e = sl_hash_next(&p->peers, &it)) != NULL;)
        sl_free(e->val);
    sl_hash_fini(&p->peers);
    /* A port that was never opened is all zeros: its list was never
     * initialised and holds nothing (the owners' fini runs either way). */
    sl_list_t *ln, *nx;
    if (p->conns.next != NULL)
        SL_LIST_FOREACH_SAFE(ln, nx, &p->conns)
            sl_free(SL_LIST_ENTRY(ln, ctl_lconn_t, link));
    if (p->resume_ev)
        event_free(p->resume_ev);
    if (p->own_lst && p->lst)
        evconnlistener_free(p->lst);
    *p = (ctl_lport_t){0};
}

/* Evicts the least recently idle connection (of peer, when not NULL).
 * True when one went. */
static bool evict_one(ctl_lport_t *p, const ctl_lpeer_t *peer) {
    if (p->evict == NULL)
        return false;
    /* Safe against removal: evict closes lc, which releases it. */
    sl_list_t *it, *nx;
    SL_LIST_FOREACH_SAFE(it, nx, &p->conns) {
        ctl_lconn_t *lc = SL_LIST_ENTRY(it, ctl_lconn_t, link);
        if (!lc->idle || (peer && lc->peer != peer))
            continue;
        if (p->evict(p->evict_arg, lc->ud)) {
            p->n->evicted++;
            log_events(p);
            return true;
        }
    }
    return false;
}

ctl_lconn_t *ctl_lport_admit(ctl_lport_t *p, const struct sockaddr *sa, void *ud) {
    uint8_t addr[17];
    sl_connlimit_peer_addr(sa, addr);
    ctl_lpeer_t *peer = peer_get(p, addr, false);
    bool ok = true;
    if (peer && peer->nconns >= p->max_per_peer)
        ok = evict_one(p, peer);
    if (ok && (int64_t)p->n->conns >= p->max_conns)
        ok = evict_one(p, NULL);
    if (!ok) {
        p->n->refused++;
        log_events(p);
        return NULL;
    }
    p->backoff_ms = 0;
    peer = peer_get(p, addr, true); /* again: an eviction may have freed it */
    ctl_lconn_t *lc = sl_xcalloc(1, sizeof *lc);
    lc->peer = peer;
    lc->ud = ud;
    lc->idle = true;
    lc->idle_mono_us = ctl_mono_us();
    peer->nconns++;
    p->n->conns++;
    sl_list_insert_tail(&p->conns, &lc->link);
    return lc;
}

void ctl_lport_release(ctl_lport_t *p, ctl_lconn_t *lc) {
    if (lc == NULL)
        return;
    sl_list_remove(&lc->link);
    p->n->conns--;
    if (--lc->peer->nconns == 0) {
        sl_hash_remove(&p->peers, lc->peer->key, lc->peer);
        sl_free(lc->peer);
    }
    sl_free(lc);
}

void ctl_lport_set_idle(ctl_lport_t *p, ctl_lconn_t *lc, bool idle, int64_t now_mono_us) {
    lc->idle = idle;
    if (idle) {
        lc->idle_mono_us = now_mono_us;
        sl_list_remove(&lc->link);
        sl_list_insert_tail(&p->conns, &lc->link);
    }
}
