/*
 * notify.h - delivery of notifications off the event loop (docs/config.md,
 * "Notifications").
 *
 * The loop posts an event (a JSON text) into a bounded queue and goes on:
 * a post takes a mutex for a pointer swap and never waits for a delivery.
 * One worker thread takes events in order and delivers each to the
 * configured command (run by /bin/sh -c with the event on its stdin, as
 * sendmail reads a message; variables SLUICE_EVENT, SLUICE_JOB_ID,
 * SLUICE_MAIL_USER and SLUICE_SUBJECT beside it) and/or POSTs it to the
 * webhook (http://HOST[:PORT]/PATH, Content-Type: application/json; a 2xx
 * answer is a delivery). Each delivery is bounded by the timeout: a
 * command still running then is killed (its process group), a webhook
 * that has not answered is closed. A full queue drops the new event,
 * counted and logged (once per 100 drops). Knows nothing of jobs.
 */
#ifndef SLUICE_CTL_NOTIFY_H
#define SLUICE_CTL_NOTIFY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct ctl_notifier ctl_notifier_t;

typedef struct ctl_notify_stats {
    uint64_t posted;     /* accepted into the queue */
    uint64_t delivered;  /* the command exited 0 / the webhook answered 2xx (each target counts) */
    uint64_t failed;     /* a delivery that did not: exit status, timeout, refused connection */
    uint64_t dropped;    /* posts refused because the queue was full */
    uint64_t queued;     /* waiting now */
} ctl_notify_stats_t;

/* Starts the worker. command and webhook (either may be NULL, not both)
 * are copied; queue_max >= 1 events wait at most. 0 with *out, or -1 with
 * a message in err (the thread could not start; *out NULL). */
int ctl_notifier_start(ctl_notifier_t **out, const char *command, const char *webhook,
                       size_t queue_max, int64_t timeout_ms, char *err, size_t errlen);
/* Queues one event: its JSON text, and the values of the variables the
 * command sees (each may be NULL; all copied). False when the queue is
 * full: the event is dropped and counted. O(length). */
bool ctl_notifier_post(ctl_notifier_t *n, const char *json, const char *event, uint64_t job,
                       const char *mail_user, const char *subject);
/* The counters so far. Can't fail. */
void ctl_notifier_stats(ctl_notifier_t *n, ctl_notify_stats_t *out);
/* Stops the worker once its current delivery is done (bounded by the
 * timeout), drops what still waits, frees; accepts NULL. */
void ctl_notifier_stop(ctl_notifier_t *n);

#endif
