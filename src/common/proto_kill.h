/*
 * proto_kill.h - the fields of a `kill` message after its ids
 * (docs/protocol.md, "kill"): grace_ms, and the optional signal and
 * preempt of preemption, elastic shrinks and drains; and the signal
 * names both sides accept. proto.h includes this header and proto.c calls
 * its codec; the controller's config uses the signal names too.
 */
#ifndef SLUICE_COMMON_PROTO_KILL_H
#define SLUICE_COMMON_PROTO_KILL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

typedef struct sl_proto_kill {
    int64_t grace_ms;           /* >= 0; -1: absent (the agent's --grace) */
    /* The first signal, before SIGKILL after the grace (wire: its name,
     * "SIGUSR1"); 0: absent (SIGTERM, as before). */
    int32_t signal;
    /* The task is being preempted (requeued, not cancelled): before the
     * signal, the agent writes the time SIGKILL will come into the task's
     * SLUICE_PREEMPT_FILE (docs/elastic.md). Wire "preempt":true; absent:
     * false. */
    bool preempt;
} sl_proto_kill_t;

/* The signal called name ("SIGUSR1" or "USR1"; one of HUP, INT, QUIT,
 * USR1, USR2, TERM, KILL, CONT, WINCH) into *sig. 0, or -1 for a name not
 * on that list. Can't fail otherwise; allocates nothing. */
int sl_proto_signal_parse(const char *name, int32_t *sig);
/* "SIGUSR1" for a signal of that list, else NULL. */
const char *sl_proto_signal_name(int32_t sig);
/* The list, for error messages: "SIGHUP, SIGINT, ..." (static text). */
const char *sl_proto_signal_names(void);

/* Writes the kill's fields after its ids (`,"grace_ms":5000,"signal":"SIGUSR1",
 * "preempt":true`; nothing for absent ones) into buf (cap bytes, snprintf semantics: the
 * length needed is returned, what fits is written, no NUL). */
size_t sl__proto_kill_encode(const sl_proto_kill_t *k, char *buf, size_t cap);
/* Reads them from the message object o into *k (grace_ms -1, signal 0, preempt
 * false when absent). 0, or -1 with "kill: FIELD: ..." in err. */
int sl__proto_kill_decode(json_t *o, sl_proto_kill_t *k, char *err, size_t errlen);

#endif
