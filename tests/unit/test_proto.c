/*
 * test_proto.c - the controller <-> agent codec (src/common/proto.h).
 *
 * Round trips: every message of both directions is encoded, decoded and
 * encoded again; the fields must survive and the two lines must be equal
 * byte for byte. Then table-driven rejections (SQLite style): each row is a
 * direction, a line and a fragment the error must contain, covering each
 * required field missing, wrong types, out-of-range numbers, over-long and
 * broken lines and unknown types. Teardown checks that the decoder's arrays
 * were all freed.
 */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto.h"
#include "testutil.h"

/* Encodes m, decodes the line into *out (dir), re-encodes *out and checks
 * that both lines are equal. Returns the first line (sl_free it). */
static char *round_trip(const sl_proto_msg_t *m, sl_proto_dir_t dir, sl_proto_msg_t *out) {
    size_t len, len2;
    char *line = sl_proto_encode_alloc(m, &len);
    assert_non_null(line);
    assert_int_equal(strlen(line), len);
    assert_true(len > 0 && line[len - 1] == '\n');
    assert_null(memchr(line, '\n', len - 1));
    char err[256];
    int rc = sl_proto_decode_line(line, len - 1, dir, out, err, sizeof err);
    if (rc != 0) fail_msg("%s: %s", line, err);
    assert_int_equal(out->type, m->type);
    char *again = sl_proto_encode_alloc(out, &len2);
    assert_non_null(again);
    assert_string_equal(again, line);
    sl_free(again);
    return line;
}

static void test_proto_hello_round_trip(void **state) {
    (void)state;
    sl_proto_task_t tasks[] = {
        {.job = 12, .task = 0, .state = SL_PROTO_TASK_RUNNING, .pid = 1234, .start_time = 1764428400.5},
        {.job = 9, .task = 1, .state = SL_PROTO_TASK_EXITED, .exit_code = 137, .signal = 9,
         .end_time = 1764428401.25},
        {.job = 7, .task = 3, .state = SL_PROTO_TASK_FAILED, .reason = "cannot execute x",
         .end_time = 1764428402},
    };
    sl_proto_msg_t m = {.type = SL_PROTO_HELLO,
                        .u.hello = {.token = "tok\"en", .version = SLUICE_VERSION,
                                    .node = {.name = "n1", .cpus = "64", .memory = "512Gi", .gpus = 8,
                                             .gpu_model = "H100", .gpu_memory = "80Gi", .pool = "p",
                                             .labels = "rack=a", .addr = "10.0.0.1",
                                             .taints = "gpu=a100:NoSchedule,maint:NoExecute"},
                                    .tasks = tasks, .ntasks = 3}};
    sl_proto_msg_t d;
    char *line = round_trip(&m, SL_PROTO_TO_CTL, &d);
    assert_non_null(strstr(line, "\"tok\\\"en\""));
    const sl_proto_hello_t *h = &d.u.hello;
    assert_string_equal(h->token, "tok\"en");
    assert_string_equal(h->version, SLUICE_VERSION);
    assert_string_equal(h->node.name, "n1");
    assert_string_equal(h->node.cpus, "64");
    assert_int_equal(h->node.cpu_milli, 64000);
    assert_int_equal(h->node.mem_bytes, INT64_C(512) << 30);
    assert_int_equal(h->node.gpu_mem_bytes, INT64_C(80) << 30);
    assert_int_equal(h->node.gpus, 8);
    assert_string_equal(h->node.gpu_model, "H100");
    assert_string_equal(h->node.pool, "p");
    assert_string_equal(h->node.labels, "rack=a");
    assert_string_equal(h->node.addr, "10.0.0.1");
    assert_string_equal(h->node.taints, "gpu=a100:NoSchedule,maint:NoExecute");
    assert_int_equal(h->ntasks, 3);
    assert_int_equal(h->tasks[0].job, 12);
    assert_int_equal(h->tasks[0].state, SL_PROTO_TASK_RUNNING);
    assert_int_equal(h->tasks[0].pid, 1234);
    assert_true(h->tasks[0].start_time == 1764428400.5);
    assert_int_equal(h->tasks[1].state, SL_PROTO_TASK_EXITED);
    assert_int_equal(h->tasks[1].exit_code, 137);
    assert_int_equal(h->tasks[1].signal, 9);
    assert_false(h->tasks[1].status_out_of_range);
    assert_true(h->tasks[1].end_time == 1764428401.25);
    assert_int_equal(h->tasks[2].state, SL_PROTO_TASK_FAILED);
    assert_int_equal(h->tasks[2].task, 3);
    assert_string_equal(h->tasks[2].reason, "cannot execute x");
    sl_proto_msg_fini(&d);
    sl_free(line);

    /* Quantities may be integers on the wire; the text is then NULL. */
    const char *ints = "{\"type\":\"hello\",\"token\":\"t\",\"node\":{\"name\":\"n\",\"cpus\":4,"
                       "\"memory\":1024,\"gpus\":null}}";
    char err[256];
    assert_int_equal(sl_proto_decode_line(ints, strlen(ints), SL_PROTO_TO_CTL, &d, err, sizeof err), 0);
    assert_null(d.u.hello.node.cpus);
    assert_int_equal(d.u.hello.node.cpu_milli, 4000);
    assert_int_equal(d.u.hello.node.mem_bytes, 1024);
    assert_int_equal(d.u.hello.node.gpus, 0);
    assert_int_equal(d.u.hello.ntasks, 0);
    sl_proto_msg_fini(&d);
}

static void test_proto_task_reports_round_trip(void **state) {
    (void)state;
    sl_proto_msg_t d;
    sl_proto_msg_t started = {.type = SL_PROTO_STARTED, .job = 12, .task = 1, .time = 1764428400.13,
                              .u.started.pid = 4321};
    sl_free(round_trip(&started, SL_PROTO_TO_CTL, &d));
    assert_int_equal(d.job, 12);
    assert_int_equal(d.task, 1);
    assert_int_equal(d.u.started.pid, 4321);
    assert_true(d.time > 1764428400.129 && d.time < 1764428400.131);
    assert_true(d.has_ids);
    sl_proto_msg_fini(&d);

    sl_proto_msg_t exited = {.type = SL_PROTO_EXITED, .job = UINT64_C(9007199254740993), .task = 7,
                             .time = 1.5, .u.exited = {.exit_code = 143, .signal = 15}};
    sl_free(round_trip(&exited, SL_PROTO_TO_CTL, &d));
    assert_true(d.job == UINT64_C(9007199254740993)); /* beyond a double's 2^53 */
    assert_int_equal(d.u.exited.exit_code, 143);
    assert_int_equal(d.u.exited.signal, 15);
    assert_false(d.u.exited.status_out_of_range);
    sl_proto_msg_fini(&d);

    sl_proto_msg_t failed = {.type = SL_PROTO_FAILED, .job = 3, .task = 0, .time = 2,
                             .u.failed.reason = "image x needs a launcher\n\t\x01 \xc3\xa9"};
    sl_free(round_trip(&failed, SL_PROTO_TO_CTL, &d));
    assert_string_equal(d.u.failed.reason, "image x needs a launcher\n\t\x01 \xc3\xa9");
    sl_proto_msg_fini(&d);

    sl_proto_msg_t hb = {.type = SL_PROTO_HEARTBEAT, .time = 1764428400};
    sl_free(round_trip(&hb, SL_PROTO_TO_CTL, &d));
    assert_true(d.time == 1764428400);
    sl_proto_msg_fini(&d);
}

static void test_proto_logs_round_trip(void **state) {
    (void)state;
    sl_proto_msg_t d;
    sl_proto_msg_t req = {.type = SL_PROTO_LOGS_REQ, .req = 7, .job = 12, .task = 2,
                          .u.logs_req = {.offset = 100, .limit = 65536}};
    char *line = round_trip(&req, SL_PROTO_TO_AGENT, &d);
    assert_string_equal(line, "{\"type\":\"logs\",\"req\":7,\"job\":12,\"task\":2,\"offset\":100,"
                              "\"limit\":65536}\n");
    assert_int_equal(d.req, 7);
    assert_int_equal(d.u.logs_req.offset, 100);
    assert_int_equal(d.u.logs_req.limit, 65536);
    sl_proto_msg_fini(&d);
    sl_free(line);

    const char data[] = "line one\nli\tne \"two\"\n\x7f";
    sl_proto_msg_t rep = {.type = SL_PROTO_LOGS_REPLY, .req = 7, .job = 12, .task = 2,
                          .u.logs_reply = {.data = data, .data_len = sizeof data - 1, .offset = 100,
                                           .size = 121, .eof = true}};
    sl_free(round_trip(&rep, SL_PROTO_TO_CTL, &d));
    assert_int_equal(d.u.logs_reply.data_len, sizeof data - 1);
    assert_memory_equal(d.u.logs_reply.data, data, sizeof data - 1);
    assert_int_equal(d.u.logs_reply.offset, 100);
    assert_int_equal(d.u.logs_reply.size, 121);
    assert_true(d.u.logs_reply.eof);
    assert_null(d.u.logs_reply.error);
    sl_proto_msg_fini(&d);

    sl_proto_msg_t none = {.type = SL_PROTO_LOGS_REPLY, .req = 8, .job = 12, .task = 3,
                           .u.logs_reply.error = "no log for job 12 task 3"};
    sl_free(round_trip(&none, SL_PROTO_TO_CTL, &d));
    assert_string_equal(d.u.logs_reply.error, "no log for job 12 task 3");
    assert_int_equal(d.req, 8);
    sl_proto_msg_fini(&d);
}

