/*
 * loop.c - the agent's event loop and clocks (loop.h).
 *
 * One libevent base, created with the default backend (epoll on Linux).
 * Signals reach the loop as events (evsignal_new), so SIGCHLD and SIGTERM
 * are handled between callbacks, never inside one.
 */
#include <time.h>

#include "loop.h"

double agent_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

int64_t agent_mono_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

struct timeval agent_tv_ms(int64_t ms) {
    struct timeval tv = {(time_t)(ms / 1000), (suseconds_t)(ms % 1000) * 1000};
    return tv;
}

struct event_base *agent_loop_create(void) {
    return event_base_new();
}
