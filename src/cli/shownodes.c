/*
 * shownodes.c - `sluice show`'s lines for where a job's tasks go: its
 * node count and tasks per node, whole nodes (each node's GPUs, CPUs and
 * memory the job holds there), node lists, and its comment.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "quantity.h"

static void list_line(const char *label, json_t *v) {
    if (!json_is_array(v) || json_array_size(v) == 0)
        return;
    printf("%-11s", label);
    size_t i;
    json_t *x;
    json_array_foreach(v, i, x) printf("%s%s", i ? "," : " ", json_string_value(x));
    printf("\n");
}

void cli_show_nodes(json_t *j) {
    json_t *n = json_object_get(j, "nodes"), *hi = json_object_get(j, "nodes_max");
    json_t *tpn = json_object_get(j, "tasks_per_node");
    if (json_is_integer(n) && json_is_integer(hi))
        printf("%-11s %lld-%lld, distinct\n", "nodes:", (long long)json_integer_value(n),
               (long long)json_integer_value(hi));
    else if (json_is_integer(n))
        printf("%-11s %lld, distinct\n", "nodes:", (long long)json_integer_value(n));
    if (json_is_integer(tpn))
        printf("%-11s %lld\n", "per node:", (long long)json_integer_value(tpn));
    list_line("nodelist:", json_object_get(j, "nodelist"));
    list_line("excluded:", json_object_get(j, "exclude"));
    if (json_is_string(json_object_get(j, "comment")))
        printf("%-11s %s\n", "comment:", json_string_value(json_object_get(j, "comment")));
    if (!json_is_true(json_object_get(j, "exclusive")))
        return;
    json_t *pl = json_object_get(j, "placement");
    if (json_array_size(pl) == 0) {
        printf("%-11s yes (each node's GPUs, CPUs and memory, once placed)\n", "whole nodes:");
        return;
    }
    /* Each node once, with what the job's tasks there hold together. */
    size_t i, k;
    json_t *p, *q;
    json_array_foreach(pl, i, p) {
        const char *node = json_string_value(json_object_get(p, "node"));
        bool seen = false;
        for (k = 0; k < i && !seen; k++) {
            const char *o = json_string_value(json_object_get(json_array_get(pl, k), "node"));
            seen = node && o && strcmp(node, o) == 0;
        }
        if (seen || node == NULL)
            continue;
        int64_t cpu = 0, mem = 0, v;
        uint32_t mask = 0;
        json_array_foreach(pl, k, q) {
            const char *o = json_string_value(json_object_get(q, "node"));
            if (!o || strcmp(o, node) != 0)
                continue;
            char err[64];
            if (sl_qty_parse(json_string_value(json_object_get(q, "cpus")), SL_QTY_CPU, &v, err,
                             sizeof err) == 0)
                cpu += v;
            if (sl_qty_parse(json_string_value(json_object_get(q, "memory")), SL_QTY_MEM, &v, err,
                             sizeof err) == 0)
                mem += v;
            size_t gi;
            json_t *g;
            json_array_foreach(json_object_get(q, "gpus"), gi, g) {
                if (json_integer_value(g) >= 0 && json_integer_value(g) < 32)
                    mask |= 1u << json_integer_value(g);
            }
        }
        int gpus = __builtin_popcount(mask);
        char c[64], m[64];
        sl_qty_format(cpu, SL_QTY_CPU, c, sizeof c);
        sl_qty_format(mem, SL_QTY_MEM, m, sizeof m);
        printf("%-11s %s: %d GPU%s, %s CPUs, %s memory (the whole node)\n",
               i == 0 ? "whole nodes:" : "", node, gpus, gpus == 1 ? "" : "s", c, m);
    }
}