/* docs/protocol.md's logs reply names only its request: job and task are
 * optional, and a reply without them decodes (it used to be refused, and
 * the controller read such replies with code of its own). */
static void test_proto_logs_reply_without_job_and_task(void **state) {
    (void)state;
    sl_proto_msg_t d;
    char err[200];
    static const char ok[] = "{\"type\":\"logs\",\"req\":7,\"data\":\"hi\\n\",\"offset\":0,\"eof\":true}";
    assert_int_equal(sl_proto_decode_line(ok, sizeof ok - 1, SL_PROTO_TO_CTL, &d, err, sizeof err), 0);
    assert_int_equal(d.type, SL_PROTO_LOGS_REPLY);
    assert_int_equal(d.req, 7);
    assert_false(d.has_ids);
    assert_int_equal(d.u.logs_reply.data_len, 3);
    assert_true(d.u.logs_reply.eof);
    sl_proto_msg_fini(&d);

    static const char gone[] = "{\"type\":\"logs\",\"req\":9,\"error\":\"no log for job 12 task 3\"}";
    assert_int_equal(sl_proto_decode_line(gone, sizeof gone - 1, SL_PROTO_TO_CTL, &d, err, sizeof err), 0);
    assert_int_equal(d.req, 9);
    assert_string_equal(d.u.logs_reply.error, "no log for job 12 task 3");
    sl_proto_msg_fini(&d);

    static const char noreq[] = "{\"type\":\"logs\",\"data\":\"x\"}";
    assert_int_equal(sl_proto_decode_line(noreq, sizeof noreq - 1, SL_PROTO_TO_CTL, &d, err, sizeof err),
                     SL_EINVAL);
    assert_non_null(strstr(err, "req"));
    sl_proto_msg_fini(&d);

    /* One id without the other is still checked. */
    static const char half[] = "{\"type\":\"logs\",\"req\":4,\"job\":12,\"data\":\"x\"}";
    assert_int_equal(sl_proto_decode_line(half, sizeof half - 1, SL_PROTO_TO_CTL, &d, err, sizeof err),
                     SL_EINVAL);
    assert_non_null(strstr(err, "task"));
    sl_proto_msg_fini(&d);
}

static void test_proto_controller_messages_round_trip(void **state) {
    (void)state;
    sl_proto_msg_t d;
    sl_proto_msg_t welcome = {.type = SL_PROTO_WELCOME, .u.welcome = {.node = "n1", .heartbeat = 2}};
    char *line = round_trip(&welcome, SL_PROTO_TO_AGENT, &d);
    assert_string_equal(line, "{\"type\":\"welcome\",\"node\":\"n1\",\"heartbeat\":2}\n");
    assert_string_equal(d.u.welcome.node, "n1");
    assert_int_equal(d.u.welcome.heartbeat, 2);
    sl_proto_msg_fini(&d);
    sl_free(line);

    sl_proto_msg_t error = {.type = SL_PROTO_ERROR, .u.error.message = "bad cluster token"};
    line = round_trip(&error, SL_PROTO_TO_AGENT, &d);
    assert_string_equal(line, "{\"type\":\"error\",\"message\":\"bad cluster token\"}\n");
    assert_string_equal(d.u.error.message, "bad cluster token");
    sl_proto_msg_fini(&d);
    sl_free(line);

    sl_proto_msg_t kill = {.type = SL_PROTO_KILL, .job = 12, .task = 0, .u.kill.grace_ms = 10000};
    line = round_trip(&kill, SL_PROTO_TO_AGENT, &d);
    assert_string_equal(line, "{\"type\":\"kill\",\"job\":12,\"task\":0,\"grace_ms\":10000}\n");
    assert_int_equal(d.u.kill.grace_ms, 10000);
    sl_proto_msg_fini(&d);
    sl_free(line);
    kill.u.kill.grace_ms = -1; /* absent: the agent's own --grace */
    sl_free(round_trip(&kill, SL_PROTO_TO_AGENT, &d));
    assert_int_equal(d.u.kill.grace_ms, -1);
    sl_proto_msg_fini(&d);
    /* Issue 11: a preemption's signal and preempt flag, both additive. */
    assert_false(d.u.kill.preempt);
    assert_int_equal(d.u.kill.signal, 0);
    kill.u.kill = (sl_proto_kill_t){.grace_ms = 0, .signal = SIGUSR1, .preempt = true};
    line = round_trip(&kill, SL_PROTO_TO_AGENT, &d);
    assert_string_equal(line, "{\"type\":\"kill\",\"job\":12,\"task\":0,\"grace_ms\":0,"
                              "\"signal\":\"SIGUSR1\",\"preempt\":true}\n");
    assert_int_equal(d.u.kill.grace_ms, 0);
    assert_int_equal(d.u.kill.signal, SIGUSR1);
    assert_true(d.u.kill.preempt);
    sl_proto_msg_fini(&d);
    sl_free(line);
    int32_t sig = 0;
    assert_int_equal(sl_proto_signal_parse("USR2", &sig), 0);
    assert_int_equal(sig, SIGUSR2);
    assert_int_equal(sl_proto_signal_parse("SIGSEGV", &sig), -1);
    assert_string_equal(sl_proto_signal_name(SIGTERM), "SIGTERM");
    assert_null(sl_proto_signal_name(SIGSEGV));

    sl_proto_msg_t ack = {.type = SL_PROTO_ACK, .job = 12, .task = 5};
    line = round_trip(&ack, SL_PROTO_TO_AGENT, &d);
    assert_string_equal(line, "{\"type\":\"ack\",\"job\":12,\"task\":5}\n");
    assert_int_equal(d.job, 12);
    assert_int_equal(d.task, 5);
    sl_proto_msg_fini(&d);
    sl_free(line);
}

