/*
 * proto.h - the one codec of the controller <-> agent protocol
 * (docs/protocol.md): newline-delimited JSON objects, one per line, at most
 * SL_PROTO_MAX_LINE bytes, each with a "type".
 *
 * Every message of both directions is a sl_proto_msg_t: a tag, the fields
 * most messages share (job, task, req, time) and a union of the rest.
 *
 *   Encode: fill a message (designated initialisers; unset fields are 0 or
 *   NULL) and call sl_proto_encode() with a caller's buffer. It writes one
 *   whole line, '\n' included, by direct formatting (no jansson on this
 *   path: the controller encodes a launch per started task), and never
 *   allocates.
 *
 *       char line[1024];
 *       size_t len;
 *       sl_proto_msg_t m = {.type = SL_PROTO_KILL, .job = 12, .task = 0,
 *                           .u.kill.grace_ms = 10000};
 *       if (sl_proto_encode(&m, line, sizeof line, &len) == 0 && len < sizeof line)
 *           send(fd, line, len, 0);
 *
 *   Decode: sl_proto_decode_line() on one line, or sl_proto_decode() on an
 *   already parsed json_t. Both check every field of the message against
 *   docs/protocol.md and say which field is wrong ("launch: gpus: must be an
 *   array of GPU indices"). The decoded message then holds a reference to its
 *   JSON document: decoded strings are borrowed from it (not copied), arrays
 *   (hello tasks, launch argv, env and gpus) are allocated by the decoder,
 *   and sl_proto_msg_fini() releases both. So every pointer of a decoded
 *   message is valid until its sl_proto_msg_fini().
 *
 * Decoding is strict about types (a string where a number belongs is an
 * error, never read as 0) and lenient about absence: optional fields that
 * are absent or null take the defaults documented beside them, which are
 * what the agent and the controller assumed before this codec existed. One
 * deliberate exception keeps the controller's behaviour: an exit status
 * outside what a process can have (exit_code outside 0..255, signal outside
 * 0..127) decodes, with status_out_of_range set, so that the controller can
 * record it as a failure and still acknowledge it.
 *
 * Strings given to the encoder must be NUL-terminated (data of a logs reply
 * has a length instead). Bytes that are not valid UTF-8 are written as '?',
 * so the encoder's output is always valid JSON whatever its input.
 */
#ifndef SLUICE_COMMON_PROTO_H
#define SLUICE_COMMON_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "proto_usage.h" /* sl_proto_usage_t: a heartbeat's usage summary */
#include "proto_kill.h"  /* sl_proto_kill_t: a kill, with its optional signal and preempt */
#include "proto_run.h"   /* a task's attempt and the cluster instance (their codec, bounds) */
#include "volume.h"      /* a launch's volumes (their codec) */
#include "proto_secret.h" /* a launch's secrets (their codec) */
#include "proto_health.h" /* sl_proto_health_t: a heartbeat's health report */
#include "proto_epoch.h" /* the controller's epoch (its codec, the agent's rule) */

/* docs/protocol.md: a line is at most 1 MiB (the newline not counted). */
#define SL_PROTO_MAX_LINE (1024 * 1024)
/* Largest GPU index a launch may name (the agent's --gpus allows 1024). */
#define SL_PROTO_MAX_GPU_INDEX 1023
/* Defaults a decoded launch gets for absent fields (docs/protocol.md). */
#define SL_PROTO_DEFAULT_MASTER_ADDR "127.0.0.1"
#define SL_PROTO_DEFAULT_MASTER_PORT 29500
#define SL_PROTO_DEFAULT_USER "nobody"
/* Default "limit" of a logs request. */
#define SL_PROTO_DEFAULT_LOG_LIMIT 65536
/* The oom_score_adj a decoded launch gets when the controller sent none
 * (sl_proto_launch_t), and the range the wire allows: the kernel's. */
#define SL_PROTO_DEFAULT_OOM_SCORE_ADJ (-500)
#define SL_PROTO_OOM_SCORE_ADJ_MIN (-1000)
#define SL_PROTO_OOM_SCORE_ADJ_MAX 1000

