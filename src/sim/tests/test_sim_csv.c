/*
 * test_sim_csv.c - the simulator's CSV reader and trace loaders: good files
 * load field by field, and every malformed file stops the load with an
 * error naming the file, the exact line and column, and the field.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim.h"
#include "simtest.h"

/* ---- the reader ---- */

static void test_sim_csv_quotes_crlf_and_positions(void **state) {
    (void)state;
    const char *text = "a,b,c\r\n"
                       "1, \"x,y\" ,3\r\n"
                       "\"multi\nline\",\"say \"\"hi\"\"\",\r\n"
                       "\n"
                       "last,  sp  ,z";
    sim_csv_t *c;
    char err[256];
    sim_csv_open_text("t.csv", text, strlen(text), &c);
    assert_int_equal(sim_csv_next(c, err, sizeof err), 1);
    assert_int_equal(sim_csv_nfields(c), 3);
    assert_string_equal(sim_csv_field(c, 2), "c");
    assert_int_equal(sim_csv_next(c, err, sizeof err), 1);
    assert_string_equal(sim_csv_field(c, 1), "x,y");
    assert_int_equal(sim_csv_line(c, 1), 2);
    assert_int_equal(sim_csv_col(c, 1), 4); /* the opening quote */
    assert_int_equal(sim_csv_col(c, 2), 11);
    assert_int_equal(sim_csv_next(c, err, sizeof err), 1);
    assert_int_equal(sim_csv_nfields(c), 3);
    assert_string_equal(sim_csv_field(c, 0), "multi\nline");
    assert_string_equal(sim_csv_field(c, 1), "say \"hi\"");
    assert_string_equal(sim_csv_field(c, 2), "");
    assert_int_equal(sim_csv_line(c, 1), 4); /* after the embedded newline */
    assert_int_equal(sim_csv_col(c, 1), 7);
    /* The empty line 5 is not a record; the last line has no newline. */
    assert_int_equal(sim_csv_next(c, err, sizeof err), 1);
    assert_int_equal(sim_csv_record_line(c), 6);
    assert_string_equal(sim_csv_field(c, 1), "sp");
    assert_int_equal(sim_csv_col(c, 2), 13);
    assert_int_equal(sim_csv_next(c, err, sizeof err), 0);
    sim_csv_close(c);
}

static void test_sim_csv_unterminated_quote(void **state) {
    (void)state;
    const char *text = "a,b\n1,2\n3,\"open\n4,5\n";
    sim_csv_t *c;
    char err[256];
    sim_csv_open_text("q.csv", text, strlen(text), &c);
    assert_int_equal(sim_csv_next(c, err, sizeof err), 1);
    assert_int_equal(sim_csv_next(c, err, sizeof err), 1);
    assert_int_equal(sim_csv_next(c, err, sizeof err), SL_EINVAL);
    assert_string_equal(err, "q.csv:3:3: unterminated quoted field");
    sim_csv_close(c);
}

static void test_sim_csv_text_after_quote(void **state) {
    (void)state;
    const char *text = "a,b\n\"x\"y,2\n";
    sim_csv_t *c;
    char err[256];
    sim_csv_open_text("r.csv", text, strlen(text), &c);
    assert_int_equal(sim_csv_next(c, err, sizeof err), 1);
    assert_int_equal(sim_csv_next(c, err, sizeof err), SL_EINVAL);
    assert_string_equal(err, "r.csv:2:4: unexpected 'y' after closing quote");
    sim_csv_close(c);
}

static void test_sim_csv_bom(void **state) {
    (void)state;
    const char *text = "\xEF\xBB\xBFid,x\n";
    sim_csv_t *c;
    char err[256];
    sim_csv_open_text("b.csv", text, strlen(text), &c);
    assert_int_equal(sim_csv_next(c, err, sizeof err), 1);
    assert_string_equal(sim_csv_field(c, 0), "id");
    assert_int_equal(sim_csv_col(c, 0), 1);
    sim_csv_close(c);
}

static void test_sim_csv_missing_file(void **state) {
    (void)state;
    sim_csv_t *c = NULL;
    char err[256];
    assert_true(sim_csv_open("/nonexistent/x.csv", &c, err, sizeof err) < 0);
    assert_string_equal(err, "/nonexistent/x.csv: No such file or directory");
}

