/*
 * loop.c - the event base, the clocks and the flush that runs the upper
 * layers' hooks once per loop iteration (see loop.h).
 *
 * The flush is a libevent event made active by hand (event_active), not a
 * timer: libevent runs active events after the I/O callbacks of the
 * iteration that activated them, so every submission, exit and cancel of
 * one iteration shares one scheduling cycle and one COMMIT.
 */
#include <event2/event.h>
#include <stddef.h>
#include <time.h>

#include "base/loop.h"

int64_t ctl_now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int64_t ctl_mono_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void flush_cb(evutil_socket_t fd, short what, void *ud) {
    ctl_loop_t *l = ud;
    bool more = false;
    l->flushing = true;
    l->again = false;
    for (int s = 0; s < CTL_HOOK_NSTAGES; s++)
        if (l->hooks[s].fn && l->hooks[s].fn(l->hooks[s].ud))
            more = true;
    l->flushing = false;
    l->armed = false;
    if (more || l->again)
        ctl_loop_kick(l);
}

int ctl_loop_init(ctl_loop_t *l) {
    *l = (ctl_loop_t){0};
    l->base = event_base_new();
    if (l->base == NULL)
        return -1;
    l->flush_ev = event_new(l->base, -1, 0, flush_cb, l);
    if (l->flush_ev == NULL) {
        event_base_free(l->base);
        l->base = NULL;
        return -1;
    }
    return 0;
}

void ctl_loop_fini(ctl_loop_t *l) {
    if (l->flush_ev)
        event_free(l->flush_ev);
    if (l->base)
        event_base_free(l->base);
    *l = (ctl_loop_t){0};
}

void ctl_loop_hook(ctl_loop_t *l, ctl_hook_stage_t stage, ctl_hook_fn fn, void *ud) {
    l->hooks[stage].fn = fn;
    l->hooks[stage].ud = ud;
}

void ctl_loop_kick(ctl_loop_t *l) {
    if (l == NULL || l->flush_ev == NULL)
        return;
    if (l->flushing) {
        l->again = true;
        return;
    }
    if (l->armed)
        return;
    l->armed = true;
    event_active(l->flush_ev, EV_TIMEOUT, 0);
}