static void test_proto_launch_round_trip(void **state) {
    (void)state;
    const char *argv[] = {"python", "train.py", "--lr=3e-4"};
    sl_proto_kv_t env[] = {{"K", "V"}, {"PATH_EXTRA", "a b\"c"}};
    int32_t gpus[] = {0, 1, 2, 3};
    sl_proto_msg_t m = {.type = SL_PROTO_LAUNCH, .job = 12, .task = 1,
                        .u.launch = {.name = "megatron-3b", .tenant = "alice", .argv = argv, .argc = 3,
                                     .env = env, .nenv = 2, .gpus = gpus, .ngpus = 4, .gpu_milli = 1000,
                                     .gpu_memory = 0, .cpu_milli = 16000,
                                     .mem_bytes = INT64_C(137438953472), .rank = 1, .world_size = 8,
                                     .local_rank = 1, .master_addr = "10.0.0.1", .master_port = 29512,
                                     .time_limit = 3600}};
    sl_proto_msg_t d;
    char *line = round_trip(&m, SL_PROTO_TO_AGENT, &d);
    /* The line docs/protocol.md shows, with the additive fields. */
    assert_string_equal(line,
                        "{\"type\":\"launch\",\"job\":12,\"task\":1,\"name\":\"megatron-3b\","
                        "\"tenant\":\"alice\",\"argv\":[\"python\",\"train.py\",\"--lr=3e-4\"],"
                        "\"image\":null,\"env\":{\"K\":\"V\",\"PATH_EXTRA\":\"a b\\\"c\"},"
                        "\"gpus\":[0,1,2,3],\"gpu_milli\":1000,\"gpu_memory\":0,\"cpu_milli\":16000,"
                        "\"mem_bytes\":137438953472,\"rank\":1,\"world_size\":8,\"local_rank\":1,"
                        "\"master_addr\":\"10.0.0.1\",\"master_port\":29512,\"time_limit\":3600}\n");
    const sl_proto_launch_t *l = &d.u.launch;
    assert_string_equal(l->name, "megatron-3b");
    assert_string_equal(l->tenant, "alice");
    assert_int_equal(l->argc, 3);
    assert_string_equal(l->argv[2], "--lr=3e-4");
    assert_null(l->argv[3]); /* NULL-terminated, as execvp wants */
    assert_null(l->image);
    assert_int_equal(l->nenv, 2);
    assert_string_equal(l->env[1].key, "PATH_EXTRA");
    assert_string_equal(l->env[1].value, "a b\"c");
    assert_int_equal(l->ngpus, 4);
    assert_int_equal(l->gpus[3], 3);
    assert_int_equal(l->cpu_milli, 16000);
    assert_int_equal(l->mem_bytes, INT64_C(137438953472));
    assert_int_equal(l->world_size, 8);
    assert_int_equal(l->master_port, 29512);
    assert_int_equal(l->time_limit, 3600);
    sl_proto_msg_fini(&d);
    sl_free(line);

    /* Only an image: argv null; no env, no GPUs. */
    sl_proto_msg_t img = {.type = SL_PROTO_LAUNCH, .job = 1, .task = 0,
                          .u.launch = {.image = "nvcr.io/x:1", .world_size = 1, .master_port = 29501}};
    line = round_trip(&img, SL_PROTO_TO_AGENT, &d);
    assert_non_null(strstr(line, "\"argv\":null,\"image\":\"nvcr.io/x:1\",\"env\":{},\"gpus\":[]"));
    assert_null(d.u.launch.argv);
    assert_int_equal(d.u.launch.argc, 0);
    assert_int_equal(d.u.launch.ngpus, 0);
    assert_string_equal(d.u.launch.master_addr, SL_PROTO_DEFAULT_MASTER_ADDR);
    assert_null(strstr(line, "mem_limit"));
    assert_null(strstr(line, "cpu_limit_milli"));
    sl_proto_msg_fini(&d);
    sl_free(line);

    /* Limits above the requests: written only when set, read back. */
    sl_proto_msg_t lim = {.type = SL_PROTO_LAUNCH, .job = 3, .task = 0,
                          .u.launch = {.world_size = 1, .master_port = 29503, .mem_bytes = 1 << 20,
                                       .mem_limit = INT64_C(1) << 31, .cpu_limit_milli = 2500}};
    line = round_trip(&lim, SL_PROTO_TO_AGENT, &d);
    assert_non_null(strstr(line, ",\"mem_limit\":2147483648,\"cpu_limit_milli\":2500"));
    assert_int_equal(d.u.launch.mem_limit, INT64_C(1) << 31);
    assert_int_equal(d.u.launch.cpu_limit_milli, 2500);
    sl_proto_msg_fini(&d);
    sl_free(line);

    /* The Unix identity (issue 8): written only when set, absent decodes as
     * NULL, NULL, false. */
    sl_proto_msg_t who = {.type = SL_PROTO_LAUNCH, .job = 2, .task = 0,
                          .u.launch = {.world_size = 1, .master_port = 29502, .user = "alice-svc",
                                       .group = "ml", .allow_root = true}};
    line = round_trip(&who, SL_PROTO_TO_AGENT, &d);
    assert_non_null(strstr(line, ",\"user\":\"alice-svc\",\"group\":\"ml\",\"allow_root\":true}"));
    assert_string_equal(d.u.launch.user, "alice-svc");
    assert_string_equal(d.u.launch.group, "ml");
    assert_true(d.u.launch.allow_root);
    sl_proto_msg_fini(&d);
    sl_free(line);
    line = round_trip(&img, SL_PROTO_TO_AGENT, &d);
    assert_null(strstr(line, "user"));
    assert_null(d.u.launch.user);
    assert_null(d.u.launch.group);
    assert_false(d.u.launch.allow_root);
    sl_proto_msg_fini(&d);
    sl_free(line);

    /* Defaults for a minimal launch are the agent's. */
    const char *min = "{\"type\":\"launch\",\"job\":4,\"task\":2,\"argv\":[]}";
    char err[256];
    assert_int_equal(sl_proto_decode_line(min, strlen(min), SL_PROTO_TO_AGENT, &d, err, sizeof err), 0);
    assert_non_null(d.u.launch.argv);
    assert_int_equal(d.u.launch.argc, 0);
    assert_int_equal(d.u.launch.rank, 2);
    assert_int_equal(d.u.launch.world_size, 1);
    assert_int_equal(d.u.launch.local_rank, 0);
    assert_int_equal(d.u.launch.gpu_milli, 1000);
    assert_int_equal(d.u.launch.master_port, SL_PROTO_DEFAULT_MASTER_PORT);
    assert_string_equal(d.u.launch.master_addr, "127.0.0.1");
    assert_int_equal(d.u.launch.time_limit, 0);
    sl_proto_msg_fini(&d);
}

/* ---- rejections ---- */

typedef struct bad_row {
    sl_proto_dir_t dir;
    const char *line;
    int rc;
    const char *msg; /* a fragment the error must contain */
    bool has_ids;    /* job/task/req were read before the failure */
} bad_row_t;

#define TC SL_PROTO_TO_CTL
#define TA SL_PROTO_TO_AGENT
#define HELLO_NODE "\"node\":{\"name\":\"n1\",\"cpus\":\"4\",\"memory\":\"1Gi\",\"gpus\":1}"