typedef enum sl_proto_type {
    SL_PROTO_NONE = 0,
    /* agent -> controller */
    SL_PROTO_HELLO,
    SL_PROTO_STARTED,
    SL_PROTO_EXITED,
    SL_PROTO_FAILED,
    SL_PROTO_HEARTBEAT,
    SL_PROTO_LOGS_REPLY, /* "logs" from an agent */
    /* controller -> agent */
    SL_PROTO_WELCOME,
    SL_PROTO_ERROR,
    SL_PROTO_LAUNCH,
    SL_PROTO_KILL,
    SL_PROTO_ACK,
    SL_PROTO_LOGS_REQ, /* "logs" from the controller */
    SL_PROTO_HEARTBEAT_ECHO, /* "heartbeat" from the controller: the answer to one */
    SL_PROTO_REDIRECT, /* a controller that does not lead names the one that does */
    SL_PROTO_NTYPES
} sl_proto_type_t;

/* Which end a line is read by: "logs" means a request or a reply by
 * direction, and each end knows only the messages sent to it. */
typedef enum sl_proto_dir {
    SL_PROTO_TO_CTL = 0,   /* read by the controller (sent by an agent) */
    SL_PROTO_TO_AGENT = 1  /* read by an agent (sent by the controller) */
} sl_proto_dir_t;

/* State of a task in a hello's "tasks" list. */
typedef enum sl_proto_task_state {
    SL_PROTO_TASK_RUNNING = 0, /* pid, start_time */
    SL_PROTO_TASK_EXITED = 1,  /* exit_code, signal, end_time */
    SL_PROTO_TASK_FAILED = 2   /* reason, end_time */
} sl_proto_task_state_t;

/* One entry of a hello's "tasks". Times are seconds since the epoch, 0 when
 * absent. */
typedef struct sl_proto_task {
    uint64_t job;
    int32_t task;
    sl_proto_task_state_t state; /* absent on the wire: running */
    int32_t pid;
    double start_time;
    int64_t exit_code;          /* as sent; see sl_proto_exited_t */
    int64_t signal;
    bool status_out_of_range;
    double end_time;
    const char *reason;         /* failed; NULL: absent */
    bool fenced;                /* exited: its agent stopped it for lack of
                                 * contact (docs/protocol.md, Fencing); absent: false */
    /* exited: how its memory ended, as in sl_proto_exited_t. */
    bool oom_killed;
    int64_t mem_peak;
    int64_t mem_limit;
    /* Which run of the task (proto_run.h): the attempt of its launch
     * (has_attempt false: the launch had none) and the instance of the
     * controller that launched it (NULL: none, or an agent from before). */
    bool has_attempt;
    uint32_t attempt;
    const char *instance;
} sl_proto_task_t;

/* A hello's "node": the node's spec. Quantities are text, as the user wrote
 * them ("64", "500m", "512Gi"); the encoder writes NULL ones as absent. The
 * decoder also accepts integers there (protocol.md), sets the text to NULL
 * when the wire had an integer or nothing, and always fills the parsed
 * values (0 when absent). */
typedef struct sl_proto_node {
    const char *name;       /* required: 1..SL_NAME_MAX-1 bytes */
    const char *cpus;
    const char *memory;
    int32_t gpus;           /* 0..1024; absent: 0 */
    const char *gpu_model;  /* NULL: absent (all of these below) */
    const char *gpu_memory;
    const char *pool;
    const char *labels;
    const char *addr;       /* overrides MASTER_ADDR for gangs led from here */
    const char *taints;     /* "k=v:NoSchedule,..." (sluice/constraint.h); NULL: absent */
    /* decode only */
    int64_t cpu_milli;
    int64_t mem_bytes;
    int64_t gpu_mem_bytes;
} sl_proto_node_t;

typedef struct sl_proto_hello {
    const char *token;      /* required */
    const char *version;    /* NULL: absent */
    sl_proto_node_t node;
    const sl_proto_task_t *tasks; /* ntasks entries; absent or null: none */
    size_t ntasks;
} sl_proto_hello_t;

typedef struct sl_proto_started {
    int32_t pid;            /* required, >= 0 */
} sl_proto_started_t;