/* ---- Sluice format ---- */

static const char *NODES =
    "name,cpu,memory,gpus,gpu_model,gpu_memory,pool\n"
    "n1,64,512Gi,8,A100,80Gi,\n"
    "n2,500m,1Gi,0,,,cpu\n";

static void test_sim_load_sluice_good(void **state) {
    (void)state;
    char pn[256], pj[256], pt[256], err[512];
    simtest_put("nodes.csv", NODES, pn, sizeof pn);
    simtest_put("jobs.csv",
        "id,tenant,submit,duration,tasks,cpu,memory,gpus,gpu_share,gpu_models,pool,priority,time_limit\n"
        "j1,alice,0,3600,8,9,18Gi,4,,A100|H100,,5,7200\n"
        "j2,,1.5,60,1,500m,512Mi,0,0.25,,,,\n"
        "\"j,3\",bob,2,10,1,1,1Gi,0,,,cpu,-1,\n",
        pj, sizeof pj);
    simtest_put("tenants.csv", "name,weight\nalice,3\ncarol,2\n", pt, sizeof pt);
    sim_trace_t t;
    sim_trace_init(&t);
    assert_int_equal(sim_load(&t, pn, pj, pt, SIM_FMT_AUTO, err, sizeof err), 0);
    assert_int_equal(t.format, SIM_FMT_SLUICE);
    assert_true(t.timed);
    assert_int_equal(t.nnodes, 2);
    assert_int_equal(t.nodes[0].cpu_milli, 64000);
    assert_int_equal(t.nodes[0].gpu_mem_bytes, 80LL << 30);
    assert_null(t.nodes[0].pool);
    assert_string_equal(t.nodes[1].pool, "cpu");
    assert_int_equal(t.nodes[1].cpu_milli, 500);
    assert_null(t.nodes[1].model);
    assert_int_equal(t.njobs, 3);
    const sim_job_t *j = &t.jobs[0];
    assert_string_equal(j->name, "j1");
    assert_string_equal(t.tenants[j->tenant], "alice");
    assert_int_equal(t.weights[j->tenant], 3);
    assert_int_equal(j->ntasks, 8);
    assert_int_equal(j->cpu_milli, 9000);
    assert_int_equal(j->mem_bytes, 18LL << 30);
    assert_int_equal(j->gpus, 4);
    assert_string_equal(j->models, "A100|H100");
    assert_int_equal(j->priority, 5);
    assert_int_equal(j->time_limit_us, 7200000000LL);
    assert_int_equal(sim_job_gpu_milli(j), 32000);
    j = &t.jobs[1];
    assert_string_equal(t.tenants[j->tenant], "default");
    assert_int_equal(j->submit_us, 1500000);
    assert_int_equal(j->gpu_milli, 250);
    assert_int_equal(j->gpus, 0);
    assert_int_equal(j->time_limit_us, 0);
    assert_string_equal(t.jobs[2].name, "j,3");
    assert_string_equal(t.jobs[2].pool, "cpu");
    assert_int_equal(t.jobs[2].priority, -1);
    /* carol has no jobs but a weight. */
    int32_t carol = sim_tenant_intern(&t, "carol");
    assert_int_equal(t.weights[carol], 2);

    /* To the core: models interned as bits, share kept or made whole. */
    sl_cluster_t *cl;
    assert_int_equal(sim_cluster_build(&t, &cl, err, sizeof err), 0);
    sl_task_req_t rq;
    assert_int_equal(sim_job_req(&t.jobs[0], cl, true, &rq, err, sizeof err), 0);
    uint64_t a100 = 1ULL << sl_cluster_model_find(cl, "A100");
    uint64_t h100 = 1ULL << sl_cluster_model_find(cl, "H100");
    assert_int_equal(rq.model_mask, a100 | h100);
    assert_int_equal(rq.pool, -1);
    assert_int_equal(sim_job_req(&t.jobs[1], cl, true, &rq, err, sizeof err), 0);
    assert_int_equal(rq.gpu_milli, 250);
    assert_int_equal(rq.gpus, 0);
    assert_int_equal(sim_job_req(&t.jobs[1], cl, false, &rq, err, sizeof err), 0);
    assert_int_equal(rq.gpu_milli, 0);
    assert_int_equal(rq.gpus, 1);
    assert_int_equal(sim_job_req(&t.jobs[2], cl, true, &rq, err, sizeof err), 0);
    assert_int_equal(rq.pool, sl_cluster_pool_find(cl, "cpu"));
    sl_cluster_destroy(cl);
    sim_trace_fini(&t);
}