static const bad_row_t bad_rows[] = {
    /* not a message */
    {TC, "[1,2]", SL_EINVAL, "not a JSON object", false},
    {TC, "{\"type\":", SL_EINVAL, "bad JSON at position", false},
    {TA, "\xff\xfe not json", SL_EINVAL, "bad JSON", false},
    {TC, "{\"job\":1}", SL_EINVAL, "message without a type", false},
    {TC, "{\"type\":5}", SL_EINVAL, "message without a type", false},
    /* unknown types, and types of the other direction */
    {TC, "{\"type\":\"bogus\"}", SL_ENOENT, "unknown message type \"bogus\"", false},
    {TC, "{\"type\":\"launch\",\"job\":1,\"task\":0}", SL_ENOENT, "unknown message type", false},
    {TA, "{\"type\":\"hello\",\"token\":\"t\"}", SL_ENOENT, "unknown message type", false},
    {TA, "{\"type\":\"started\",\"job\":1,\"task\":0,\"pid\":1}", SL_ENOENT, "unknown", false},
    /* hello: required fields, types, ranges */
    {TC, "{\"type\":\"hello\"," HELLO_NODE "}", SL_EINVAL, "hello: token: is required", false},
    {TC, "{\"type\":\"hello\",\"token\":7," HELLO_NODE "}", SL_EINVAL, "hello: token: must be a string", false},
    {TC, "{\"type\":\"hello\",\"token\":\"t\"}", SL_EINVAL, "hello: node.name: is required (1..63", false},
    {TC, "{\"type\":\"hello\",\"token\":\"t\",\"node\":[]}", SL_EINVAL, "hello: node.name", false},
    {TC, "{\"type\":\"hello\",\"token\":\"t\",\"node\":{\"name\":\"\"}}", SL_EINVAL, "node.name", false},
    {TC, "{\"type\":\"hello\",\"token\":\"t\",\"node\":{\"name\":"
         "\"nnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnn\"}}",
     SL_EINVAL, "node.name", false},
    {TC, "{\"type\":\"hello\",\"token\":\"t\",\"node\":{\"name\":\"n\",\"gpus\":\"8\"}}", SL_EINVAL,
     "hello: node.gpus: must be a whole number of GPUs", false},
    {TC, "{\"type\":\"hello\",\"token\":\"t\",\"node\":{\"name\":\"n\",\"gpus\":-1}}", SL_EINVAL,
     "node.gpus", false},
    {TC, "{\"type\":\"hello\",\"token\":\"t\",\"node\":{\"name\":\"n\",\"gpus\":4294967296}}", SL_EINVAL,
     "node.gpus", false},
    {TC, "{\"type\":\"hello\",\"token\":\"t\",\"node\":{\"name\":\"n\",\"cpus\":[]}}", SL_EINVAL,
     "hello: node.cpus: must be a quantity string", false},
    {TC, "{\"type\":\"hello\",\"token\":\"t\",\"node\":{\"name\":\"n\",\"memory\":\"12Qi\"}}", SL_EINVAL,
     "hello: node.memory: \"12Qi\": unknown unit", false},
    {TC, "{\"type\":\"hello\",\"token\":\"t\",\"node\":{\"name\":\"n\",\"cpus\":-1}}", SL_EINVAL,
     "node.cpus: \"-1\"", false},
    {TC, "{\"type\":\"hello\",\"token\":\"t\",\"node\":{\"name\":\"n\",\"gpu_memory\":\"9223372036854775808m\"}}",
     SL_EINVAL, "node.gpu_memory", false},
    {TC, "{\"type\":\"hello\",\"token\":\"t\",\"node\":{\"name\":\"n\",\"pool\":1}}", SL_EINVAL,
     "hello: node.pool: must be a string", false},
    {TC, "{\"type\":\"hello\",\"token\":\"t\"," HELLO_NODE ",\"tasks\":{}}", SL_EINVAL,
     "hello: tasks: must be an array", false},
    {TC, "{\"type\":\"hello\",\"token\":\"t\"," HELLO_NODE ",\"tasks\":[{\"job\":1,\"task\":0},5]}",
     SL_EINVAL, "hello: tasks[1]: must be an object", false},
    {TC, "{\"type\":\"hello\",\"token\":\"t\"," HELLO_NODE ",\"tasks\":[{\"task\":0}]}", SL_EINVAL,
     "hello: tasks[0].job: is required", false},
    {TC, "{\"type\":\"hello\",\"token\":\"t\"," HELLO_NODE ",\"tasks\":[{\"job\":1}]}", SL_EINVAL,
     "hello: tasks[0].task: is required", false},
    {TC, "{\"type\":\"hello\",\"token\":\"t\"," HELLO_NODE ",\"tasks\":[{\"job\":1,\"task\":0,\"state\":\"zz\"}]}",
     SL_EINVAL, "hello: tasks[0].state: must be running, exited or failed", false},
    {TC, "{\"type\":\"hello\",\"token\":\"t\"," HELLO_NODE ",\"tasks\":[{\"job\":1,\"task\":0,\"pid\":\"9\"}]}",
     SL_EINVAL, "hello: tasks[0].pid: must be a process id", false},
    {TC, "{\"type\":\"hello\",\"token\":\"t\"," HELLO_NODE
         ",\"tasks\":[{\"job\":1,\"task\":0,\"state\":\"exited\",\"exit_code\":0.5}]}",
     SL_EINVAL, "hello: tasks[0].exit_code: must be a whole number", false},
    /* started, exited, failed, heartbeat */
    {TC, "{\"type\":\"started\",\"task\":0,\"pid\":1}", SL_EINVAL, "started: job: is required", false},
    {TC, "{\"type\":\"started\",\"job\":1,\"pid\":1}", SL_EINVAL, "started: task: is required", false},
    {TC, "{\"type\":\"started\",\"job\":1,\"task\":0}", SL_EINVAL, "started: pid: is required", true},
    {TC, "{\"type\":\"started\",\"job\":-1,\"task\":0,\"pid\":1}", SL_EINVAL, "started: job: must be a job id", false},
    {TC, "{\"type\":\"started\",\"job\":\"1\",\"task\":0,\"pid\":1}", SL_EINVAL, "started: job: must be", false},
    {TC, "{\"type\":\"started\",\"job\":1e300,\"task\":0,\"pid\":1}", SL_EINVAL, "started: job", false},
    {TC, "{\"type\":\"started\",\"job\":1,\"task\":2147483648,\"pid\":1}", SL_EINVAL, "started: task: must be", false},
    {TC, "{\"type\":\"started\",\"job\":1,\"task\":0,\"pid\":4294967296}", SL_EINVAL, "started: pid: must be a process id", true},
    {TC, "{\"type\":\"started\",\"job\":1,\"task\":0,\"pid\":1,\"time\":\"now\"}", SL_EINVAL,
     "started: time: must be a time in seconds", true},
    {TC, "{\"type\":\"started\",\"job\":1,\"task\":0,\"pid\":1,\"time\":1e300}", SL_EINVAL, "started: time", true},
    {TC, "{\"type\":\"exited\",\"job\":1,\"task\":0,\"exit_code\":\"1\"}", SL_EINVAL,
     "exited: exit_code: must be a whole number", true},
    {TC, "{\"type\":\"exited\",\"job\":1,\"task\":0,\"signal\":[]}", SL_EINVAL, "exited: signal: must be", true},
    {TC, "{\"type\":\"failed\",\"job\":1,\"task\":0}", SL_EINVAL, "failed: reason: is required", true},
    {TC, "{\"type\":\"failed\",\"job\":1,\"task\":0,\"reason\":5}", SL_EINVAL, "failed: reason: must be a string", true},
    {TC, "{\"type\":\"heartbeat\",\"time\":-1}", SL_EINVAL, "heartbeat: time: must be", false},
    /* logs, both ways */
    {TC, "{\"type\":\"logs\",\"job\":1,\"task\":0,\"data\":\"x\"}", SL_EINVAL, "logs: req: is required", false},
    {TC, "{\"type\":\"logs\",\"req\":1,\"job\":1,\"task\":0,\"data\":5}", SL_EINVAL, "logs: data: must be a string", true},
    {TC, "{\"type\":\"logs\",\"req\":1,\"job\":1,\"task\":0,\"data\":\"\",\"eof\":1}", SL_EINVAL,
     "logs: eof: must be true or false", true},
    {TC, "{\"type\":\"logs\",\"req\":1,\"job\":1,\"task\":0,\"data\":\"\",\"offset\":-5}", SL_EINVAL,
     "logs: offset: must be a byte offset", true},
    {TA, "{\"type\":\"logs\",\"req\":-1,\"job\":1,\"task\":0}", SL_EINVAL, "logs: req: must be a request id", false},
    {TA, "{\"type\":\"logs\",\"req\":1,\"job\":1,\"task\":0,\"limit\":-1}", SL_EINVAL, "logs: limit: must be", true},
    {TA, "{\"type\":\"logs\",\"req\":1,\"job\":1,\"task\":0,\"offset\":\"0\"}", SL_EINVAL, "logs: offset: must be", true},
    /* welcome, error, kill, ack */
    {TA, "{\"type\":\"welcome\",\"node\":\"n\",\"heartbeat\":0}", SL_EINVAL,
     "welcome: heartbeat: must be a whole number of seconds from 1 to 3600", false},
    {TA, "{\"type\":\"welcome\",\"node\":3}", SL_EINVAL, "welcome: node: must be a string", false},
    {TA, "{\"type\":\"error\"}", SL_EINVAL, "error: message: is required", false},
    {TA, "{\"type\":\"kill\",\"job\":1}", SL_EINVAL, "kill: task: is required", false},
    {TA, "{\"type\":\"kill\",\"job\":1,\"task\":0,\"grace_ms\":-5}", SL_EINVAL, "kill: grace_ms: must be", true},
    {TA, "{\"type\":\"kill\",\"job\":1,\"task\":0,\"signal\":\"SIGSEGV\"}", SL_EINVAL,
     "kill: signal: must be one of SIGHUP", true},
    {TA, "{\"type\":\"kill\",\"job\":1,\"task\":0,\"signal\":15}", SL_EINVAL, "kill: signal: must be", true},
    {TA, "{\"type\":\"kill\",\"job\":1,\"task\":0,\"preempt\":1}", SL_EINVAL,
     "kill: preempt: must be true or false", true},
    {TA, "{\"type\":\"ack\",\"task\":0}", SL_EINVAL, "ack: job: is required", false},
    {TA, "{\"type\":\"ack\",\"job\":true,\"task\":0}", SL_EINVAL, "ack: job: must be a job id", false},
    /* launch: every field */
    {TA, "{\"type\":\"launch\",\"task\":0}", SL_EINVAL, "launch: job: is required", false},
    {TA, "{\"type\":\"launch\",\"job\":1}", SL_EINVAL, "launch: task: is required", false},
    {TA, "{\"type\":\"launch\",\"job\":1,\"task\":0,\"name\":1}", SL_EINVAL, "launch: name: must be a string", true},
    {TA, "{\"type\":\"launch\",\"job\":1,\"task\":0,\"tenant\":[]}", SL_EINVAL, "launch: tenant: must be", true},
    {TA, "{\"type\":\"launch\",\"job\":1,\"task\":0,\"argv\":\"ls\"}", SL_EINVAL,
     "launch: argv: must be an array of strings or null", true},
    {TA, "{\"type\":\"launch\",\"job\":1,\"task\":0,\"argv\":[\"ls\",1]}", SL_EINVAL,
     "launch: argv[1]: must be a string", true},
    {TA, "{\"type\":\"launch\",\"job\":1,\"task\":0,\"image\":{}}", SL_EINVAL, "launch: image: must be a string", true},
    {TA, "{\"type\":\"launch\",\"job\":1,\"task\":0,\"user\":0}", SL_EINVAL, "launch: user: must be a string", true},
    {TA, "{\"type\":\"launch\",\"job\":1,\"task\":0,\"group\":[]}", SL_EINVAL, "launch: group: must be a string", true},
    {TA, "{\"type\":\"launch\",\"job\":1,\"task\":0,\"allow_root\":1}", SL_EINVAL,
     "launch: allow_root: must be true or false", true},
    {TA, "{\"type\":\"launch\",\"job\":1,\"task\":0,\"env\":[]}", SL_EINVAL, "launch: env: must be an object of strings", true},
    {TA, "{\"type\":\"launch\",\"job\":1,\"task\":0,\"env\":{\"A\":1}}", SL_EINVAL,
     "launch: env: the value of A must be a string", true},
    {TA, "{\"type\":\"launch\",\"job\":1,\"task\":0,\"gpus\":3}", SL_EINVAL,
     "launch: gpus: must be an array of GPU indices", true},
    {TA, "{\"type\":\"launch\",\"job\":1,\"task\":0,\"gpus\":[0,\"1\"]}", SL_EINVAL,
     "launch: gpus[1]: must be a GPU index from 0 to 1023", true},
    {TA, "{\"type\":\"launch\",\"job\":1,\"task\":0,\"gpus\":[1024]}", SL_EINVAL, "launch: gpus[0]: must be", true},
    {TA, "{\"type\":\"launch\",\"job\":1,\"task\":0,\"gpu_milli\":1001}", SL_EINVAL, "launch: gpu_milli: must be", true},
    {TA, "{\"type\":\"launch\",\"job\":1,\"task\":0,\"gpu_memory\":-1}", SL_EINVAL, "launch: gpu_memory: must be", true},
    {TA, "{\"type\":\"launch\",\"job\":1,\"task\":0,\"cpu_milli\":0.5}", SL_EINVAL, "launch: cpu_milli: must be", true},
    {TA, "{\"type\":\"launch\",\"job\":1,\"task\":0,\"mem_bytes\":\"1Gi\"}", SL_EINVAL, "launch: mem_bytes: must be", true},
    {TA, "{\"type\":\"launch\",\"job\":1,\"task\":0,\"rank\":-1}", SL_EINVAL, "launch: rank: must be", true},
    {TA, "{\"type\":\"launch\",\"job\":1,\"task\":0,\"world_size\":0}", SL_EINVAL, "launch: world_size: must be", true},
    {TA, "{\"type\":\"launch\",\"job\":1,\"task\":0,\"local_rank\":2147483648}", SL_EINVAL, "launch: local_rank", true},
    {TA, "{\"type\":\"launch\",\"job\":1,\"task\":0,\"master_addr\":1}", SL_EINVAL, "launch: master_addr: must be", true},
    {TA, "{\"type\":\"launch\",\"job\":1,\"task\":0,\"master_port\":65536}", SL_EINVAL,
     "launch: master_port: must be a TCP port from 1 to 65535", true},
    {TA, "{\"type\":\"launch\",\"job\":1,\"task\":0,\"time_limit\":-1}", SL_EINVAL, "launch: time_limit: must be", true},
    /* Fencing fields (additive). */
    {TA, "{\"type\":\"launch\",\"job\":1,\"task\":0,\"on_node_failure\":\"retry\"}", SL_EINVAL,
     "launch: on_node_failure: must be requeue or fail", true},
    {TA, "{\"type\":\"welcome\",\"node_timeout_ms\":0}", SL_EINVAL, "welcome: node_timeout_ms: must be", false},
    {TA, "{\"type\":\"welcome\",\"node_timeout_ms\":1000,\"kill_grace_ms\":-1}", SL_EINVAL,
     "welcome: kill_grace_ms: must be", false},
    {TA, "{\"type\":\"heartbeat\"}", SL_EINVAL, "heartbeat: seq: is required", false},
    {TC, "{\"type\":\"heartbeat\",\"seq\":-1}", SL_EINVAL, "heartbeat: seq: must be", false},
    {TC, "{\"type\":\"exited\",\"job\":1,\"task\":0,\"fenced\":1}", SL_EINVAL, "exited: fenced: must be true or false", true},
    /* Enforcement fields (additive, issue 9). */
    {TC, "{\"type\":\"exited\",\"job\":1,\"task\":0,\"oom_killed\":\"yes\"}", SL_EINVAL,
     "exited: oom_killed: must be true or false", true},
    {TC, "{\"type\":\"exited\",\"job\":1,\"task\":0,\"mem_peak\":-1}", SL_EINVAL,
     "exited: mem_peak: must be a number of bytes", true},
    {TC, "{\"type\":\"exited\",\"job\":1,\"task\":0,\"mem_limit\":\"1Gi\"}", SL_EINVAL,
     "exited: mem_limit: must be a number of bytes", true},
    {TC, "{\"type\":\"hello\",\"token\":\"t\"," HELLO_NODE
         ",\"tasks\":[{\"job\":1,\"task\":0,\"state\":\"exited\",\"mem_peak\":1.5}]}",
     SL_EINVAL, "hello: tasks[0].mem_peak: must be a number of bytes", false},
    {TC, "{\"type\":\"hello\",\"token\":\"t\"," HELLO_NODE
         ",\"tasks\":[{\"job\":1,\"task\":0,\"state\":\"exited\",\"oom_killed\":0}]}",
     SL_EINVAL, "hello: tasks[0].oom_killed: must be true or false", false},
    {TA, "{\"type\":\"launch\",\"job\":1,\"task\":0,\"oom_score_adj\":-1001}", SL_EINVAL,
     "launch: oom_score_adj: must be a whole number from -1000 to 1000", true},
    {TA, "{\"type\":\"launch\",\"job\":1,\"task\":0,\"oom_score_adj\":1001}", SL_EINVAL,
     "launch: oom_score_adj: must be", true},
    {TA, "{\"type\":\"launch\",\"job\":1,\"task\":0,\"oom_score_adj\":\"-500\"}", SL_EINVAL,
     "launch: oom_score_adj: must be", true},
};

