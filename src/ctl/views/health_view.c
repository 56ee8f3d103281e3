/*
 * health_view.c - GPU and node health in the node object and /metrics
 * (health_view.h). Node names are the cluster's (letters, digits, '-',
 * '.', '_'), so they need no escaping in a label.
 */
#include <stdio.h>
#include <string.h>

#include "views/health_view.h"

static void gpu_json(ctl_buf_t *b, int g, const ctl_gpu_health_t *gh, bool first) {
    ctl_buf_printf(b, "%s{\"gpu\":%d,\"state\":\"%s\",\"reason\":\"%s\"", first ? "" : ",", g,
                   sl_health_state_name(gh->state), sl_health_reason_name(gh->reason));
    if (gh->xid > 0) ctl_buf_printf(b, ",\"xid\":%d", (int)gh->xid);
    ctl_buf_puts(b, ",\"message\":");
    ctl_buf_jstr(b, gh->message);
    ctl_buf_printf(b, ",\"fenced\":%s,\"pinned\":%s", gh->fenced ? "true" : "false",
                   gh->pinned ? "true" : "false");
    if (gh->fenced) {
        ctl_buf_puts(b, ",\"fence_reason\":");
        ctl_buf_jstr(b, gh->fence_reason);
        ctl_buf_puts(b, ",\"fenced_since\":");
        ctl_buf_time(b, gh->fenced_us);
        ctl_buf_printf(b, ",\"faults\":%d", (int)gh->faults);
    }
    ctl_buf_putc(b, '}');
}

void ctl_health_write_json(ctl_t *c, ctl_buf_t *b, uint32_t id) {
    const ctl_node_health_t *r = ctl_health_node(c, id);
    const sl_node_t *nd = sl_cluster_node(c->cl, id);
    ctl_buf_printf(b, ",\"health\":{\"state\":\"%s\",\"reason\":\"%s\",\"message\":",
                   sl_health_state_name(r ? r->state : SL_HEALTH_HEALTHY),
                   sl_health_reason_name(r ? r->reason : SL_HREASON_NONE));
    ctl_buf_jstr(b, r ? r->message : "");
    ctl_buf_puts(b, ",\"gpus\":[");
    bool first = true;
    for (int g = 0; r && nd && g < nd->ngpus; g++) {
        const ctl_gpu_health_t *gh = &r->gpu[g];
        if (gh->state == SL_HEALTH_HEALTHY && !gh->fenced) continue;
        gpu_json(b, g, gh, first);
        first = false;
    }
    ctl_buf_puts(b, "]}");
}

/* Only the GPUs with something to say (not healthy, or fenced): a
 * healthy cluster of 10,000 nodes costs the scrape nothing here, and the
 * absence of a series reads as healthy. O(nodes with health records). */
void ctl_health_metric_gpu(ctl_t *c, ctl_buf_t *b, const char *name, int32_t only) {
    (void)only;
    for (uint32_t i = 0; c->health && i < c->health->n; i++) {
        const sl_node_t *nd = sl_cluster_node(c->cl, i);
        const ctl_node_health_t *r = c->health->nodes[i];
        for (int g = 0; r && nd && g < nd->ngpus; g++) {
            const ctl_gpu_health_t *gh = &r->gpu[g];
            if (gh->state == SL_HEALTH_HEALTHY && !gh->fenced) continue;
            ctl_buf_printf(b, "%s{node=\"%s\",gpu=\"%d\",reason=\"%s\"} %d\n", name, nd->name, g,
                           sl_health_reason_name(gh->reason), (int)gh->state);
        }
    }
}

void ctl_health_metric_fenced(ctl_t *c, ctl_buf_t *b, const char *name, int32_t only) {
    (void)only;
    for (uint32_t i = 0; c->health && i < c->health->n; i++) {
        const sl_node_t *nd = sl_cluster_node(c->cl, i);
        for (int g = 0; c->health->nodes[i] && nd && g < nd->ngpus; g++)
            if ((nd->gpu_fenced >> g) & 1u)
                ctl_buf_printf(b, "%s{node=\"%s\",gpu=\"%d\"} 1\n", name, nd->name, g);
    }
}

void ctl_health_metric_faults(ctl_t *c, ctl_buf_t *b, const char *name, int32_t only) {
    (void)only;
    /* The catalogue's XIDs always (zeros too, so that rate() sees each
     * series from the start), any other once seen. */
    static const int known[] = {13, 31, 43, 48, 63, 64, 74, 79, 92, 94, 95};
    const uint64_t *f = c->health ? c->health->faults : NULL;
    for (int x = 1; x < CTL_HEALTH_XIDS; x++) {
        bool k = false;
        for (size_t i = 0; i < sizeof known / sizeof known[0]; i++) k |= known[i] == x;
        if (!k && (f == NULL || f[x] == 0)) continue;
        ctl_buf_printf(b, "%s{xid=\"%d\"} %llu\n", name, x, (unsigned long long)(f ? f[x] : 0));
    }
    ctl_buf_printf(b, "%s{xid=\"other\"} %llu\n", name,
                   (unsigned long long)(f ? f[CTL_HEALTH_XIDS] : 0));
}
