/*
 * connlimit.c - per-port and per-peer connection limits with eviction of
 * the least recently idle connection (connlimit.h, which states the
 * algorithm and its workload).
 */
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>

#include "connlimit.h"
#include "sluice/alloc.h"

struct sl_connlimit_peer {
    uint8_t addr[17]; /* family tag (4 or 6; 0 unknown), then the address */
    uint64_t key;
    int64_t nconns;
};

void sl_connlimit_peer_addr(const struct sockaddr *sa, uint8_t out[SL_CONNLIMIT_ADDR_LEN]) {
    memset(out, 0, 17);
    if (sa != NULL && sa->sa_family == AF_INET6) {
        const uint8_t *a = ((const struct sockaddr_in6 *)sa)->sin6_addr.s6_addr;
        static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
        if (memcmp(a, mapped, 12) == 0) {
            out[0] = 4;
            memcpy(out + 1, a + 12, 4);
        } else {
            out[0] = 6;
            memcpy(out + 1, a, 16);
        }
    } else if (sa != NULL && sa->sa_family == AF_INET) {
        out[0] = 4;
        memcpy(out + 1, &((const struct sockaddr_in *)sa)->sin_addr, 4);
    }
}

uint64_t sl_connlimit_addr_key(const uint8_t addr[SL_CONNLIMIT_ADDR_LEN]) {
    uint64_t key = UINT64_C(0xcbf29ce484222325);
    for (int i = 0; i < 17; i++) key = (key ^ addr[i]) * UINT64_C(0x100000001b3);
    return key;
}

static sl_connlimit_peer_t *peer_find(const sl_connlimit_t *l, const uint8_t addr[17]) {
    uint64_t key = sl_connlimit_addr_key(addr);
    size_t it = 0;
    sl_connlimit_peer_t *pe;
    while ((pe = sl_hash_find_next(&l->peers, key, &it)) != NULL)
        if (memcmp(pe->addr, addr, 17) == 0) return pe;
    return NULL;
}

void sl_connlimit_init(sl_connlimit_t *l, int64_t max_conns, int64_t max_per_peer,
                       sl_connlimit_evict_fn evict, void *evict_arg) {
    *l = (sl_connlimit_t){.max_conns = max_conns, .max_per_peer = max_per_peer, .evict = evict,
                          .evict_arg = evict_arg};
    sl_hash_init(&l->peers);
    sl_list_init(&l->conns);
}

void sl_connlimit_fini(sl_connlimit_t *l) {
    size_t it = 0;
    for (const sl_hash_entry_t *e; (e = sl_hash_next(&l->peers, &it)) != NULL;) sl_free(e->val);
    sl_hash_fini(&l->peers);
    sl_list_t *it2, *nx;
    SL_LIST_FOREACH_SAFE(it2, nx, &l->conns)
        sl_free(SL_LIST_ENTRY(it2, sl_connlimit_conn_t, link));
    *l = (sl_connlimit_t){0};
}

/* Evicts the least recently idle connection (of peer, when not NULL).
 * True when one went. */
static bool evict_one(sl_connlimit_t *l, const sl_connlimit_peer_t *peer) {
    if (l->evict == NULL) return false;
    sl_list_t *it, *nx;
    SL_LIST_FOREACH_SAFE(it, nx, &l->conns) {
        sl_connlimit_conn_t *c = SL_LIST_ENTRY(it, sl_connlimit_conn_t, link);
        if (!c->idle || (peer && c->peer != peer)) continue;
        if (l->evict(l->evict_arg, c->ud)) {
            l->n.evicted++;
            return true;
        }
    }
    return false;
}

sl_connlimit_conn_t *sl_connlimit_admit(sl_connlimit_t *l, const struct sockaddr *sa, void *ud,
                                        int64_t now_mono_us) {
    uint8_t addr[SL_CONNLIMIT_ADDR_LEN];
    sl_connlimit_peer_addr(sa, addr);
    sl_connlimit_peer_t *peer = peer_find(l, addr);
    bool ok = true;
    if (peer && peer->nconns >= l->max_per_peer) ok = evict_one(l, peer);
    if (ok && (int64_t)l->n.conns >= l->max_conns) ok = evict_one(l, NULL);
    if (!ok) {
        l->n.refused++;
        return NULL;
    }
    peer = peer_find(l, addr); /* again: an eviction may have freed it */
    if (peer == NULL) {
        peer = sl_xcalloc(1, sizeof *peer);
        memcpy(peer->addr, addr, 17);
        peer->key = sl_connlimit_addr_key(addr);
        sl_hash_add(&l->peers, peer->key, peer);
    }
    sl_connlimit_conn_t *c = sl_xcalloc(1, sizeof *c);
    c->peer = peer;
    c->ud = ud;
    c->idle = true;
    c->idle_mono_us = now_mono_us;
    peer->nconns++;
    l->n.conns++;
    sl_list_insert_tail(&l->conns, &c->link);
    return c;
}

void sl_connlimit_release(sl_connlimit_t *l, sl_connlimit_conn_t *c) {
    if (c == NULL) return;
    sl_list_remove(&c->link);
    l->n.conns--;
    if (--c->peer->nconns == 0) {
        sl_hash_remove(&l->peers, c->peer->key, c->peer);
        sl_free(c->peer);
    }
    sl_free(c);
}

void sl_connlimit_set_idle(sl_connlimit_t *l, sl_connlimit_conn_t *c, bool idle,
                           int64_t now_mono_us) {
    c->idle = idle;
    if (idle) {
        c->idle_mono_us = now_mono_us;
        sl_list_remove(&c->link);
        sl_list_insert_tail(&l->conns, &c->link);
    }
}

int64_t sl_connlimit_peer_conns(const sl_connlimit_t *l, const struct sockaddr *sa) {
    uint8_t addr[SL_CONNLIMIT_ADDR_LEN];
    sl_connlimit_peer_addr(sa, addr);
    const sl_connlimit_peer_t *pe = peer_find(l, addr);
    return pe ? pe->nconns : 0;
}
