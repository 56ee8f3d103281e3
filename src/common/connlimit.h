/*
 * connlimit.h - who may hold a listening port's connections: a limit on
 * the connections open at once and on those of one peer address, with the
 * least recently idle connection evicted to make room (the design of the
 * controller's listening ports, src/ctl/base/listen.h; the agent's
 * exporter, src/agent/http.c, uses it).
 *
 * A new connection is admitted while the port holds fewer than max_conns
 * and its peer address fewer than max_per_peer. Over a limit, the oldest
 * idle connection (of that peer for the per-peer limit, of the port for the
 * other) is evicted to make room, so that a real client gets in past a
 * flood of silent sockets; when none is idle the new one is refused and
 * the caller closes it at once. A busy connection (a request in progress,
 * a reply still draining) is never evicted. A client holding many sockets
 * from one address therefore holds at most max_per_peer of them, and every
 * other address still finds room.
 *
 * Workload: a port holds at most a few hundred connections from few peer
 * addresses. Peers are counted in a hash table keyed by the address (the
 * port number does not count; an IPv4-mapped IPv6 address is its IPv4
 * address); a peer's record goes with its last connection. Connections sit
 * on one list in the order they last became idle, walked from the head for
 * a victim: O(connections), and only when a limit is reached.
 *
 * Pure bookkeeping: no socket, clock or log here. The caller passes the
 * time, closes what is evicted (through its callback) or refused, and logs.
 */
#ifndef SLUICE_COMMON_CONNLIMIT_H
#define SLUICE_COMMON_CONNLIMIT_H

#include <stdbool.h>
#include <stdint.h>

#include "sluice/hash.h"
#include "sluice/list.h"

struct sockaddr;

typedef struct sl_connlimit_peer sl_connlimit_peer_t;

/* One admitted connection. The limiter owns it; the connection's owner
 * keeps the pointer and gives it back with sl_connlimit_release. */
typedef struct sl_connlimit_conn {
    sl_list_t link;         /* on the limiter's conns, least recently idle first */
    sl_connlimit_peer_t *peer;
    bool idle;              /* no request in progress: may be evicted */
    int64_t idle_mono_us;   /* when it last became idle */
    void *ud;               /* the owner's record, given to evict */
} sl_connlimit_conn_t;

/* Closes the connection whose record is ud, calling sl_connlimit_release
 * before it returns true; or returns false to keep it. */
typedef bool (*sl_connlimit_evict_fn)(void *arg, void *ud);

typedef struct sl_connlimit_counters {
    uint64_t conns;         /* admitted and not yet released (a gauge) */
    uint64_t refused;       /* over a limit with none idle to evict */
    uint64_t evicted;       /* idle connections closed to make room */
} sl_connlimit_counters_t;

typedef struct sl_connlimit {
    int64_t max_conns, max_per_peer;
    sl_connlimit_evict_fn evict;    /* NULL: never evict, only refuse */
    void *evict_arg;
    sl_hash_t peers;                /* sl_connlimit_peer_t by a hash of the address */
    sl_list_t conns;                /* sl_connlimit_conn_t by link */
    sl_connlimit_counters_t n;
} sl_connlimit_t;

/* A peer's address as the limits count it: a family tag (4 or 6; 0 for
 * NULL or not IP), then the host's address, never the port; an IPv4-mapped
 * IPv6 address is its IPv4 address. And its hash. Can't fail; O(1). */
#define SL_CONNLIMIT_ADDR_LEN 17
void sl_connlimit_peer_addr(const struct sockaddr *sa, uint8_t out[SL_CONNLIMIT_ADDR_LEN]);
uint64_t sl_connlimit_addr_key(const uint8_t addr[SL_CONNLIMIT_ADDR_LEN]);

/* An empty limiter in caller storage, which must not move while it holds
 * connections (their links point at it); allocates nothing. Can't fail. */
void sl_connlimit_init(sl_connlimit_t *l, int64_t max_conns, int64_t max_per_peer,
                       sl_connlimit_evict_fn evict, void *evict_arg);
/* Frees what the limiter holds; connections not released are forgotten
 * (their pointers die). l is then as after a zeroing. */
void sl_connlimit_fini(sl_connlimit_t *l);
/* Counts a new connection from sa (NULL or not IP: one shared "unknown"
 * peer) for the owner's record ud, idle as of now_mono_us, evicting an idle
 * one first if a limit is reached. Returns the new connection, or NULL
 * when it is refused (the caller closes it). O(1), or O(connections) when
 * a limit is reached. */
sl_connlimit_conn_t *sl_connlimit_admit(sl_connlimit_t *l, const struct sockaddr *sa, void *ud,
                                        int64_t now_mono_us);
/* Forgets c (accepts NULL). O(1). */
void sl_connlimit_release(sl_connlimit_t *l, sl_connlimit_conn_t *c);
/* Marks c idle (last in the eviction order, stamped now_mono_us) or busy.
 * O(1). */
void sl_connlimit_set_idle(sl_connlimit_t *l, sl_connlimit_conn_t *c, bool idle,
                           int64_t now_mono_us);
/* How many connections the peer of sa holds now. O(1). */
int64_t sl_connlimit_peer_conns(const sl_connlimit_t *l, const struct sockaddr *sa);

#endif
