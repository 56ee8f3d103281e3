/*
 * controllers.c - `sluice controllers`: the group of controllers (GET
 * /v1/controllers, docs/ha.md): each member's name, role, API URL, the log
 * index it has applied and how far it is behind the leader, with the
 * leader and its epoch above. Any member answers (a follower too).
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"

int cli_cmd_controllers(cli_t *c) {
    if (c->npos > 0) return cli_usage_error(c, "unexpected argument \"%s\"", c->pos[0]);
    json_t *out = NULL;
    int rc = cli_call(c, "GET", "/v1/controllers", NULL, &out);
    if (rc != CLI_OK) return rc;
    if (c->json) {
        cli_print_json(out);
        json_decref(out);
        return CLI_OK;
    }
    const char *mode = json_string_value(json_object_get(out, "mode"));
    const char *leader = json_string_value(json_object_get(out, "leader"));
    printf("mode: %s   leader: %s   epoch: %lld\n", mode ? mode : "?",
           leader && *leader ? leader : "(none elected)",
           (long long)json_integer_value(json_object_get(out, "epoch")));
    const char *err = json_string_value(json_object_get(out, "error"));
    if (err) printf("warning: etcd: %s\n", err);
    printf("%-16s %-9s %-28s %-22s %10s %8s\n", "NAME", "ROLE", "API", "AGENT", "APPLIED", "LAG");
    size_t i;
    json_t *m;
    json_array_foreach(json_object_get(out, "members"), i, m) {
        const char *name = json_string_value(json_object_get(m, "name"));
        const char *role = json_string_value(json_object_get(m, "role"));
        const char *api = json_string_value(json_object_get(m, "api"));
        const char *agent = json_string_value(json_object_get(m, "agent"));
        printf("%-16s %-9s %-28s %-22s %10lld %8lld\n", name ? name : "?", role ? role : "?",
               api ? api : "-", agent ? agent : "-",
               (long long)json_integer_value(json_object_get(m, "applied")),
               (long long)json_integer_value(json_object_get(m, "lag")));
    }
    json_decref(out);
    return CLI_OK;
}
