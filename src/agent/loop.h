/*
 * loop.h - the bottom layer of sluice-agent: its one event loop and its
 * clocks. Every other layer runs inside this loop's callbacks (no threads),
 * so state needs no locks, and reads time only through here.
 */
#ifndef SLUICE_AGENT_LOOP_H
#define SLUICE_AGENT_LOOP_H

#include <stdint.h>
#include <sys/time.h>

#include <event2/event.h>

/* Wall-clock time in seconds since the epoch, as protocol.md's "time"
 * fields. Can't fail. */
double agent_now(void);

/* Monotonic microseconds, for durations (never for protocol times). */
int64_t agent_mono_us(void);

/* A relative timeout of ms milliseconds (>= 0) for event_add. */
struct timeval agent_tv_ms(int64_t ms);

/* The agent's event loop; NULL when libevent cannot create one. The caller
 * frees it with event_base_free once every event on it is freed. */
struct event_base *agent_loop_create(void);

#endif