/* The fields enforcement added (docs/protocol.md, Enforcement) survive a
 * round trip, are written only when they say something, and their absence
 * decodes to "not known" (exits) and the agent's default (launch). */
static void test_proto_enforcement_fields_round_trip(void **state) {
    (void)state;
    sl_proto_msg_t d;
    char err[256];
    sl_proto_msg_t ex = {.type = SL_PROTO_EXITED, .job = 3, .task = 1, .time = 7,
                         .u.exited = {.exit_code = 137, .signal = 9, .oom_killed = true,
                                      .mem_peak = INT64_C(147849216), .mem_limit = INT64_C(147639500)}};
    char *line = round_trip(&ex, SL_PROTO_TO_CTL, &d);
    assert_string_equal(line, "{\"type\":\"exited\",\"job\":3,\"task\":1,\"exit_code\":137,\"signal\":9,"
                              "\"oom_killed\":true,\"mem_peak\":147849216,\"mem_limit\":147639500,"
                              "\"time\":7.000000}\n");
    assert_true(d.u.exited.oom_killed);
    assert_int_equal(d.u.exited.mem_peak, 147849216);
    assert_int_equal(d.u.exited.mem_limit, 147639500);
    sl_proto_msg_fini(&d);
    sl_free(line);
    /* A peak without an OOM (a task that stayed within its limit). */
    ex.u.exited = (sl_proto_exited_t){.exit_code = 0, .mem_peak = 4096};
    line = round_trip(&ex, SL_PROTO_TO_CTL, &d);
    assert_null(strstr(line, "oom_killed"));
    assert_null(strstr(line, "mem_limit"));
    assert_false(d.u.exited.oom_killed);
    assert_int_equal(d.u.exited.mem_peak, 4096);
    assert_int_equal(d.u.exited.mem_limit, 0);
    sl_proto_msg_fini(&d);
    sl_free(line);
    const char *old = "{\"type\":\"exited\",\"job\":3,\"task\":1,\"exit_code\":0}";
    assert_int_equal(sl_proto_decode_line(old, strlen(old), SL_PROTO_TO_CTL, &d, err, sizeof err), 0);
    assert_false(d.u.exited.oom_killed);
    assert_int_equal(d.u.exited.mem_peak, 0);
    assert_int_equal(d.u.exited.mem_limit, 0);
    sl_proto_msg_fini(&d);

    sl_proto_task_t t = {.job = 3, .task = 1, .state = SL_PROTO_TASK_EXITED, .exit_code = 137,
                         .signal = 9, .oom_killed = true, .mem_peak = 200, .mem_limit = 100,
                         .end_time = 7};
    sl_proto_msg_t h = {.type = SL_PROTO_HELLO,
                        .u.hello = {.token = "t", .node = {.name = "n1"}, .tasks = &t, .ntasks = 1}};
    sl_free(round_trip(&h, SL_PROTO_TO_CTL, &d));
    assert_true(d.u.hello.tasks[0].oom_killed);
    assert_int_equal(d.u.hello.tasks[0].mem_peak, 200);
    assert_int_equal(d.u.hello.tasks[0].mem_limit, 100);
    sl_proto_msg_fini(&d);

    /* oom_score_adj: both ends of the kernel's range and 0 travel; a zeroed
     * launch sends none, which decodes to the agent's default. */
    const int32_t adj[] = {-1000, -999, 0, 1000};
    for (size_t i = 0; i < sizeof adj / sizeof adj[0]; i++) {
        sl_proto_msg_t l = {.type = SL_PROTO_LAUNCH, .job = 1, .task = 0,
                            .u.launch = {.world_size = 1, .master_port = 29500,
                                         .has_oom_score_adj = true, .oom_score_adj = adj[i]}};
        line = round_trip(&l, SL_PROTO_TO_AGENT, &d);
        assert_non_null(strstr(line, "\"oom_score_adj\":"));
        assert_true(d.u.launch.has_oom_score_adj);
        assert_int_equal(d.u.launch.oom_score_adj, adj[i]);
        sl_proto_msg_fini(&d);
        sl_free(line);
    }
    sl_proto_msg_t l = {.type = SL_PROTO_LAUNCH, .job = 1, .task = 0,
                        .u.launch = {.world_size = 1, .master_port = 29500}};
    line = round_trip(&l, SL_PROTO_TO_AGENT, &d);
    assert_null(strstr(line, "oom_score_adj"));
    assert_false(d.u.launch.has_oom_score_adj);
    assert_int_equal(d.u.launch.oom_score_adj, SL_PROTO_DEFAULT_OOM_SCORE_ADJ);
    assert_int_equal(d.u.launch.oom_score_adj, -500);
    sl_proto_msg_fini(&d);
    sl_free(line);
    /* The encoder refuses a value the decoder would. */
    size_t len;
    char buf[1024];
    l.u.launch.has_oom_score_adj = true;
    l.u.launch.oom_score_adj = -1001;
    assert_int_equal(sl_proto_encode(&l, buf, sizeof buf, &len), SL_EINVAL);
    l.u.launch.oom_score_adj = 1001;
    assert_int_equal(sl_proto_encode(&l, buf, sizeof buf, &len), SL_EINVAL);
}

