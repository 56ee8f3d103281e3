/*
 * jobnotify.c - a job's notifications (jobnotify.h).
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "base/notify.h"
#include "domain/jobnotify.h"
#include "log.h"
#include "mailtype.h"

static const struct {
    const char *name;      /* the event as the body and SLUICE_EVENT name it */
    uint32_t bit;          /* the mail type that asks for it */
    const char *said;      /* Slurm's word in a subject */
} events[CTL_NOTIFY_NEVENTS] = {
    [CTL_NOTIFY_BEGIN] = {"BEGIN", SL_MAIL_BEGIN, "Began"},
    [CTL_NOTIFY_END] = {"END", SL_MAIL_END, "Ended"},
    [CTL_NOTIFY_FAIL] = {"FAIL", SL_MAIL_FAIL, "Failed"},
    [CTL_NOTIFY_REQUEUE] = {"REQUEUE", SL_MAIL_REQUEUE, "Requeued"},
    [CTL_NOTIFY_TIME_LIMIT] = {"TIME_LIMIT", SL_MAIL_TIME_LIMIT, "Reached time limit"},
    [CTL_NOTIFY_INVALID_DEPEND] = {"INVALID_DEPEND", SL_MAIL_INVALID_DEPEND,
                                   "Dependency never satisfied"},
};

int ctl_notify_open(ctl_t *c, char *err, size_t errlen) {
    const ctl_site_cfg_t *s = &c->site;
    if (s->notify_command == NULL && s->notify_webhook == NULL)
        return 0;
    return ctl_notifier_start(&c->notifier, s->notify_command, s->notify_webhook,
                              (size_t)s->notify_queue, s->notify_timeout_ms, err, errlen);
}

void ctl_notify_close(ctl_t *c) {
    ctl_notifier_stop(c->notifier);
    c->notifier = NULL;
}

static uint32_t mask_of(const ctl_job_t *j) {
    const char *t = json_string_value(json_object_get(j->spec, "mail_type"));
    uint32_t m = 0;
    char err[160];
    if (t == NULL || sl_mail_types_parse(t, &m, err, sizeof err) < 0)
        return 0;
    return m;
}

void ctl_notify_job(ctl_t *c, const ctl_job_t *j, ctl_notify_event_t ev, const char *why) {
    if (c->notifier == NULL || ev < 0 || ev >= CTL_NOTIFY_NEVENTS ||
        !(mask_of(j) & events[ev].bit))
        return;
    const char *name = json_string_value(json_object_get(j->spec, "name"));
    const char *tenant = json_string_value(json_object_get(j->spec, "tenant"));
    const char *user = json_string_value(json_object_get(j->spec, "mail_user"));
    if (user == NULL)
        user = tenant; /* Slurm mails the submitting user */
    int32_t retries = j->retries;
    const char *reason = why ? why : j->reason;
    char subject[SL_NAME_MAX + 160];
    int o = snprintf(subject, sizeof subject, "Sluice Job_id=%llu Name=%s %s",
                     (unsigned long long)j->id, name ? name : "", events[ev].said);
    if (ev == CTL_NOTIFY_END || ev == CTL_NOTIFY_FAIL) {
        if (j->has_exit && o > 0 && (size_t)o < sizeof subject)
            snprintf(subject + o, sizeof subject - (size_t)o, ", ExitCode %d", j->exit_code);
        else if (o > 0 && (size_t)o < sizeof subject)
            snprintf(subject + o, sizeof subject - (size_t)o, ", %s",
                     ctl_job_state_name(j->state));
    }
    char when[32];
    time_t now = (time_t)(ctl_now_us() / 1000000);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
    json_t *job = json_pack("{s:I, s:s, s:s, s:s, s:s}", "id", (json_int_t)j->id, "name",
                            name ? name : "", "tenant", tenant ? tenant : "", "state",
                            ctl_job_state_name(j->state), "reason", reason ? reason : "");
    json_object_set_new(job, "exit_code", j->has_exit ? json_integer(j->exit_code) : json_null());
    /* The attempt this event is of: a REQUEUE's is the one that failed. */
    int32_t attempt = j->retries_used + (ev == CTL_NOTIFY_REQUEUE ? 0 : 1);
    json_object_set_new(job, "attempt", json_integer(attempt));
    json_object_set_new(job, "attempts", json_integer(retries + 1));
    json_t *body = json_pack("{s:s, s:s, s:s, s:s, s:o}", "event", events[ev].name, "subject",
                             subject, "mail_user", user ? user : "", "time", when, "job", job);
    char *text = json_dumps(body, JSON_COMPACT);
    json_decref(body);
    if (text == NULL)
        return;
    ctl_notifier_post(c->notifier, text, events[ev].name, j->id, user, subject);
    free(text);
    if (sl_log_enabled(SL_LOG_DEBUG, "notify"))
        sl_log(SL_LOG_DEBUG, "notify", "job=%llu event=%s queued", (unsigned long long)j->id,
               events[ev].name);
}

void ctl_notify_end(ctl_t *c, const ctl_job_t *j) {
    if (c->notifier == NULL)
        return;
    uint32_t m = mask_of(j);
    if (j->state == CTL_JOB_FAILED && (m & SL_MAIL_FAIL))
        ctl_notify_job(c, j, CTL_NOTIFY_FAIL, NULL);
    else
        ctl_notify_job(c, j, CTL_NOTIFY_END, NULL);
}
