/*
 * proto_step.h - the messages of job steps (docs/protocol.md, "Job steps"):
 * one codec for the controller <-> agent messages of a step and for the
 * agent <-> step daemon (sluice-stepd) messages on a node, which are the
 * same objects less the job (a step daemon's connection is its job's).
 *
 * A step is N ranks of one command started inside a running allocation.
 * The controller places the ranks on the allocation's tasks (task = the
 * slot whose cgroup, user and GPUs a rank runs in) and sends each node one
 * step_run with its ranks; the agent hands each rank to the step daemon of
 * its task, which forks it. Output and ends come back the same way:
 *
 *   controller -> agent   step_run     {job, step, argv, env, cwd, output, error,
 *                                       ranks: [{rank, task, env}]}
 *                         step_signal  {job, step, signal}
 *                         step_stdin   {job, step, rank, data}   (srun --pty's input)
 *   agent -> controller   step_started {job, step, rank, pid}
 *                         step_out     {job, step, rank, fd, data}
 *                         step_exit    {job, step, rank, exit_code, signal, error}
 *
 *   agent -> stepd        run          {step, rank, argv, env, cwd, output, error}
 *                         signal       {step, signal}
 *                         stdin        {step, rank, data}
 *   stepd -> agent        started, out, exit (as above, without job)
 *
 * Lines are newline-delimited JSON objects of at most SL_PROTO_MAX_LINE
 * bytes, as the rest of the protocol. Both ends ignore a type they do not
 * know, so an agent without steps ignores step_run (and the controller's
 * step then ends with "the agent of node N does not run steps" when its
 * ranks never start: see ctl's steps.c). Decoded strings are borrowed from
 * the JSON document the message keeps (sl_step_msg_fini releases it).
 */
#ifndef SLUICE_COMMON_PROTO_STEP_H
#define SLUICE_COMMON_PROTO_STEP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "proto.h" /* sl_proto_kv_t, SL_PROTO_MAX_LINE */

/* The most ranks one step may have, and the most output bytes one out
 * message carries (escaping keeps the line under 1 MiB). */
#define SL_STEP_MAX_RANKS 4096
#define SL_STEP_OUT_CHUNK (64 * 1024)

typedef enum sl_step_type {
    SL_STEP_NONE = 0,
    SL_STEP_RUN,      /* "step_run" / "run" */
    SL_STEP_SIGNAL,   /* "step_signal" / "signal" */
    SL_STEP_STARTED,  /* "step_started" / "started" */
    SL_STEP_OUT,      /* "step_out" / "out" */
    SL_STEP_EXIT,     /* "step_exit" / "exit" */
    SL_STEP_STDIN,    /* "step_stdin" / "stdin": input for a --pty rank */
    SL_STEP_NTYPES
} sl_step_type_t;

/* Which link a line travels: the agent port (types "step_*", with job) or
 * a node's step daemon socket (bare names, no job). */
typedef enum sl_step_link {
    SL_STEP_LINK_CTL = 0,
    SL_STEP_LINK_STEPD = 1
} sl_step_link_t;

/* One rank of a step_run: its number, the task (slot) it runs in, and the
 * variables that are its own (SLURM_PROCID, CUDA_VISIBLE_DEVICES, ...). */
typedef struct sl_step_rank {
    int32_t rank;               /* 0..SL_STEP_MAX_RANKS-1 */
    int32_t task;               /* >= 0 */
    const sl_proto_kv_t *env;   /* nenv pairs */
    size_t nenv;
} sl_step_rank_t;

typedef struct sl_step_msg {
    sl_step_type_t type;
    uint64_t job;               /* agent port only; >= 1 */
    uint32_t step;              /* the step's number in its job, from 0 */
    uint64_t epoch;             /* agent port, controller -> agent: the controller's epoch
                                 * (proto_epoch.h), written when > 0; the agent reads it
                                 * with the rest of the protocol (proto.h) */
    int32_t rank;               /* started, out, exit; run on the stepd link */
    /* run */
    const char *const *argv;    /* argc >= 1 strings; decoded: argv[argc] is NULL */
    size_t argc;
    const sl_proto_kv_t *env;   /* the step's variables, wire order */
    size_t nenv;
    const char *cwd;            /* NULL: the job's directory */
    const char *output;         /* srun -o / -e, already expanded; NULL: to srun */
    const char *error;
    const sl_step_rank_t *ranks; /* step_run only: this node's ranks */
    size_t nranks;
    /* run: rank 0 on a pseudo-terminal of rows x cols (srun --pty); 0: none */
    int32_t pty_rows, pty_cols;
    /* signal */
    int32_t sig;                /* 1..64 */
    /* started */
    int32_t pid;
    /* out, stdin */
    int32_t fd;                 /* out: 1 stdout, 2 stderr */
    const char *data;           /* data_len bytes (UTF-8 once decoded) */
    size_t data_len;
    /* exit */
    int32_t exit_code;          /* 0..255; 128+signal when killed */
    int32_t signal;             /* 0..127 */
    const char *reason;         /* NULL, or why the rank could not start or was lost */
    /* decode only */
    json_t *root_;
    void *alloc_;
} sl_step_msg_t;

/* The wire name of type on link ("step_run" or "run"); "?" for others. */
const char *sl_step_type_name(sl_step_type_t type, sl_step_link_t link);

/* True when the JSON object o is a step message of link (its "type" one of
 * that link's names). Can't fail. */
bool sl_step_is_step(json_t *o, sl_step_link_t link);

/*
 * Encodes m as one line ending in '\n', allocated (sl_xmalloc; free with
 * sl_free), its length in *len. Output data that is not UTF-8 is written
 * with '?' for each bad byte and each NUL. Returns NULL (SL_EINVAL) for an
 * unknown type, a run without argv, or a signal outside 1..64. O(size).
 */
char *sl_step_encode(const sl_step_msg_t *m, sl_step_link_t link, size_t *len);

/*
 * Decodes the object o read on link into *m, which then holds a reference
 * to o until sl_step_msg_fini. 0, or SL_EINVAL with err naming the message
 * and field ("step_run: ranks[1].task: must be an integer >= 0"), or
 * SL_ENOENT for a type that is not a step message of link. *m must be
 * released with sl_step_msg_fini whatever the result. O(size of o).
 */
int sl_step_decode(json_t *o, sl_step_link_t link, sl_step_msg_t *m, char *err, size_t errlen);

/* sl_step_decode of one line (without its '\n'). */
int sl_step_decode_line(const char *line, size_t len, sl_step_link_t link, sl_step_msg_t *m,
                        char *err, size_t errlen);

/* Releases what a decode left in m and zeroes it. Accepts a zeroed m. */
void sl_step_msg_fini(sl_step_msg_t *m);

#endif