/* Table of malformed files and the exact message each must give. */
static void test_sim_load_sluice_malformed(void **state) {
    (void)state;
    static const struct {
        const char *jobs;
        const char *msg; /* after "<dir>/bad.csv:" */
    } cases[] = {
        {"id,submit,duration,cpu\nj1,0,10,12Qi\n",
         "2:9: field \"cpu\": \"12Qi\": unknown unit \"Qi\""},
        {"id,submit,duration,cpu\nj1,0,10,1\nj2,x,10,1\n",
         "3:4: field \"submit\": \"x\" is not a non-negative number of seconds"},
        {"id,submit,duration,colour\nj1,0,10,red\n",
         "1:20: unknown column \"colour\" (known: id,tenant,submit,duration,tasks,cpu,memory,"
         "gpus,gpu_share,gpu_models,pool,priority,time_limit,gpu_memory,array,min_tasks,topology_required,"
         "topology_preferred,nodes,tasks_per_node,exclusive)"},
        {"id,submit,duration,nodes\nj1,0,1,4-2\n",
         "2:8: field \"nodes\": \"4-2\": expected N or min-max (Slurm's -N)"},
        {"id,submit,duration,exclusive\nj1,0,1,2\n",
         "2:8: field \"exclusive\": \"2\" out of range 0..1"},
        {"id,submit,duration\nj1,0\n", "2:5: expected 3 fields as in the header, found 2"},
        {"id,submit,duration\nj1,0,1,9\n", "2:8: expected 3 fields as in the header, found 4"},
        {"id,submit\nj1,0\n", "1:10: missing column \"duration\""},
        {"id,submit,duration,gpus,gpu_share\nj1,0,1,1,0.5\n",
         "2:10: field \"gpu_share\": \"0.5\": give either gpus or gpu_share, not both"},
        {"id,submit,duration,gpu_share\nj1,0,1,1.5\n",
         "2:8: field \"gpu_share\": \"1.5\": a share is below one GPU (use gpus for whole GPUs)"},
        {"id,submit,duration,gpus\nj1,0,1,17\n",
         "2:8: field \"gpus\": \"17\" out of range 0..16"},
        {"id,submit,duration,tasks\nj1,0,1,0\n",
         "2:8: field \"tasks\": \"0\" out of range 1..4096"},
        {"id,submit,duration\nj1,0,1\nj1,2,3\n", "3:1: field \"id\": job \"j1\" appears twice"},
        {"id,submit,duration,time_limit\nj1,0,1,0\n",
         "2:8: field \"time_limit\": \"0\": a time limit must be positive (leave empty for none)"},
        {"id,submit,duration\n,0,1\n", "2:1: field \"id\": empty job id"},
        {"id,submit,duration,gpu_models\nj1,0,1,A||B\n",
         "2:8: field \"gpu_models\": \"A||B\": model names are 1..63 bytes separated by '|'"},
        {"id,submit,duration\nj1,0,0.0000001\n",
         "2:6: field \"duration\": \"0.0000001\": too large or finer than a microsecond"},
    };
    char pn[256], pj[256], err[512], want[768];
    simtest_put("nodes.csv", NODES, pn, sizeof pn);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        simtest_put("bad.csv", cases[i].jobs, pj, sizeof pj);
        sim_trace_t t;
        sim_trace_init(&t);
        assert_int_equal(sim_load(&t, pn, pj, NULL, SIM_FMT_SLUICE, err, sizeof err), SL_EINVAL);
        snprintf(want, sizeof want, "%s:%s", pj, cases[i].msg);
        if (strcmp(err, want) != 0) fail_msg("case %zu:\n got  %s\n want %s", i, err, want);
        sim_trace_fini(&t);
    }
}

/* Slurm's node columns: nodes (N or min-max), tasks_per_node, exclusive,
 * into the request's node fields; --node-fields off drops them. */
