/*
 * arrays.c - job arrays in a Sluice jobs CSV (docs/sim.md).
 *
 * A row whose `array` column holds Slurm's text ("0-99", "1,3,5-9:2",
 * "0-99%8", the same text `sluice submit --array` takes, parsed by the same
 * code, src/common/arraydep.c) stands for one job per index, named
 * "ID_INDEX", all submitted at the row's time with its duration and
 * resources. The replay (replay.c) keeps an array's concurrency limit as
 * sluiced does: elements beyond it wait outside the core and the end of an
 * element releases the next one, so their queueing delay includes that
 * wait.
 *
 * The expansion rebuilds the job vector once: O(jobs + elements).
 */
#include <stdio.h>
#include <string.h>

#include "arraydep.h"
#include "sim.h"

int sim_trace_expand_arrays(sim_trace_t *t, size_t first, char *err, size_t errlen) {
    size_t extra = 0;
    bool any = false;
    for (size_t i = first; i < t->njobs; i++) {
        if (t->jobs[i].array == NULL)
            continue;
        char msg[200];
        sl_array_spec_t as;
        if (sl_array_parse(t->jobs[i].array, SL_ARRAY_SIZE_CEILING, NULL, msg, sizeof msg) < 0) {
            snprintf(err, errlen, "job %s: array: \"%s\": %s", t->jobs[i].name, t->jobs[i].array,
                     msg);
            return SL_EINVAL;
        }
        sl_array_parse(t->jobs[i].array, SL_ARRAY_SIZE_CEILING, &as, msg, sizeof msg);
        extra += (size_t)as.n - 1;
        sl_array_spec_fini(&as);
        any = true;
    }
    if (!any)
        return 0;
    size_t n = t->njobs + extra;
    sim_job_t *v = sl_xcalloc(n, sizeof *v);
    size_t k = 0;
    for (size_t i = 0; i < t->njobs; i++) {
        sim_job_t *j = &t->jobs[i];
        if (i < first || j->array == NULL) {
            v[k++] = *j;
            continue;
        }
        sl_array_spec_t as;
        char msg[200];
        sl_array_parse(j->array, SL_ARRAY_SIZE_CEILING, &as, msg, sizeof msg);
        uint32_t head = (uint32_t)k;
        for (int32_t e = 0; e < as.n; e++) {
            sim_job_t *x = &v[k++];
            *x = *j;
            char name[SL_NAME_MAX + 16];
            snprintf(name, sizeof name, "%s_%d", j->name, as.idx[e]);
            x->name = sl_xstrdup(name);
            x->models = j->models ? sl_xstrdup(j->models) : NULL;
            x->pool = j->pool ? sl_xstrdup(j->pool) : NULL;
            x->array = NULL;
            x->in_array = true;
            x->array_first = head;
            x->array_limit = as.limit;
        }
        sl_array_spec_fini(&as);
        sl_free(j->name);
        sl_free(j->models);
        sl_free(j->pool);
        sl_free(j->array);
    }
    sl_free(t->jobs);
    t->jobs = v;
    t->njobs = t->capjobs = n;
    return 0;
}
