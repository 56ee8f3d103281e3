/*
 * jobnotify.h - a job's notifications (sbatch --mail-type, the spec's
 * mail_type and mail_user; docs/slurm.md "Notifications"): which event of
 * a job is sent, and what it says. Delivery is base/notify.h's, off the
 * loop.
 *
 * An event is sent when the job's mail_type names it: BEGIN at each start
 * (so again after a retry), one event at its end (FAIL when it failed and
 * FAIL is named, else END when END is named), REQUEUE when it goes back
 * to the queue (a retry, a node's loss, a preemption, a launch never
 * acknowledged), TIME_LIMIT when its time limit
 * stops it, INVALID_DEPEND when a dependency can never be met. The body:
 *
 *   {"event": "FAIL", "subject": "Sluice Job_id=12 Name=train Failed, ExitCode 3",
 *    "mail_user": "ana@example.org", "time": "2026-12-01T23:05:00Z",
 *    "job": {"id": 12, "name": "train", "tenant": "vision", "state": "failed",
 *            "reason": "task 0 exited with code 3", "exit_code": 3,
 *            "attempt": 2, "attempts": 3}}
 */
#ifndef SLUICE_CTL_JOBNOTIFY_H
#define SLUICE_CTL_JOBNOTIFY_H

#include "domain/ctl.h"

typedef enum ctl_notify_event {
    CTL_NOTIFY_BEGIN = 0,
    CTL_NOTIFY_END,
    CTL_NOTIFY_FAIL,
    CTL_NOTIFY_REQUEUE,
    CTL_NOTIFY_TIME_LIMIT,
    CTL_NOTIFY_INVALID_DEPEND,
    CTL_NOTIFY_NEVENTS
} ctl_notify_event_t;

/* Starts the notifier when the config has notify.command or .webhook.
 * 0, or -1 with a message in err. */
int ctl_notify_open(ctl_t *c, char *err, size_t errlen);
/* Stops it (ctl_notifier_stop); accepts a domain without one. */
void ctl_notify_close(ctl_t *c);
/* Sends event ev of j, if its mail_type names it and a notifier runs; why
 * (may be NULL) replaces j->reason in the body. Never blocks: a full queue
 * drops it (counted). O(size of the body). */
void ctl_notify_job(ctl_t *c, const ctl_job_t *j, ctl_notify_event_t ev, const char *why);
/* The end of j for good: FAIL or END as above. */
void ctl_notify_end(ctl_t *c, const ctl_job_t *j);

#endif