static void test_sim_load_node_fields(void **state) {
    (void)state;
    char pn[256], pj[256], err[512];
    simtest_put("nodes.csv", NODES, pn, sizeof pn);
    simtest_put("jobs.csv", "id,submit,duration,tasks,nodes,tasks_per_node,exclusive\n"
                "j1,0,10,4,2,2,1\nj2,0,10,3,2-3,,\nj3,0,10,1,,,\n", pj, sizeof pj);
    sim_trace_t t;
    sim_trace_init(&t);
    assert_int_equal(sim_load(&t, pn, pj, NULL, SIM_FMT_SLUICE, err, sizeof err), 0);
    assert_int_equal(t.jobs[0].nodes_min, 2);
    assert_int_equal(t.jobs[0].nodes_max, 0);
    assert_int_equal(t.jobs[0].tasks_per_node, 2);
    assert_true(t.jobs[0].exclusive);
    assert_int_equal(t.jobs[1].nodes_min, 2);
    assert_int_equal(t.jobs[1].nodes_max, 3);
    assert_false(t.jobs[1].exclusive);
    assert_int_equal(t.jobs[2].nodes_min, 0);
    sl_task_req_t r;
    sl_task_req_init(&r);
    sim_nodes_req(&t.jobs[0], &r);
    assert_int_equal(r.nodes_min, 2);
    assert_int_equal(r.tasks_per_node, 2);
    assert_int_equal(r.exclusive, 1);
    sim_nodes_clear(&r);
    assert_int_equal(r.nodes_min + r.nodes_max + r.tasks_per_node + r.exclusive, 0);
    int16_t lo, hi;
    assert_int_equal(sim_nodes_parse("8", &lo, &hi), 0);
    assert_int_equal(lo, 8);
    assert_int_equal(sim_nodes_parse("0", &lo, &hi), -1);
    assert_int_equal(sim_nodes_parse("2-", &lo, &hi), -1);
    sim_trace_fini(&t);
}

static void test_sim_load_nodes_malformed(void **state) {
    (void)state;
    char pn[256], err[512], want[512];
    sim_trace_t t;
    sim_trace_init(&t);
    simtest_put("n.csv", "name,cpu,memory,gpus,gpu_model\nn1,8,1Gi,2,\n", pn, sizeof pn);
    assert_int_equal(sim_load_nodes(&t, pn, SIM_FMT_AUTO, err, sizeof err), SL_EINVAL);
    snprintf(want, sizeof want, "%s:2:12: field \"gpu_model\": empty for a node with GPUs", pn);
    assert_string_equal(err, want);
    sim_trace_fini(&t);
    sim_trace_init(&t);
    simtest_put("n.csv", "name,cpu,memory,gpus\nn1,8,1Gi,0\nn1,8,1Gi,0\n", pn, sizeof pn);
    assert_int_equal(sim_load_nodes(&t, pn, SIM_FMT_AUTO, err, sizeof err), SL_EINVAL);
    snprintf(want, sizeof want, "%s:3:1: field \"name\": node \"n1\" appears twice", pn);
    assert_string_equal(err, want);
    sim_trace_fini(&t);
    /* The wrong format for the header. */
    sim_trace_init(&t);
    simtest_put("n.csv", "name,cpu,memory,gpus\nn1,8,1Gi,0\n", pn, sizeof pn);
    assert_int_equal(sim_load_nodes(&t, pn, SIM_FMT_PHILLY, err, sizeof err), SL_EINVAL);
    snprintf(want, sizeof want, "%s:1:1: header is in format sluice, not philly", pn);
    assert_string_equal(err, want);
    sim_trace_fini(&t);
    /* Not a known header at all. */
    sim_trace_init(&t);
    simtest_put("n.csv", "foo,bar\n1,2\n", pn, sizeof pn);
    assert_int_equal(sim_load_nodes(&t, pn, SIM_FMT_AUTO, err, sizeof err), SL_EINVAL);
    snprintf(want, sizeof want, "%s:1:1: unrecognised nodes header", pn);
    assert_memory_equal(err, want, strlen(want));
    sim_trace_fini(&t);
}

/* ---- Alibaba v2023 ---- */

