/*
 * opts.c - what every command reads of the parsed command line (option
 * values by long name), the usage-error message, and JSON output.
 *
 * The lowest layer of the CLI (src/cli/LAYERS): main.c parses argv into a
 * cli_t from the command table; the commands, the HTTP client and main.c
 * read it through these functions, so that no command calls up into
 * main.c.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

int cli_usage_error(cli_t *c, const char *fmt, ...) {
    va_list ap;
    fprintf(stderr, "sluice%s%s: ", c && c->cmd ? " " : "", c && c->cmd ? c->cmd->name : "");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\nTry 'sluice %s%s--help'.\n", c && c->cmd ? c->cmd->name : "",
            c && c->cmd ? " " : "");
    return CLI_EUSAGE;
}

int cli_opt_index(const cli_cmd_t *cmd, const char *name, char shortname) {
    for (int i = 0; cmd->opts[i].name; i++) {
        if (name && strcmp(cmd->opts[i].name, name) == 0) return i;
        if (!name && shortname && cmd->opts[i].shortname == shortname) return i;
    }
    return -1;
}

const char *cli_get(cli_t *c, const char *name) {
    int i = cli_opt_index(c->cmd, name, 0);
    return i >= 0 && c->set[i] ? c->val[i] : NULL;
}

int cli_has(cli_t *c, const char *name) {
    int i = cli_opt_index(c->cmd, name, 0);
    return i >= 0 && c->set[i];
}

int cli_multi(cli_t *c, const char *name, const char ***vals) {
    int i = cli_opt_index(c->cmd, name, 0);
    if (i < 0) return 0;
    *vals = c->multi[i];
    return c->nmulti[i];
}

void cli_print_json(json_t *v) {
    char *s = json_dumps(v, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    if (s) {
        fputs(s, stdout);
        fputc('\n', stdout);
        free(s);
    }
}
