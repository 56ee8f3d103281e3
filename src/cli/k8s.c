/*
 * k8s.c - a Kubernetes batch/v1 Job as a Sluice submission (k8s.h).
 *
 * Kubernetes runs a Job's pods independently: `completions` pods must
 * succeed, at most `parallelism` at a time, and with `completionMode:
 * Indexed` each of the indexes 0..completions-1 succeeds once, its pod
 * told its index in JOB_COMPLETION_INDEX. That is a job array with a
 * limit, which Sluice has (docs/arrays.md): the Job becomes the array
 * "0-(C-1)%P", whose elements the controller gives JOB_COMPLETION_INDEX.
 * A Job of completions runs them as independent elements; a pod group
 * (the annotations or labels of Volcano, the coscheduling plugin, Kueue's
 * pod groups, or sluice.io/gang: "true") makes its pods one gang that
 * starts together, with RANK, WORLD_SIZE and MASTER_ADDR. So does a work
 * queue (parallelism and no completions: pods that coordinate among
 * themselves, the seed's Megatron manifest), unless sluice.io/gang is
 * "false", when its pods are parallelism independent elements.
 *
 * backoffLimit becomes `retries`: of the whole gang, or of each element of
 * an array (Kubernetes' backoffLimitPerIndex; its Job-wide count of
 * failures over all indexes has no equivalent), and activeDeadlineSeconds
 * the time limit of each.
 */
#include <stdio.h>
#include <string.h>

#include "k8s.h"

int cli_k8s_job(cli_k8s_t *k, yaml_node_t *root) {
    cli_spec_t *s = k->s;
    long long completions = -1, parallelism = -1, x;
    bool indexed = false;
    const char *restart = NULL;
    int rc = 0, have_template = 0;
    yaml_node_pair_t *pr = NULL;
    const char *f, *str;
    yaml_node_t *v;
    char p[256];
    yaml_node_t *spec = NULL, *meta = NULL;
    /* The metadata first, whatever the order: the pod's labels add to it. */
    while (cli_spec_next(s, root, "", &pr, &f, &v, p, sizeof p)) {
        if (!strcmp(f, "apiVersion") || !strcmp(f, "kind")) continue;
        else if (!strcmp(f, "metadata")) meta = v;
        else if (!strcmp(f, "spec")) spec = v;
        else rc = cli_spec_fail(s, p, "not supported in a batch/v1 Job manifest");
    }
    if (meta) rc |= cli_k8s_meta(k, "metadata", meta, true);
    if (!spec) return cli_spec_fail(s, "spec", "missing");
    if (cli_spec_want(s, "spec", spec, YAML_MAPPING_NODE)) return -1;
    pr = NULL;
    while (cli_spec_next(s, spec, "spec", &pr, &f, &v, p, sizeof p)) {
        if (!strcmp(f, "parallelism")) {
            rc |= cli_spec_field_int(s, p, v, SL_JS_TASKS, &parallelism);
        } else if (!strcmp(f, "completions")) {
            rc |= cli_spec_int(s, p, v, 1, 4000000, &completions);
        } else if (!strcmp(f, "completionMode")) {
            if (cli_spec_string(s, p, v, &str)) rc = -1;
            else if (strcmp(str, "Indexed") && strcmp(str, "NonIndexed"))
                rc = cli_spec_fail(s, p, "\"%s\" is not Indexed or NonIndexed", str);
            else indexed = str[0] == 'I';
        } else if (!strcmp(f, "backoffLimit") || !strcmp(f, "backoffLimitPerIndex")) {
            if (cli_spec_field_int(s, p, v, SL_JS_RETRIES, &x)) rc = -1;
            else json_object_set_new(k->job, "retries", json_integer(x));
        } else if (!strcmp(f, "activeDeadlineSeconds")) {
            if (cli_spec_int(s, p, v, 1, sl_jobspec_fields[SL_JS_TIME_LIMIT].max, &x)) rc = -1;
            else json_object_set_new(k->job, "time_limit", json_integer(x));
        } else if (!strcmp(f, "ttlSecondsAfterFinished")) {
            if (cli_spec_field_int(s, p, v, SL_JS_TTL_AFTER_FINISHED, &x)) rc = -1;
            else json_object_set_new(k->job, "ttl_after_finished", json_integer(x));
        } else if (!strcmp(f, "suspend")) {
            bool b;
            if (cli_spec_bool(s, p, v, &b)) rc = -1;
            else if (b && !k->kueue) rc = cli_spec_fail(s, p, "true is not supported (submit the job when it may run)");
            else if (b) cli_spec_warn(s, p, "Kueue admits a suspended job by resuming it; Sluice's "
                                      "scheduler admits this one from its queue");
        } else if (!strcmp(f, "template")) {
            rc |= cli_k8s_template(k, "spec.template", v, &restart);
            have_template = 1;
        } else {
            rc = cli_spec_fail(s, p, "not supported");
        }
    }
    if (!have_template) rc = cli_spec_fail(s, "spec.template", "missing");
    /* Either way a failed pod counts toward backoffLimit and runs again
     * after the back-off (Sluice restarts no container in place). */
    if (restart && strcmp(restart, "Never") && strcmp(restart, "OnFailure"))
        rc = cli_spec_fail(s, "spec.template.spec.restartPolicy",
                           "\"%s\" is not supported (a Job's pods use Never or OnFailure)", restart);
    if (indexed && completions < 0)
        rc = cli_spec_fail(s, "spec.completions", "needed with completionMode Indexed");
    /* A work queue (parallelism, no completions) is pods that "coordinate
     * amongst themselves" (Kubernetes' words) and end together: a gang,
     * which gives them RANK, WORLD_SIZE and MASTER_ADDR to do it, unless
     * sluice.io/gang says "false". */
    bool gang = k->gang > 0 || (k->gang < 0 && completions < 0 && !indexed && parallelism > 1);
    if (gang) {
        long long tasks = parallelism > 0 ? parallelism : 1;
        if (completions >= 0 && completions != tasks)
            rc = cli_spec_fail(s, "spec.completions", "%lld differs from spec.parallelism %lld: the pods "
                               "of a pod group start together and each runs once", completions, tasks);
        json_object_set_new(k->job, "tasks", json_integer(tasks));
        return rc;
    }
    long long n = completions >= 0 ? completions : parallelism > 0 ? parallelism : 1;
    long long at_once = parallelism > 0 ? parallelism : 1;
    if (completions < 0) at_once = n; /* a work queue: all its pods at once */
    if (n == 1 && !indexed) return rc;
    char text[64];
    if (n == 1) snprintf(text, sizeof text, "0");
    else if (at_once < n) snprintf(text, sizeof text, "0-%lld%%%lld", n - 1, at_once);
    else snprintf(text, sizeof text, "0-%lld", n - 1);
    json_object_set_new(k->job, "array", json_string(text));
    return rc;
}