static void test_sim_load_alibaba(void **state) {
    (void)state;
    char pn[256], pj[256], err[512], want[512];
    simtest_put("an.csv",
        "sn,cpu_milli,memory_mib,gpu,model\n"
        "openb-node-0000,64000,262144,2,P100\n"
        "openb-node-0001,96000,786432,8,V100M32\n"
        "openb-node-0002,32000,262144,0,\n",
        pn, sizeof pn);
    /* The five-column form, as some published pod lists are. */
    simtest_put("ap.csv",
        "name,cpu_milli,memory_mib,num_gpu,gpu_milli\r\n"
        "p0,12000,16384,1,1000\r\n"
        "p1,6000,12288,1,460\r\n"
        "p2,88000,327680,8,1000\r\n"
        "p3,4000,8192,0,0\r\n",
        pj, sizeof pj);
    sim_trace_t t;
    sim_trace_init(&t);
    assert_int_equal(sim_load(&t, pn, pj, NULL, SIM_FMT_AUTO, err, sizeof err), 0);
    assert_int_equal(t.format, SIM_FMT_ALIBABA);
    assert_false(t.timed);
    assert_int_equal(t.nnodes, 3);
    assert_int_equal(t.nodes[0].mem_bytes, 262144LL << 20);
    assert_int_equal(t.nodes[1].gpu_mem_bytes, 32LL << 30);
    assert_int_equal(t.njobs, 4);
    assert_int_equal(t.jobs[0].gpus, 1);
    assert_int_equal(t.jobs[1].gpus, 0);
    assert_int_equal(t.jobs[1].gpu_milli, 460);
    assert_int_equal(t.jobs[2].gpus, 8);
    assert_int_equal(sim_job_gpu_milli(&t.jobs[2]), 8000);
    assert_int_equal(sim_job_gpu_milli(&t.jobs[3]), 0);
    sim_trace_fini(&t);

    /* The full form, with a GPU model constraint and times. */
    simtest_put("ap.csv",
        "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
        "deletion_time,scheduled_time\n"
        "p0,16000,32768,1,1000,V100M16|V100M32,LS,Running,9967058,9968575,9967063\n"
        "p1,4000,15258,1,220,,BE,Pending,100,400,\n",
        pj, sizeof pj);
    sim_trace_init(&t);
    assert_int_equal(sim_load(&t, pn, pj, NULL, SIM_FMT_ALIBABA, err, sizeof err), 0);
    assert_true(t.timed);
    assert_string_equal(t.jobs[0].models, "V100M16|V100M32");
    assert_int_equal(t.jobs[0].submit_us, 9967058000000LL);
    assert_int_equal(t.jobs[0].duration_us, (9968575LL - 9967063) * 1000000);
    assert_int_equal(t.jobs[1].duration_us, 300000000LL); /* never scheduled: from creation */
    sl_cluster_t *cl;
    assert_int_equal(sim_cluster_build(&t, &cl, err, sizeof err), 0);
    sl_task_req_t rq;
    assert_int_equal(sim_job_req(&t.jobs[0], cl, true, &rq, err, sizeof err), 0);
    assert_int_equal(rq.model_mask, (1ULL << sl_cluster_model_find(cl, "V100M16")) |
                                        (1ULL << sl_cluster_model_find(cl, "V100M32")));
    sl_cluster_destroy(cl);
    sim_trace_fini(&t);

    /* Malformed pods. */
    simtest_put("ap.csv", "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np0,1000,1024,2,500\n", pj,
        sizeof pj);
    sim_trace_init(&t);
    assert_int_equal(sim_load(&t, pn, pj, NULL, SIM_FMT_AUTO, err, sizeof err), SL_EINVAL);
    snprintf(want, sizeof want,
             "%s:2:16: field \"gpu_milli\": \"500\": a pod of several GPUs must take them whole "
             "(1000)", pj);
    assert_string_equal(err, want);
    sim_trace_fini(&t);
    simtest_put("ap.csv", "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np0,1.5k,1024,1,500\n", pj,
        sizeof pj);
    sim_trace_init(&t);
    assert_int_equal(sim_load(&t, pn, pj, NULL, SIM_FMT_AUTO, err, sizeof err), SL_EINVAL);
    snprintf(want, sizeof want, "%s:2:4: field \"cpu_milli\": \"1.5k\" is not an integer", pj);
    assert_string_equal(err, want);
    sim_trace_fini(&t);
}