/* A wait status. exit_code absent: 128 + signal for a signal in 1..127,
 * else 0; signal absent: 0. status_out_of_range is set (and the message still
 * decodes) when exit_code is outside 0..255 or signal outside 0..127; both
 * are then left as sent so that the reader can log them. */
typedef struct sl_proto_exited {
    int64_t exit_code;
    int64_t signal;
    bool status_out_of_range; /* decode only */
    bool fenced;              /* stopped by its agent for lack of contact; absent: false */
    /* Enforcement (docs/protocol.md): oom_killed, the kernel killed the task
     * for memory (its cgroup's oom_kill count rose); mem_peak, the most
     * memory it used, and mem_limit, the hard limit it ran under, in bytes,
     * >= 0. Absent: false and 0, which mean "not known" (an agent without
     * enforcement). The encoder writes oom_killed only when true and each
     * size only when > 0. */
    bool oom_killed;
    int64_t mem_peak;
    int64_t mem_limit;
} sl_proto_exited_t;

typedef struct sl_proto_failed {
    const char *reason;     /* required */
} sl_proto_failed_t;

/* Reply to a logs request: either error, or data at offset. */
typedef struct sl_proto_logs_reply {
    const char *error;      /* non-NULL: no data (the rest is not sent) */
    const char *data;       /* data_len bytes, UTF-8 */
    size_t data_len;
    int64_t offset;         /* >= 0 */
    int64_t size;           /* size of the whole log; -1: absent */
    bool eof;
} sl_proto_logs_reply_t;

typedef struct sl_proto_welcome {
    const char *node;       /* the registered node name; NULL: absent */
    int32_t heartbeat;      /* seconds, 1..3600; 0: absent */
    /* Fencing (docs/protocol.md): the controller's node_timeout and kill
     * grace. node_timeout_ms 0: absent (the agent does not fence), and then
     * kill_grace_ms is not sent either; kill_grace_ms -1: absent. */
    int64_t node_timeout_ms;
    int64_t kill_grace_ms;
    /* The cluster instance id (proto_run.h), which the agent puts in the
     * names of the tasks it launches on this connection; NULL: absent. */
    const char *instance;
} sl_proto_welcome_t;

/* A heartbeat's sequence number, both ways: the agent numbers its
 * heartbeats (1, 2, ...; 0: absent) and the controller answers each with a
 * "heartbeat" carrying the same seq (SL_PROTO_HEARTBEAT_ECHO). */
typedef struct sl_proto_heartbeat {
    uint64_t seq;
    /* Agent's heartbeat only (additive, docs/protocol.md): per task, its
     * usage so far (proto_usage.h); nusage 0: absent. Decoded entries live
     * in the message's arrays. */
    const sl_proto_usage_t *usage;
    size_t nusage;
    /* Agent's heartbeat only (additive): the node's and its GPUs' health
     * (proto_health.h); health.present false: absent. */
    sl_proto_health_t health;
} sl_proto_heartbeat_t;

/* A controller that does not lead answers a hello with this and closes
 * (docs/protocol.md, "Controllers and epochs"). */
typedef struct sl_proto_redirect {
    const char *leader;     /* "HOST:PORT" of the leader's agent port; NULL: not known */
} sl_proto_redirect_t;

typedef struct sl_proto_error {
    const char *message;    /* required */
} sl_proto_error_t;

typedef struct sl_proto_kv {
    const char *key;
    const char *value;
} sl_proto_kv_t;

/* A launch. The decoder's defaults for absent fields are the agent's:
 * rank = task, world_size 1, local_rank 0, master_addr "127.0.0.1",
 * master_port 29500, gpu_milli 1000 (a whole GPU), the rest 0 or NULL. */
