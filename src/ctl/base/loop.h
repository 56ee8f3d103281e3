/*
 * loop.h - the bottom layer of sluiced: the one event base, the clocks, and
 * the per-iteration flush (Redis's beforeSleep).
 *
 * Any handler that changes something calls ctl_loop_kick; the flush event
 * then runs once, after the I/O callbacks already queued in the same
 * iteration, and calls the hooks that the upper layers registered at
 * start-up, in the fixed order of ctl_hook_stage_t:
 *
 *   RELEASE  the outputs of earlier flushes that became durable since
 *            (HA mode), before this flush's own work delays them;
 *   CYCLE    one scheduling cycle if anything changed (never on a tick);
 *   COMMIT   COMMIT of the iteration's transaction (group commit);
 *   REPLIES  only then the deferred HTTP replies and the event stream;
 *   AGENTS   and the queued agent messages (launch, kill, ack);
 *   TRIM     finished jobs past their retention dropped from memory.
 *
 * REPLIES and AGENTS are the output gate: each output queued before the
 * flush is tagged there with the store's sequence number of the last
 * commit (ctl_store_seq) and leaves, in the order it was queued, only once
 * ctl_store_durable has reached its tag. Outside HA mode a COMMIT is
 * durable when it returns, so every output leaves in the flush after it
 * was queued; in HA mode the COMMIT hands the commit to the replicated
 * store, outputs wait a round trip or so, and the HA layer kicks the loop
 * when durable advances so that a flush releases them. So nothing is
 * acknowledged and no task is launched before the state that explains it
 * is durable. The loop knows its hooks only as function pointers: it
 * calls no layer above it by name.
 */
#ifndef SLUICE_CTL_LOOP_H
#define SLUICE_CTL_LOOP_H

#include <stdbool.h>
#include <stdint.h>

struct event_base;
struct event;

typedef enum ctl_hook_stage {
    CTL_HOOK_RELEASE = 0,
    CTL_HOOK_CYCLE,
    CTL_HOOK_COMMIT,
    CTL_HOOK_REPLIES,
    CTL_HOOK_AGENTS,
    CTL_HOOK_TRIM,
    CTL_HOOK_NSTAGES
} ctl_hook_stage_t;

/* A hook does its stage's work and returns true when it left work for
 * another flush (the loop then runs the flush again next iteration). */
typedef bool (*ctl_hook_fn)(void *ud);

typedef struct ctl_loop {
    struct event_base *base;
    struct event *flush_ev;
    bool armed;            /* the flush event is active for this iteration */
    bool flushing;         /* the hooks are running */
    bool again;            /* kicked while flushing: run once more */
    struct {
        ctl_hook_fn fn;
        void *ud;
    } hooks[CTL_HOOK_NSTAGES];
} ctl_loop_t;

/* Wall clock, microseconds since the epoch. Can't fail. */
int64_t ctl_now_us(void);
/* Monotonic clock, microseconds. Can't fail. */
int64_t ctl_mono_us(void);

/* Creates the event base and the flush event in caller storage. 0, or -1
 * when libevent cannot (nothing to free then). */
int ctl_loop_init(ctl_loop_t *l);
/* Frees what ctl_loop_init made; accepts a loop that was never inited. */
void ctl_loop_fini(ctl_loop_t *l);
/* Registers fn(ud) for stage, replacing what was there. */
void ctl_loop_hook(ctl_loop_t *l, ctl_hook_stage_t stage, ctl_hook_fn fn, void *ud);
/* Arms the flush for this iteration (idempotent; a kick from inside a hook
 * makes the flush run again). Does nothing before ctl_loop_init. O(1). */
void ctl_loop_kick(ctl_loop_t *l);

#endif