/* ---- Philly ---- */

static void test_sim_load_philly(void **state) {
    (void)state;
    char pn[256], pj[256], err[512], want[512];
    simtest_put("m.csv", "machineId, number of GPUs, single GPU mem\nm0,2, 12GB\nm1,8, 24GB\n", pn,
        sizeof pn);
    simtest_put("p.csv",
        "timestamp,duration,num_gpus,gpu_time,cluster\n"
        "2017-10-09 07:01:55,66.0,1,66.0,11cb48\n"
        "2017-10-09 07:00:00,10.0,12,120.0,6214e9\n"
        "2017-10-10 07:00:00,10.0,16,160.0,11cb48\n"
        "2017-10-10 07:00:00,10.0,8,80.0,11cb48\n"
        "\n",
        pj, sizeof pj);
    sim_trace_t t;
    sim_trace_init(&t);
    assert_int_equal(sim_load(&t, pn, pj, NULL, SIM_FMT_AUTO, err, sizeof err), 0);
    assert_int_equal(t.format, SIM_FMT_PHILLY);
    assert_int_equal(t.nnodes, 2);
    assert_int_equal(t.nodes[1].gpus, 8);
    assert_int_equal(t.nodes[1].gpu_mem_bytes, 24LL << 30);
    assert_string_equal(t.nodes[1].model, "philly-24GB");
    assert_int_equal(t.njobs, 4);
    assert_int_equal(t.ntenants, 2);
    /* Submit times are relative to the earliest (the second row). */
    assert_int_equal(t.jobs[0].submit_us, 115000000LL);
    assert_int_equal(t.jobs[1].submit_us, 0);
    assert_int_equal(t.jobs[0].duration_us, 66000000LL);
    /* 12 GPUs > 8 per machine: 2 tasks of 6; 16: 2 of 8; 8 stays one task. */
    assert_int_equal(t.jobs[1].ntasks, 2);
    assert_int_equal(t.jobs[1].gpus, 6);
    assert_int_equal(t.jobs[2].ntasks, 2);
    assert_int_equal(t.jobs[2].gpus, 8);
    assert_int_equal(t.jobs[3].ntasks, 1);
    assert_int_equal(t.jobs[3].gpus, 8);
    assert_int_equal(t.gangs_split, 2);
    sim_trace_fini(&t);

    /* Hu's revised list: an unnamed index column, no memory. */
    simtest_put("m.csv", ",machineId,number of GPUs\n0,m0,4\n1,m1,0\n", pn, sizeof pn);
    sim_trace_init(&t);
    assert_int_equal(sim_load(&t, pn, pj, NULL, SIM_FMT_PHILLY, err, sizeof err), 0);
    assert_int_equal(t.nodes[0].gpus, 4);
    assert_int_equal(t.nodes[0].gpu_mem_bytes, 0);
    assert_null(t.nodes[1].model);
    assert_int_equal(t.jobs[1].ntasks, 3); /* 12 = 3 x 4 */
    assert_int_equal(t.jobs[2].ntasks, 4); /* 16 = 4 x 4 */
    assert_int_equal(t.jobs[3].ntasks, 2); /* 8 = 2 x 4 */
    sim_trace_fini(&t);

    simtest_put("p.csv", "timestamp,duration,num_gpus,gpu_time,cluster\n2017-13-09 07:01:55,1,1,1,a\n",
        pj, sizeof pj);
    sim_trace_init(&t);
    assert_int_equal(sim_load(&t, pn, pj, NULL, SIM_FMT_AUTO, err, sizeof err), SL_EINVAL);
    snprintf(want, sizeof want,
             "%s:2:1: field \"timestamp\": \"2017-13-09 07:01:55\": expected \"YYYY-MM-DD HH:MM:SS\"",
             pj);
    assert_string_equal(err, want);
    sim_trace_fini(&t);
    simtest_put("p.csv", "timestamp,duration,num_gpus,gpu_time,cluster\n2017-10-09 07:01:55,1,0,1,a\n",
        pj, sizeof pj);
    sim_trace_init(&t);
    assert_int_equal(sim_load(&t, pn, pj, NULL, SIM_FMT_AUTO, err, sizeof err), SL_EINVAL);
    snprintf(want, sizeof want, "%s:2:23: field \"num_gpus\": \"0\" out of range 1..1048576", pj);
    assert_string_equal(err, want);
    sim_trace_fini(&t);
}