typedef struct sl_proto_launch {
    const char *name;           /* NULL: null */
    const char *tenant;         /* NULL: null */
    const char *const *argv;    /* NULL: null (only an image); else argc strings (decoded:
                                 * argv[argc] is NULL, as execvp wants) */
    size_t argc;
    const char *image;          /* NULL: null */
    const sl_proto_kv_t *env;   /* nenv pairs, in wire order; keys unique */
    size_t nenv;
    const int32_t *gpus;        /* ngpus GPU indices, 0..SL_PROTO_MAX_GPU_INDEX */
    size_t ngpus;
    int64_t gpu_milli;          /* 0..1000 */
    int64_t gpu_memory;         /* bytes, >= 0 */
    int64_t cpu_milli;          /* >= 0 */
    int64_t mem_bytes;          /* >= 0 */
    int32_t rank;               /* >= 0 */
    int32_t world_size;         /* >= 1 */
    int32_t local_rank;         /* >= 0 */
    const char *master_addr;    /* encoder: NULL writes the default */
    int32_t master_port;        /* 1..65535 */
    int64_t time_limit;         /* seconds, 0: none */
    /* The Unix identity the task runs as on a root agent (docs/protocol.md):
     * names, resolved on the node. user NULL: "nobody" (SL_PROTO_DEFAULT_USER);
     * group NULL: the user's primary group. The encoder writes each only when
     * set, allow_root only when true. */
    const char *user;
    const char *group;
    bool allow_root;            /* may user or group be root (uid or gid 0)? */
    const char *on_node_failure; /* "requeue" or "fail"; NULL: absent (the
                                  * agent then does not fence the task) */
    /* The task's /proc/PID/oom_score_adj, -1000..1000 (the kernel's range;
     * the controller itself sends only -999..1000). "Absent" is the flag, not
     * a value, because every value of the range is one a sender may mean:
     * the encoder writes oom_score_adj only when has_oom_score_adj is set
     * (a zeroed launch sends none), and the decoder sets the flag when the
     * field was present and otherwise leaves oom_score_adj at
     * SL_PROTO_DEFAULT_OOM_SCORE_ADJ (-500), the agent's default. */
    bool has_oom_score_adj;
    int32_t oom_score_adj;
    /* An image task's container (docs/containers.md), each written only
     * when set: mounts "SRC:DST[:ro]" (nmounts strings), the size of its
     * /dev/shm in bytes (0: the agent's default, 64 MiB), its working
     * directory inside (NULL: the image's, else the job's directory). */
    const char *const *mounts;
    size_t nmounts;
    int64_t shm_size;
    const char *workdir;
    /* The job's volumes as the controller resolved them (volume.h), for
     * image and plain tasks alike; written only when nvolumes > 0. */
    const sl_proto_volume_t *volumes;
    size_t nvolumes;
    /* The task's secrets (proto_secret.h), written only when it has some;
     * never logged. */
    sl_proto_secrets_t secrets;
    /* Limits above the requests (Kubernetes' limits; the job's memory_limit
     * and cpu_limit), each written only when above 0: the hard memory limit
     * in bytes (0: 110% of mem_bytes) and the CPU quota in milli-CPUs (0:
     * cpu_milli). The requests place the task; these bound it. */
    int64_t mem_limit;
    int64_t cpu_limit_milli;
    /* A pod's containers (pod.h: the job spec's `containers`, as it is),
     * written only when set; the agent runs them all in the task. Decoded:
     * borrowed from the message, NULL when absent. */
    json_t *containers;
    /* The image's entrypoint's arguments instead of its command (the job's
     * `args`: Kubernetes' args alone), nimage_args strings, written only
     * when there are some; argv is then NULL. */
    const char *const *image_args;
    size_t nimage_args;
} sl_proto_launch_t;

typedef struct sl_proto_logs_req {
    int64_t offset;             /* >= 0; absent: 0 */
    int64_t limit;              /* >= 0; absent: 65536 */
} sl_proto_logs_req_t;

