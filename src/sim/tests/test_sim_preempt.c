/*
 * test_sim_preempt.c - replays with --preempt whose every number is worked
 * out by hand: a priority preemption with and without checkpoints (the
 * victim is requeued, keeps its first start and submit time, and redoes
 * the work it lost), an elastic job that grows when a job ends and shrinks
 * for a higher priority (its work scales with its size), and the las queue
 * preempting a job that aged into a lower queue.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"
#include "simtest.h"

#define NEAR(a, b) assert_true(fabs((a) - (b)) < 1e-9)
#define S(x) ((int64_t)(x) * 1000000)

static sim_replay_result_t replay(const char *nodes, const char *jobs, const char *queue,
                                  bool preempt, int64_t ckpt_us, sim_trace_t *t) {
    char pn[256], pj[256], err[512];
    simtest_put("n.csv", nodes, pn, sizeof pn);
    simtest_put("j.csv", jobs, pj, sizeof pj);
    sim_trace_init(t);
    assert_int_equal(sim_load(t, pn, pj, NULL, SIM_FMT_AUTO, err, sizeof err), 0);
    sim_replay_cfg_t cfg = {.queue = queue, .placement = "bestfit", .backfill = "none",
                            .sharing = true, .estimate_exact = true, .seed = 1,
                            .preempt = preempt, .checkpoint_us = ckpt_us};
    sim_run_opts_t o = {.check = true};
    sim_replay_result_t r;
    int rc = sim_replay_run(t, &cfg, &o, &r, err, sizeof err);
    if (rc != 0) fail_msg("replay: %s", err);
    return r;
}

static const char *ONE_GPU = "name,cpu,memory,gpus,gpu_model,gpu_memory\nn1,8,64Gi,1,A100,80Gi\n";
static const char *TWO_GPUS = "name,cpu,memory,gpus,gpu_model,gpu_memory\nn1,8,64Gi,2,A100,80Gi\n";

/* a (priority 0) runs from 0; b (priority 5) arrives at 4 and preempts it;
 * b runs 4..6; a starts again at 6. Without checkpoints a redoes all 10 s
 * (ends at 16, 4 GPU-s lost); with a checkpoint every 3 s it keeps 3 s of
 * its 4 and ends at 13 (1 GPU-s lost). Without --preempt b waits. */
static void test_sim_preempt_priority_by_hand(void **state) {
    (void)state;
    const char *jobs = "id,tenant,submit,duration,gpus,priority\n"
                       "a,x,0,10,1,0\n"
                       "b,y,4,2,1,5\n";
    sim_trace_t t;
    sim_replay_result_t r = replay(ONE_GPU, jobs, "fifo", true, 0, &t);
    assert_int_equal(r.completed, 2);
    assert_int_equal(r.preemptions, 1);
    assert_int_equal(r.recs[0].preempted, 1);
    assert_int_equal(r.recs[0].start_us, 0); /* its first start */
    assert_int_equal(r.recs[0].end_us, S(16));
    assert_int_equal(r.recs[1].start_us, S(4));
    assert_int_equal(r.recs[1].end_us, S(6));
    NEAR(r.lost_gpu_h, 4.0 / 3600);
    NEAR(r.jct_s.mean, (16 + 2) / 2.0);
    NEAR(r.tenants[0].gpu_hours, 14.0 / 3600); /* 4 s lost + 10 s again */
    sim_replay_result_fini(&r);
    sim_trace_fini(&t);

    r = replay(ONE_GPU, jobs, "fifo", true, S(3), &t);
    assert_int_equal(r.recs[0].end_us, S(13));
    NEAR(r.lost_gpu_h, 1.0 / 3600);
    sim_replay_result_fini(&r);
    sim_trace_fini(&t);

    r = replay(ONE_GPU, jobs, "fifo", false, 0, &t);
    assert_int_equal(r.preemptions, 0);
    assert_int_equal(r.recs[0].end_us, S(10));
    assert_int_equal(r.recs[1].start_us, S(10));
    sim_replay_result_fini(&r);
    sim_trace_fini(&t);
}