/* A container's fields (docs/protocol.md, launch) travel, only when set. */
static void test_proto_launch_container_fields_round_trip(void **state) {
    (void)state;
    sl_proto_msg_t d;
    const char *const mounts[] = {"/data:/data:ro", "/s:/t"};
    sl_proto_msg_t l = {.type = SL_PROTO_LAUNCH, .job = 1, .task = 0,
                        .u.launch = {.world_size = 1, .master_port = 29500, .image = "img",
                                     .mounts = mounts, .nmounts = 2, .shm_size = 1 << 30,
                                     .workdir = "/w"}};
    char *line = round_trip(&l, SL_PROTO_TO_AGENT, &d);
    assert_non_null(strstr(line, "\"mounts\":[\"/data:/data:ro\",\"/s:/t\"]"));
    assert_int_equal(d.u.launch.nmounts, 2);
    assert_string_equal(d.u.launch.mounts[1], "/s:/t");
    assert_int_equal(d.u.launch.shm_size, 1 << 30);
    assert_string_equal(d.u.launch.workdir, "/w");
    sl_proto_msg_fini(&d);
    sl_free(line);
    sl_proto_msg_t z = {.type = SL_PROTO_LAUNCH, .job = 1, .task = 0,
                        .u.launch = {.world_size = 1, .master_port = 29500}};
    line = round_trip(&z, SL_PROTO_TO_AGENT, &d);
    assert_null(strstr(line, "mounts"));
    assert_null(strstr(line, "shm_size"));
    assert_null(strstr(line, "workdir"));
    assert_int_equal(d.u.launch.nmounts, 0);
    assert_null(d.u.launch.workdir);
    sl_proto_msg_fini(&d);
    sl_free(line);
}

/* The fields fencing added (docs/protocol.md, Fencing) survive a round
 * trip, and their absence decodes to "no fencing". */
static void test_proto_fencing_fields_round_trip(void **state) {
    (void)state;
    sl_proto_msg_t d;
    sl_proto_msg_t w = {.type = SL_PROTO_WELCOME,
                        .u.welcome = {.node = "n1", .heartbeat = 2, .node_timeout_ms = 10000,
                                      .kill_grace_ms = 0}};
    char *line = round_trip(&w, SL_PROTO_TO_AGENT, &d);
    assert_string_equal(line, "{\"type\":\"welcome\",\"node\":\"n1\",\"heartbeat\":2,"
                              "\"node_timeout_ms\":10000,\"kill_grace_ms\":0}\n");
    assert_int_equal(d.u.welcome.node_timeout_ms, 10000);
    assert_int_equal(d.u.welcome.kill_grace_ms, 0);
    sl_proto_msg_fini(&d);
    sl_free(line);
    char err[256];
    const char *old = "{\"type\":\"welcome\",\"node\":\"n1\"}";
    assert_int_equal(sl_proto_decode_line(old, strlen(old), SL_PROTO_TO_AGENT, &d, err, sizeof err), 0);
    assert_int_equal(d.u.welcome.node_timeout_ms, 0);
    assert_int_equal(d.u.welcome.kill_grace_ms, -1);
    sl_proto_msg_fini(&d);

    sl_proto_msg_t hb = {.type = SL_PROTO_HEARTBEAT, .time = 5, .u.heartbeat.seq = 41};
    sl_free(round_trip(&hb, SL_PROTO_TO_CTL, &d));
    assert_int_equal(d.u.heartbeat.seq, 41);
    sl_proto_msg_fini(&d);
    sl_proto_msg_t echo = {.type = SL_PROTO_HEARTBEAT_ECHO, .u.heartbeat.seq = 41};
    line = round_trip(&echo, SL_PROTO_TO_AGENT, &d);
    assert_string_equal(line, "{\"type\":\"heartbeat\",\"seq\":41}\n");
    assert_int_equal(d.type, SL_PROTO_HEARTBEAT_ECHO);
    assert_int_equal(d.u.heartbeat.seq, 41);
    sl_proto_msg_fini(&d);
    sl_free(line);

    sl_proto_msg_t ex = {.type = SL_PROTO_EXITED, .job = 3, .task = 1, .time = 7,
                         .u.exited = {.exit_code = 143, .signal = 15, .fenced = true}};
    sl_free(round_trip(&ex, SL_PROTO_TO_CTL, &d));
    assert_true(d.u.exited.fenced);
    sl_proto_msg_fini(&d);
    sl_proto_task_t t = {.job = 3, .task = 1, .state = SL_PROTO_TASK_EXITED, .exit_code = 143,
                         .signal = 15, .fenced = true, .end_time = 7};
    sl_proto_msg_t h = {.type = SL_PROTO_HELLO,
                        .u.hello = {.token = "t", .node = {.name = "n1"}, .tasks = &t, .ntasks = 1}};
    sl_free(round_trip(&h, SL_PROTO_TO_CTL, &d));
    assert_true(d.u.hello.tasks[0].fenced);
    sl_proto_msg_fini(&d);

    sl_proto_msg_t l = {.type = SL_PROTO_LAUNCH, .job = 1, .task = 0,
                        .u.launch = {.world_size = 1, .master_port = 29500, .gpu_milli = 0,
                                     .on_node_failure = "requeue"}};
    sl_free(round_trip(&l, SL_PROTO_TO_AGENT, &d));
    assert_string_equal(d.u.launch.on_node_failure, "requeue");
    sl_proto_msg_fini(&d);
}

static void test_proto_rejects_bad_messages(void **state) {
    (void)state;
    for (size_t i = 0; i < sizeof bad_rows / sizeof bad_rows[0]; i++) {
        const bad_row_t *r = &bad_rows[i];
        sl_proto_msg_t m;
        char err[256];
        int rc = sl_proto_decode_line(r->line, strlen(r->line), r->dir, &m, err, sizeof err);
        if (rc != r->rc || strstr(err, r->msg) == NULL || m.has_ids != r->has_ids)
            fail_msg("row %zu %s: rc %d (want %d) has_ids %d err \"%s\" (want \"%s\")", i, r->line, rc,
                     r->rc, m.has_ids, err, r->msg);
        sl_proto_msg_fini(&m);
    }
}

