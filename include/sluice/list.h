/*
 * list.h - the one intrusive doubly linked list of Sluice, header-only (in
 * the spirit of libuv's uv__queue and the Linux kernel's list_head).
 *
 * An element embeds an sl_list_t node and is found again from it with
 * SL_LIST_ENTRY (container-of); the list itself is one more sl_list_t, the
 * head, that the owner keeps. The list is circular through the head: an
 * empty head points at itself, and the first and last elements point at the
 * head, so that inserting and removing never test for an end and every
 * operation is a few pointer stores. Nothing here allocates, nothing fails,
 * and every operation is O(1) except the walks (O(length)).
 *
 * Who uses it: the live tasks of a node (an agent's failure or hello visits
 * only that node's tasks), the connections of a listening port in the order
 * they last became idle (eviction walks from the oldest), and the agent's
 * exporter connections. Each of them links and unlinks on every task start,
 * end or request, so linking must allocate nothing.
 *
 * Contracts:
 * - A head must be sl_list_init'ed before any other call, and must not move
 *   in memory (be copied, or its storage reallocated) while it holds
 *   elements: they point at it. An element's node must not move while it
 *   is on a list. A zeroed sl_list_t is not an empty list.
 * - An element is on at most one list through a given node. The list does
 *   not own its elements: it never frees them, and the owner removes an
 *   element before freeing it.
 * - sl_list_remove leaves the node linked to itself, so removing it again is
 *   harmless; whether an element is on a list is the owner's to record (a
 *   zeroed node, as sl_xcalloc leaves it, is neither on a list nor safe to
 *   remove).
 */
#ifndef SLUICE_LIST_H
#define SLUICE_LIST_H

#include <stdbool.h>
#include <stddef.h>

typedef struct sl_list {
    struct sl_list *next;
    struct sl_list *prev;
} sl_list_t;

/* The element of type `type` whose member `field` is the node at ptr. */
#define SL_LIST_ENTRY(ptr, type, field) ((type *)((char *)(ptr) - offsetof(type, field)))

/* Every node of list l, first to last, in the sl_list_t pointer it. The
 * body must not remove it (use SL_LIST_FOREACH_SAFE for that). */
#define SL_LIST_FOREACH(it, l) for ((it) = (l)->next; (it) != (l); (it) = (it)->next)

/* Every node of list l, first to last, in it, with nx holding the node after
 * it, read before the body runs: the body may remove it (and only it, of
 * the nodes still to come: removing nx would leave the walk on a node off
 * the list). */
#define SL_LIST_FOREACH_SAFE(it, nx, l)                                                        \
    for ((it) = (l)->next, (nx) = (it)->next; (it) != (l); (it) = (nx), (nx) = (it)->next)

/* Makes l an empty list (or a node linked to nothing). Can't fail. O(1). */
static inline void sl_list_init(sl_list_t *l) {
    l->next = l;
    l->prev = l;
}

/* True when list l holds no element. O(1). */
static inline bool sl_list_empty(const sl_list_t *l) {
    return l->next == l;
}

/* The first node of l, or NULL when it is empty. O(1). */
static inline sl_list_t *sl_list_first(const sl_list_t *l) {
    return l->next == l ? NULL : l->next;
}

/* The last node of l, or NULL when it is empty. O(1). */
static inline sl_list_t *sl_list_last(const sl_list_t *l) {
    return l->prev == l ? NULL : l->prev;
}

/* The node after e on list l, or NULL when e is the last. O(1). */
static inline sl_list_t *sl_list_next(const sl_list_t *l, const sl_list_t *e) {
    return e->next == l ? NULL : e->next;
}

/* Puts e (not on a list) first on l. Can't fail. O(1). */
static inline void sl_list_insert_head(sl_list_t *l, sl_list_t *e) {
    e->next = l->next;
    e->prev = l;
    l->next->prev = e;
    l->next = e;
}

/* Puts e (not on a list) last on l. Can't fail. O(1). */
static inline void sl_list_insert_tail(sl_list_t *l, sl_list_t *e) {
    e->next = l;
    e->prev = l->prev;
    l->prev->next = e;
    l->prev = e;
}

/* Takes e off the list it is on and links it to itself (so a second remove
 * does nothing). The list's head is not needed. Can't fail. O(1). */
static inline void sl_list_remove(sl_list_t *e) {
    e->prev->next = e->next;
    e->next->prev = e->prev;
    e->next = e;
    e->prev = e;
}

#endif