/* Two GPUs. r holds one for 4 s; e (elastic, 1..2 tasks, 10 s at 2 tasks
 * = 20 task-s) starts at 1 task, grows to 2 at 4 (16 task-s left), h
 * (priority 5) arrives at 6 (12 left) and shrinks e to 1 task; h ends at
 * 8 (10 left) and e grows back: it ends at 13. Without --preempt e keeps
 * 1 task and ends at 20. */
static void test_sim_preempt_elastic_by_hand(void **state) {
    (void)state;
    const char *jobs = "id,tenant,submit,duration,tasks,min_tasks,gpus,priority\n"
                       "r,x,0,4,1,,1,0\n"
                       "e,x,0,10,2,1,1,0\n"
                       "h,y,6,2,1,,1,5\n";
    sim_trace_t t;
    sim_replay_result_t r = replay(TWO_GPUS, jobs, "fifo", true, 0, &t);
    assert_int_equal(t.jobs[1].min_tasks, 1);
    assert_int_equal(r.completed, 3);
    assert_int_equal(r.preemptions, 0);
    assert_int_equal(r.shrinks, 1);
    assert_int_equal(r.grows, 2);
    assert_int_equal(r.recs[1].start_us, 0);
    assert_int_equal(r.recs[1].end_us, S(13));
    assert_int_equal(r.recs[2].start_us, S(6));
    assert_int_equal(r.recs[2].end_us, S(8));
    NEAR(r.lost_gpu_h, 0);
    sim_replay_result_fini(&r);
    sim_trace_fini(&t);

    r = replay(TWO_GPUS, jobs, "fifo", false, 0, &t);
    assert_int_equal(r.recs[1].end_us, S(20));
    assert_int_equal(r.grows, 0);
    sim_replay_result_fini(&r);
    sim_trace_fini(&t);
}

/* las (queues split at 3600 GPU-s): a has run 4000 s when b arrives, so
 * a is in queue 1 and b (queue 0) preempts it; a runs again after b. */
static void test_sim_preempt_las_by_hand(void **state) {
    (void)state;
    const char *jobs = "id,tenant,submit,duration,gpus\n"
                       "a,x,0,5000,1\n"
                       "b,x,4000,10,1\n";
    sim_trace_t t;
    sim_replay_result_t r = replay(ONE_GPU, jobs, "las", true, 0, &t);
    assert_int_equal(r.preemptions, 1);
    assert_int_equal(r.recs[1].start_us, S(4000));
    assert_int_equal(r.recs[0].end_us, S(9010));
    NEAR(r.lost_gpu_h, 4000.0 / 3600);
    sim_replay_result_fini(&r);
    sim_trace_fini(&t);
    r = replay(ONE_GPU, jobs, "las", false, 0, &t);
    assert_int_equal(r.recs[1].start_us, S(5000));
    sim_replay_result_fini(&r);
    sim_trace_fini(&t);
}

/* A min_tasks above tasks is refused, naming the field. */
static void test_sim_preempt_min_tasks_checked(void **state) {
    (void)state;
    char pn[256], pj[256], err[512];
    simtest_put("n.csv", ONE_GPU, pn, sizeof pn);
    simtest_put("j.csv", "id,submit,duration,tasks,min_tasks\na,0,1,2,3\n", pj, sizeof pj);
    sim_trace_t t;
    sim_trace_init(&t);
    assert_int_equal(sim_load(&t, pn, pj, NULL, SIM_FMT_AUTO, err, sizeof err), SL_EINVAL);
    assert_non_null(strstr(err, "min_tasks"));
    sim_trace_fini(&t);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sim_preempt_priority_by_hand),
        cmocka_unit_test(test_sim_preempt_elastic_by_hand),
        cmocka_unit_test(test_sim_preempt_las_by_hand),
        cmocka_unit_test(test_sim_preempt_min_tasks_checked),
    };
    return cmocka_run_group_tests(tests, simtest_setup, simtest_teardown);
}