static void test_proto_launch_failure_keeps_ids(void **state) {
    (void)state;
    /* The agent answers a launch it cannot run with `failed` for its job and
     * task, so those must be readable when a later field is bad. */
    const char *line = "{\"type\":\"launch\",\"job\":41,\"task\":3,\"argv\":[\"x\",null]}";
    sl_proto_msg_t m;
    char err[256];
    assert_int_equal(sl_proto_decode_line(line, strlen(line), TA, &m, err, sizeof err), SL_EINVAL);
    assert_int_equal(m.type, SL_PROTO_LAUNCH);
    assert_true(m.has_ids);
    assert_int_equal(m.job, 41);
    assert_int_equal(m.task, 3);
    assert_string_equal(err, "launch: argv[1]: must be a string");
    sl_proto_msg_fini(&m);
    assert_int_equal(m.type, SL_PROTO_NONE);
}

static void test_proto_exit_status_out_of_range_is_flagged(void **state) {
    (void)state;
    static const struct {
        const char *line;
        int64_t code, sig;
        bool bad;
    } rows[] = {
        {"{\"type\":\"exited\",\"job\":1,\"task\":0,\"exit_code\":0,\"signal\":0}", 0, 0, false},
        {"{\"type\":\"exited\",\"job\":1,\"task\":0,\"exit_code\":255}", 255, 0, false},
        {"{\"type\":\"exited\",\"job\":1,\"task\":0,\"signal\":9}", 137, 9, false},
        {"{\"type\":\"exited\",\"job\":1,\"task\":0,\"signal\":127}", 255, 127, false},
        {"{\"type\":\"exited\",\"job\":1,\"task\":0}", 0, 0, false},
        {"{\"type\":\"exited\",\"job\":1,\"task\":0,\"exit_code\":256}", 256, 0, true},
        {"{\"type\":\"exited\",\"job\":1,\"task\":0,\"exit_code\":-1,\"signal\":0}", -1, 0, true},
        {"{\"type\":\"exited\",\"job\":1,\"task\":0,\"exit_code\":4294967296,\"signal\":0}", INT64_C(4294967296), 0, true},
        {"{\"type\":\"exited\",\"job\":1,\"task\":0,\"signal\":2147483647}", 0, 2147483647, true},
        {"{\"type\":\"exited\",\"job\":1,\"task\":0,\"signal\":128}", 0, 128, true},
        {"{\"type\":\"exited\",\"job\":1,\"task\":0,\"signal\":-3}", 0, -3, true},
        {"{\"type\":\"exited\",\"job\":1,\"task\":0,\"exit_code\":9223372036854775807}", INT64_MAX, 0, true},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        sl_proto_msg_t m;
        char err[256];
        int rc = sl_proto_decode_line(rows[i].line, strlen(rows[i].line), TC, &m, err, sizeof err);
        if (rc != 0 || m.u.exited.exit_code != rows[i].code || m.u.exited.signal != rows[i].sig ||
            m.u.exited.status_out_of_range != rows[i].bad)
            fail_msg("row %zu: rc %d %s code %lld sig %lld bad %d", i, rc, err,
                     (long long)m.u.exited.exit_code, (long long)m.u.exited.signal,
                     m.u.exited.status_out_of_range);
        sl_proto_msg_fini(&m);
    }
    /* The same rule in a hello's task list. */
    const char *h = "{\"type\":\"hello\",\"token\":\"t\"," HELLO_NODE ",\"tasks\":[{\"job\":1,\"task\":0,"
                    "\"state\":\"exited\",\"signal\":2147483647,\"end_time\":5}]}";
    sl_proto_msg_t m;
    char err[256];
    assert_int_equal(sl_proto_decode_line(h, strlen(h), TC, &m, err, sizeof err), 0);
    assert_true(m.u.hello.tasks[0].status_out_of_range);
    assert_true(m.u.hello.tasks[0].end_time == 5);
    sl_proto_msg_fini(&m);
}

static void test_proto_line_length_limit(void **state) {
    (void)state;
    /* A heartbeat padded to exactly the limit decodes; one byte more does not. */
    size_t n = SL_PROTO_MAX_LINE;
    char *line = malloc(n + 2);
    assert_non_null(line);
    const char *head = "{\"type\":\"heartbeat\",\"pad\":\"";
    memset(line, 'p', n + 1);
    memcpy(line, head, strlen(head));
    memcpy(line + n - 2, "\"}", 2);
    sl_proto_msg_t m;
    char err[256];
    assert_int_equal(sl_proto_decode_line(line, n, TC, &m, err, sizeof err), 0);
    assert_int_equal(m.type, SL_PROTO_HEARTBEAT);
    sl_proto_msg_fini(&m);
    memcpy(line + n - 1, "\"}", 2);
    assert_int_equal(sl_proto_decode_line(line, n + 1, TC, &m, err, sizeof err), SL_EINVAL);
    assert_string_equal(err, "message longer than 1 MiB");
    sl_proto_msg_fini(&m);
    free(line);
}

static void test_proto_encode_short_buffer_and_bad_input(void **state) {
    (void)state;
    sl_proto_msg_t ack = {.type = SL_PROTO_ACK, .job = 12, .task = 5};
    const char *want = "{\"type\":\"ack\",\"job\":12,\"task\":5}\n";
    char buf[64];
    size_t len;
    /* snprintf semantics: the length is known whatever the room. */
    for (size_t cap = 0; cap <= strlen(want) + 1; cap++) {
        memset(buf, 'x', sizeof buf);
        assert_int_equal(sl_proto_encode(&ack, buf, cap, &len), 0);
        assert_int_equal(len, strlen(want));
        if (cap > len) assert_string_equal(buf, want);
        else if (cap > 0) assert_int_equal(buf[cap - 1], '\0');
        assert_int_equal(buf[cap], 'x'); /* nothing past cap */
    }
    /* Messages that cannot be encoded. */
    sl_proto_msg_t bad[] = {
        {.type = SL_PROTO_NONE},
        {.type = SL_PROTO_NTYPES},
        {.type = SL_PROTO_HELLO, .u.hello.node.name = "n"},
        {.type = SL_PROTO_HELLO, .u.hello.token = "t"},
        {.type = SL_PROTO_FAILED, .job = 1},
        {.type = SL_PROTO_ERROR},
        {.type = SL_PROTO_LAUNCH, .u.launch.argc = 2},
        {.type = SL_PROTO_HEARTBEAT, .time = INFINITY},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(sl_proto_encode(&bad[i], buf, sizeof buf, &len), SL_EINVAL);
        assert_null(sl_proto_encode_alloc(&bad[i], &len));
    }
    /* Bytes that are not UTF-8 become '?', so the line is always JSON. */
    sl_proto_msg_t e = {.type = SL_PROTO_ERROR, .u.error.message = "a\xff" "b\xc3(\xe2\x82\xac\x01"};
    assert_int_equal(sl_proto_encode(&e, buf, sizeof buf, &len), 0);
    assert_string_equal(buf, "{\"type\":\"error\",\"message\":\"a?b?(\xe2\x82\xac\\u0001\"}\n");
    sl_proto_msg_t d;
    char err[256];
    assert_int_equal(sl_proto_decode_line(buf, len - 1, TA, &d, err, sizeof err), 0);
    sl_proto_msg_fini(&d);
    assert_string_equal(sl_proto_type_name(SL_PROTO_LOGS_REQ), "logs");
    assert_string_equal(sl_proto_type_name(SL_PROTO_NTYPES), "?");
}

static void test_proto_decode_holds_its_document(void **state) {
    (void)state;
    /* Strings stay valid after the caller drops its reference. */
    json_t *o = json_pack("{s:s,s:s}", "type", "error", "message", "go away");
    sl_proto_msg_t m;
    char err[64];
    assert_int_equal(sl_proto_decode(o, TA, &m, err, sizeof err), 0);
    json_decref(o);
    assert_string_equal(m.u.error.message, "go away");
    sl_proto_msg_fini(&m);
    sl_proto_msg_fini(&m); /* a zeroed message is fine */
}

/* The usage summary a heartbeat may carry (proto_usage.h): every field
 * survives a round trip, absent ones decode as absent (never 0), a line
 * short of room still reports the length it needs, and each bad field is
 * named. */