typedef struct sl_proto_msg {
    sl_proto_type_t type;
    /* Shared fields, by type:
     *   job, task: started exited failed launch kill ack logs (both);
     *   req:       logs (both), required, >= 0;
     *   time:      started exited failed heartbeat (agent's); seconds since the
     *              epoch, 0 when absent (the reader uses its own clock);
     *   attempt:   launch started exited failed kill ack: which attempt of the
     *              task (proto_run.h), written only when has_attempt (so a
     *              zeroed message sends none) and 0..SL_PROTO_ATTEMPT_MAX. */
    uint64_t job;               /* 0..2^63-1 on the wire */
    int32_t task;               /* >= 0 */
    uint64_t req;
    double time;
    bool has_attempt;
    uint32_t attempt;
    /* The sending controller's epoch (proto_epoch.h): written, right after
     * the type, when > 0, which every controller -> agent message has; 0:
     * absent. Decoded on the agent's side for every message, also one of a
     * type it does not know (SL_ENOENT) and one whose body fails. */
    uint64_t epoch;
    union {
        sl_proto_hello_t hello;
        sl_proto_started_t started;
        sl_proto_exited_t exited;
        sl_proto_failed_t failed;
        sl_proto_logs_reply_t logs_reply;
        sl_proto_welcome_t welcome;
        sl_proto_error_t error;
        sl_proto_launch_t launch;
        sl_proto_kill_t kill;
        sl_proto_logs_req_t logs_req;
        sl_proto_heartbeat_t heartbeat; /* heartbeat, both directions */
        sl_proto_redirect_t redirect;
    } u;
    /* Decode only. has_ids: job, task and req (those of this type) were
     * decoded, also when a later field failed, so that a reader can still
     * answer (a launch that cannot run is reported failed; a logs request
     * gets an error reply; an agent's heartbeat whose usage is bad is still
     * answered, its seq and time decoded). */
    bool has_ids;
    json_t *root_;              /* private: the document strings point into */
    void *alloc_;               /* private: arrays the decoder allocated */
} sl_proto_msg_t;

/* The wire name of a type ("logs" for both logs messages); "?" for others.
 * Can't fail. */
const char *sl_proto_type_name(sl_proto_type_t type);

/*
 * Encodes m as one line ending in '\n' into buf (cap bytes), with snprintf
 * semantics: *len is set to the line's length (newline included, NUL not),
 * the line and a NUL are written when *len < cap, and a prefix otherwise, so
 * a caller whose buffer was short calls again with cap > *len. Returns 0, or
 * SL_EINVAL (nothing usable written) when m cannot be encoded: an unknown
 * type, a required string NULL (hello token and node.name, failed reason,
 * error message), argc > 0 with argv NULL, a time that is not finite, a
 * launch's oom_score_adj (when has_oom_score_adj) outside -1000..1000. m is
 * not changed. O(size of the line); allocates nothing.
 */
int sl_proto_encode(const sl_proto_msg_t *m, char *buf, size_t cap, size_t *len);

/*
 * Like sl_proto_encode, into a buffer that it allocates (sl_xmalloc; free
 * with sl_free). Returns the line (NUL-terminated) with its length in *len,
 * or NULL for SL_EINVAL.
 */
char *sl_proto_encode_alloc(const sl_proto_msg_t *m, size_t *len);

/*
 * Decodes one message read in direction dir from obj. On success returns 0
 * and fills *m, which then holds a reference to obj (the caller may drop its
 * own) until sl_proto_msg_fini(m). On failure returns
 *   SL_EINVAL  obj is not an object, has no string "type", or a field is
 *              missing, of the wrong type or out of range;
 *   SL_ENOENT  "type" is not a message of this direction (both ends ignore
 *              those, for compatibility with later versions);
 * writes the reason into err (errlen > 0), naming the message and field,
 * e.g. "launch: gpus[1]: must be a GPU index from 0 to 1023", and leaves
 * in *m the type (when known) and whatever has_ids says; *m must still be
 * released with sl_proto_msg_fini. O(size of obj).
 */
int sl_proto_decode(json_t *obj, sl_proto_dir_t dir, sl_proto_msg_t *m, char *err, size_t errlen);

/*
 * Parses line[0..len) (one line without its '\n') and decodes it as
 * sl_proto_decode does. Besides that function's errors, returns SL_EINVAL
 * for a line over SL_PROTO_MAX_LINE ("message longer than 1 MiB") and for
 * one that is not JSON ("bad JSON at position N: ..."). *m must be released
 * with sl_proto_msg_fini whatever the result.
 */
int sl_proto_decode_line(const char *line, size_t len, sl_proto_dir_t dir, sl_proto_msg_t *m,
                         char *err, size_t errlen);

/* Releases what a decode left in m (reference, arrays) and zeroes m.
 * Accepts a zeroed message, and one that was only encoded. Can't fail. */
void sl_proto_msg_fini(sl_proto_msg_t *m);

#endif