static void test_sim_load_tenants_malformed(void **state) {
    (void)state;
    char pt[256], err[512], want[512];
    sim_trace_t t;
    sim_trace_init(&t);
    simtest_put("t.csv", "name,weight\na,1\nb,0\n", pt, sizeof pt);
    assert_int_equal(sim_load_tenants(&t, pt, err, sizeof err), SL_EINVAL);
    snprintf(want, sizeof want, "%s:3:3: field \"weight\": \"0\" out of range 1..1000000", pt);
    assert_string_equal(err, want);
    sim_trace_fini(&t);
}

static void test_sim_parse_times(void **state) {
    (void)state;
    int64_t v;
    assert_int_equal(sim_parse_datetime("1970-01-02 00:00:01", &v), 0);
    assert_int_equal(v, 86401);
    assert_int_equal(sim_parse_datetime("2017-10-09 07:01:55", &v), 0);
    assert_int_equal(v, 1507532515LL);
    assert_int_equal(sim_parse_datetime("2017-10-09T07:01:55", &v), SL_EINVAL);
    assert_int_equal(sim_parse_seconds("90", &v), 0);
    assert_int_equal(v, 90000000);
    assert_int_equal(sim_parse_seconds("0.25", &v), 0);
    assert_int_equal(v, 250000);
    assert_int_equal(sim_parse_seconds("-1", &v), SL_EINVAL);
    assert_int_equal(sim_parse_seconds("1e3", &v), SL_EINVAL);
}

/* The real traces load whole (skipped where they are not present). */
static void test_sim_load_real_traces(void **state) {
    (void)state;
    const char *root = getenv("SLUICE_TRACES");
    char pn[512], pj[512], err[512];
    snprintf(pn, sizeof pn, "%s/alibaba-gpu-v2023/openb_node_list_gpu_node.csv",
             root ? root : "../shared/traces");
    snprintf(pj, sizeof pj, "%s/alibaba-gpu-v2023/openb_pod_list_default.csv",
             root ? root : "../shared/traces");
    if (access(pn, R_OK) != 0) skip();
    sim_trace_t t;
    sim_trace_init(&t);
    assert_int_equal(sim_load(&t, pn, pj, NULL, SIM_FMT_AUTO, err, sizeof err), 0);
    assert_int_equal(t.nnodes, 1213);
    assert_int_equal(t.njobs, 8152);
    int64_t gpus = 0;
    for (size_t i = 0; i < t.nnodes; i++) gpus += t.nodes[i].gpus;
    assert_int_equal(gpus, 6212);
    sim_trace_fini(&t);
    snprintf(pn, sizeof pn, "%s/philly/revised_machine_list.csv", root ? root : "../shared/traces");
    snprintf(pj, sizeof pj, "%s/philly/philly.csv", root ? root : "../shared/traces");
    sim_trace_init(&t);
    assert_int_equal(sim_load(&t, pn, pj, NULL, SIM_FMT_AUTO, err, sizeof err), 0);
    assert_int_equal(t.njobs, 82247);
    assert_int_equal(t.ntenants, 15);
    assert_int_equal(t.nnodes, 552);
    sim_trace_fini(&t);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sim_csv_quotes_crlf_and_positions),
        cmocka_unit_test(test_sim_csv_unterminated_quote),
        cmocka_unit_test(test_sim_csv_text_after_quote),
        cmocka_unit_test(test_sim_csv_bom),
        cmocka_unit_test(test_sim_csv_missing_file),
        cmocka_unit_test(test_sim_load_sluice_good),
        cmocka_unit_test(test_sim_load_sluice_malformed),
        cmocka_unit_test(test_sim_load_nodes_malformed),
        cmocka_unit_test(test_sim_load_node_fields),
        cmocka_unit_test(test_sim_load_alibaba),
        cmocka_unit_test(test_sim_load_philly),
        cmocka_unit_test(test_sim_load_tenants_malformed),
        cmocka_unit_test(test_sim_parse_times),
        cmocka_unit_test(test_sim_load_real_traces),
    };
    return cmocka_run_group_tests(tests, simtest_setup, simtest_teardown);
}