static void test_proto_heartbeat_usage_round_trip(void **state) {
    (void)state;
    sl_proto_usage_t u[] = {
        {.job = 12, .task = 0, .samples = 30, .gpu_util_mean = 0.41, .gpu_util_peak = 0.97,
         .gpu_mem_peak = INT64_C(23) << 30, .gpu_mem_total = INT64_C(81559) << 20,
         .cpu_seconds = 12.5, .mem_peak = INT64_C(3) << 30},
        {.job = 13, .task = 2, .gpu_mem_peak = -1, .gpu_mem_total = -1, .cpu_seconds = -1,
         .mem_peak = -1, .no_nvml = true},
    };
    sl_proto_msg_t hb = {.type = SL_PROTO_HEARTBEAT, .time = 5, .u.heartbeat = {.seq = 7, .usage = u,
                                                                               .nusage = 2}};
    sl_proto_msg_t d;
    char *line = round_trip(&hb, SL_PROTO_TO_CTL, &d);
    assert_string_equal(line, "{\"type\":\"heartbeat\",\"seq\":7,\"usage\":["
                              "{\"job\":12,\"task\":0,\"samples\":30,\"gpu_util_mean\":0.4100,"
                              "\"gpu_util_peak\":0.9700,\"gpu_mem_peak\":24696061952,"
                              "\"gpu_mem_total\":85520809984,\"cpu_seconds\":12.500,"
                              "\"mem_peak\":3221225472},"
                              "{\"job\":13,\"task\":2,\"nvml\":false}],\"time\":5.000000}\n");
    assert_int_equal(d.u.heartbeat.seq, 7);
    assert_int_equal(d.u.heartbeat.nusage, 2);
    const sl_proto_usage_t *a = &d.u.heartbeat.usage[0], *b = &d.u.heartbeat.usage[1];
    assert_int_equal(a->job, 12);
    assert_int_equal(a->samples, 30);
    assert_true(fabs(a->gpu_util_mean - 0.41) < 1e-9 && fabs(a->gpu_util_peak - 0.97) < 1e-9);
    assert_int_equal(a->gpu_mem_peak, INT64_C(23) << 30);
    assert_int_equal(a->gpu_mem_total, INT64_C(81559) << 20);
    assert_true(a->cpu_seconds == 12.5);
    assert_int_equal(a->mem_peak, INT64_C(3) << 30);
    assert_false(a->no_nvml);
    assert_int_equal(b->job, 13);
    assert_int_equal(b->task, 2);
    assert_int_equal(b->samples, 0);
    assert_int_equal(b->gpu_mem_peak, -1);
    assert_int_equal(b->gpu_mem_total, -1);
    assert_true(b->cpu_seconds < 0);
    assert_int_equal(b->mem_peak, -1);
    assert_true(b->no_nvml);
    sl_proto_msg_fini(&d);
    /* snprintf semantics through the usage too. */
    char small[40];
    size_t len;
    assert_int_equal(sl_proto_encode(&hb, small, sizeof small, &len), 0);
    assert_int_equal(len, strlen(line));
    sl_free(line);
    /* A heartbeat without usage decodes with none. */
    char err[256];
    const char *old = "{\"type\":\"heartbeat\",\"seq\":1}";
    assert_int_equal(sl_proto_decode_line(old, strlen(old), SL_PROTO_TO_CTL, &d, err, sizeof err), 0);
    assert_int_equal(d.u.heartbeat.nusage, 0);
    assert_null(d.u.heartbeat.usage);
    sl_proto_msg_fini(&d);
    static const struct {
        const char *line, *err;
    } bad[] = {
        {"{\"type\":\"heartbeat\",\"usage\":{}}", "heartbeat: usage: must be an array"},
        {"{\"type\":\"heartbeat\",\"usage\":[5]}", "heartbeat: usage[0]: must be an object"},
        {"{\"type\":\"heartbeat\",\"usage\":[{\"task\":0}]}", "heartbeat: usage[0].job: must be a job id"},
        {"{\"type\":\"heartbeat\",\"usage\":[{\"job\":1}]}", "heartbeat: usage[0].task: must be"},
        {"{\"type\":\"heartbeat\",\"usage\":[{\"job\":1,\"task\":0,\"samples\":-1}]}",
         "heartbeat: usage[0].samples: must be"},
        {"{\"type\":\"heartbeat\",\"usage\":[{\"job\":1,\"task\":0},{\"job\":1,\"task\":1,"
         "\"gpu_util_mean\":1.5}]}", "heartbeat: usage[1].gpu_util_mean: must be a fraction from 0 to 1"},
        {"{\"type\":\"heartbeat\",\"usage\":[{\"job\":1,\"task\":0,\"gpu_util_peak\":\"x\"}]}",
         "heartbeat: usage[0].gpu_util_peak: must be a fraction"},
        {"{\"type\":\"heartbeat\",\"usage\":[{\"job\":1,\"task\":0,\"gpu_mem_peak\":1.5}]}",
         "heartbeat: usage[0].gpu_mem_peak: must be a number of bytes"},
        {"{\"type\":\"heartbeat\",\"usage\":[{\"job\":1,\"task\":0,\"gpu_mem_total\":-2}]}",
         "heartbeat: usage[0].gpu_mem_total: must be"},
        {"{\"type\":\"heartbeat\",\"usage\":[{\"job\":1,\"task\":0,\"cpu_seconds\":-1}]}",
         "heartbeat: usage[0].cpu_seconds: must be a number of seconds"},
        {"{\"type\":\"heartbeat\",\"usage\":[{\"job\":1,\"task\":0,\"mem_peak\":\"1Gi\"}]}",
         "heartbeat: usage[0].mem_peak: must be"},
        {"{\"type\":\"heartbeat\",\"usage\":[{\"job\":1,\"task\":0,\"nvml\":0}]}",
         "heartbeat: usage[0].nvml: must be true or false"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int rc = sl_proto_decode_line(bad[i].line, strlen(bad[i].line), SL_PROTO_TO_CTL, &d, err,
                                      sizeof err);
        if (rc != SL_EINVAL || strstr(err, bad[i].err) == NULL)
            fail_msg("%s: rc %d, \"%s\" lacks \"%s\"", bad[i].line, rc, err, bad[i].err);
        assert_true(d.has_ids); /* still a heartbeat to answer */
        assert_int_equal(d.u.heartbeat.nusage, 0);
        sl_proto_msg_fini(&d);
    }
}

/* node.taints is optional: a hello without it (an older agent) decodes
 * with NULL, and one without taints encodes no key. */
static void test_proto_hello_taints_optional(void **state) {
    (void)state;
    const char *line = "{\"type\":\"hello\",\"token\":\"t\",\"node\":{\"name\":\"n1\"},\"tasks\":[]}";
    sl_proto_msg_t d;
    char err[200];
    assert_int_equal(sl_proto_decode_line(line, strlen(line), SL_PROTO_TO_CTL, &d, err, sizeof err), 0);
    assert_null(d.u.hello.node.taints);
    sl_proto_msg_fini(&d);
    sl_proto_msg_t m = {.type = SL_PROTO_HELLO, .u.hello = {.token = "t", .node = {.name = "n1"}}};
    size_t len;
    char *enc = sl_proto_encode_alloc(&m, &len);
    assert_non_null(enc);
    assert_null(strstr(enc, "taints"));
    sl_free(enc);
    const char *bad = "{\"type\":\"hello\",\"token\":\"t\",\"node\":{\"name\":\"n1\",\"taints\":7},\"tasks\":[]}";
    assert_int_not_equal(sl_proto_decode_line(bad, strlen(bad), SL_PROTO_TO_CTL, &d, err, sizeof err), 0);
    assert_non_null(strstr(err, "taints"));
    sl_proto_msg_fini(&d);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_proto_hello_taints_optional),
        cmocka_unit_test_teardown(test_proto_hello_round_trip, tu_teardown),
        cmocka_unit_test_teardown(test_proto_task_reports_round_trip, tu_teardown),
        cmocka_unit_test_teardown(test_proto_logs_round_trip, tu_teardown),
        cmocka_unit_test_teardown(test_proto_logs_reply_without_job_and_task, tu_teardown),
        cmocka_unit_test_teardown(test_proto_controller_messages_round_trip, tu_teardown),
        cmocka_unit_test_teardown(test_proto_launch_round_trip, tu_teardown),
        cmocka_unit_test_teardown(test_proto_rejects_bad_messages, tu_teardown),
        cmocka_unit_test_teardown(test_proto_fencing_fields_round_trip, tu_teardown),
        cmocka_unit_test_teardown(test_proto_enforcement_fields_round_trip, tu_teardown),
        cmocka_unit_test_teardown(test_proto_launch_failure_keeps_ids, tu_teardown),
        cmocka_unit_test_teardown(test_proto_exit_status_out_of_range_is_flagged, tu_teardown),
        cmocka_unit_test_teardown(test_proto_line_length_limit, tu_teardown),
        cmocka_unit_test_teardown(test_proto_encode_short_buffer_and_bad_input, tu_teardown),
        cmocka_unit_test_teardown(test_proto_decode_holds_its_document, tu_teardown),
        cmocka_unit_test_teardown(test_proto_heartbeat_usage_round_trip, tu_teardown),
        cmocka_unit_test_teardown(test_proto_launch_container_fields_round_trip, tu_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
