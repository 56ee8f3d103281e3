/*
 * sbatch.c - Slurm batch scripts: #SBATCH directives and sbatch's flags
 * into a Sluice job spec (docs/slurm.md says what each becomes).
 *
 * Reading follows sbatch 22.05: directives are the lines that begin with
 * "#SBATCH" at the top of the script, up to the first line that is neither
 * blank nor a comment; each directive's text is split into words at blanks
 * (quotes '' and "" group, a backslash escapes, an unquoted # starts a
 * comment) and read as sbatch's own options: --opt=value, --opt value,
 * -n4, -n 4. Flags given on the command line override directives, and a
 * later directive overrides an earlier one.
 *
 * Every option is in one table. An option Sluice does not support is an
 * error naming it and where it was given ("train.sh:4: --hint is not
 * supported"), never silently dropped; with --ignore-unsupported it is a
 * warning instead. Each option's value is then turned into spec fields
 * with Slurm's meaning: per-node amounts (--mem, --gres, --gpus-per-node)
 * are divided among a node's tasks, because a Sluice spec asks per task;
 * time limits in every Slurm format become seconds, rounded up to whole
 * minutes as Slurm keeps them; memory sizes take Slurm's units (default
 * MiB).
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "jobspec.h"
#include "pyxis.h"
#include "mailtype.h"
#include "sluice/job.h"

enum {
    SB_JOB_NAME, SB_NTASKS, SB_NODES, SB_NTASKS_PER_NODE, SB_CPUS_PER_TASK, SB_MEM,
    SB_MEM_PER_CPU, SB_GRES, SB_GPUS, SB_GPUS_PER_TASK, SB_GPUS_PER_NODE, SB_TIME, SB_PARTITION,
    SB_QOS, SB_ACCOUNT, SB_OUTPUT, SB_ERROR, SB_ARRAY, SB_DEPENDENCY, SB_EXPORT, SB_CHDIR,
    SB_CONSTRAINT, SB_RESERVATION, SB_EXCLUSIVE, SB_MEM_PER_GPU, SB_CPUS_PER_GPU, SB_NODELIST, SB_EXCLUDE,
    SB_GPU_BIND, SB_HINT, SB_WAIT_ALL_NODES, SB_OPEN_MODE, SB_COMMENT,
    SB_CONTAINER_IMAGE, SB_CONTAINER_MOUNTS, SB_CONTAINER_WORKDIR, SB_CONTAINER_NAME, /* pyxis */
    SB_REQUEUE, SB_NO_REQUEUE, SB_MAIL_TYPE, SB_MAIL_USER,
    SB_WRAP, SB_PARSABLE, SB_QUIET, SB_IGNORE, SB_DRY_RUN, SB_HELP,
    SB_NOPTS,
    SB_UNSUPPORTED = -1
};

/* Where an option may be given. */
enum { WHERE_BOTH = 0, WHERE_CLI = 1 };

typedef struct sb_opt {
    const char *lng;
    char shrt;
    int arg;             /* 0: none; 1: required; 2: optional (only as --opt=value) */
    int id;              /* SB_*, or SB_UNSUPPORTED */
    int where;
    const char *why;     /* SB_UNSUPPORTED: the reason, or NULL */
} sb_opt_t;

/* Unsupported options that ask for resources: dropping one would make the
 * job smaller than the script asks, so --ignore-unsupported cannot. */
static bool asks_resources(const char *lng) {
    static const char *const asks[] = {"mincpus", "tmp", "ntasks-per-gpu", "sockets-per-node",
                                       "cores-per-socket", "licenses", "extra-node-info",
                                       "tres-per-task", "core-spec", "thread-spec", NULL};
    for (int i = 0; asks[i]; i++)
        if (strcmp(asks[i], lng) == 0)
            return true;
    return false;
}

static const sb_opt_t opts[] = {
    {"job-name", 'J', 1, SB_JOB_NAME, 0, NULL},
    {"ntasks", 'n', 1, SB_NTASKS, 0, NULL},
    {"nodes", 'N', 1, SB_NODES, 0, NULL},
    {"ntasks-per-node", 0, 1, SB_NTASKS_PER_NODE, 0, NULL},
    {"cpus-per-task", 'c', 1, SB_CPUS_PER_TASK, 0, NULL},
    {"mem", 0, 1, SB_MEM, 0, NULL},
    {"mem-per-cpu", 0, 1, SB_MEM_PER_CPU, 0, NULL},
    {"gres", 0, 1, SB_GRES, 0, NULL},
    {"gpus", 'G', 1, SB_GPUS, 0, NULL},
    {"gpus-per-task", 0, 1, SB_GPUS_PER_TASK, 0, NULL},
    {"gpus-per-node", 0, 1, SB_GPUS_PER_NODE, 0, NULL},
    {"time", 't', 1, SB_TIME, 0, NULL},
    {"partition", 'p', 1, SB_PARTITION, 0, NULL},
    {"qos", 'q', 1, SB_QOS, 0, NULL},
    {"constraint", 'C', 1, SB_CONSTRAINT, 0, NULL},
    {"account", 'A', 1, SB_ACCOUNT, 0, NULL},
    {"output", 'o', 1, SB_OUTPUT, 0, NULL},
    {"error", 'e', 1, SB_ERROR, 0, NULL},
    {"array", 'a', 1, SB_ARRAY, 0, NULL},
    {"dependency", 'd', 1, SB_DEPENDENCY, 0, NULL},
    {"export", 0, 1, SB_EXPORT, 0, NULL},
    {"chdir", 'D', 1, SB_CHDIR, 0, NULL},
    {"container-image", 0, 1, SB_CONTAINER_IMAGE, 0, NULL},
    {"container-mounts", 0, 1, SB_CONTAINER_MOUNTS, 0, NULL},
    {"container-workdir", 0, 1, SB_CONTAINER_WORKDIR, 0, NULL},
    {"container-name", 0, 1, SB_CONTAINER_NAME, 0, NULL},
    {"requeue", 0, 0, SB_REQUEUE, 0, NULL},
    {"no-requeue", 0, 0, SB_NO_REQUEUE, 0, NULL},
    {"mail-type", 0, 1, SB_MAIL_TYPE, 0, NULL},
    {"mail-user", 0, 1, SB_MAIL_USER, 0, NULL},
    {"exclusive", 0, 2, SB_EXCLUSIVE, 0, NULL},
    {"mem-per-gpu", 0, 1, SB_MEM_PER_GPU, 0, NULL},
    {"cpus-per-gpu", 0, 1, SB_CPUS_PER_GPU, 0, NULL},
    {"nodelist", 'w', 1, SB_NODELIST, 0, NULL},
    {"exclude", 'x', 1, SB_EXCLUDE, 0, NULL},
    /* Accepted, with no effect (docs/slurm.md): each task sees its own
     * GPUs already; Sluice does not pin CPUs; all tasks start at once. */
    {"gpu-bind", 0, 1, SB_GPU_BIND, 0, NULL},
    {"hint", 0, 1, SB_HINT, 0, NULL},
    {"wait-all-nodes", 0, 1, SB_WAIT_ALL_NODES, 0, NULL},
    {"open-mode", 0, 1, SB_OPEN_MODE, 0, NULL},
    {"comment", 0, 1, SB_COMMENT, 0, NULL},
    {"wrap", 0, 1, SB_WRAP, WHERE_CLI, NULL},
    {"parsable", 0, 0, SB_PARSABLE, WHERE_CLI, NULL},
    {"quiet", 'Q', 0, SB_QUIET, WHERE_CLI, NULL},
    {"ignore-unsupported", 0, 0, SB_IGNORE, WHERE_CLI, NULL},
    {"dry-run", 0, 0, SB_DRY_RUN, WHERE_CLI, NULL},
    {"help", 'h', 0, SB_HELP, WHERE_CLI, NULL},
    /* Known to Slurm, not (yet) to Sluice: each says why. */
    {"begin", 'b', 1, SB_UNSUPPORTED, 0, NULL},
    {"deadline", 0, 1, SB_UNSUPPORTED, 0, NULL},
    {"hold", 'H', 0, SB_UNSUPPORTED, 0, NULL},
    {"nice", 0, 2, SB_UNSUPPORTED, 0, "use sluice submit --priority"},
    {"priority", 0, 1, SB_UNSUPPORTED, 0, "use sluice submit --priority"},
    {"signal", 0, 1, SB_UNSUPPORTED, 0, NULL},
    {"licenses", 'L', 1, SB_UNSUPPORTED, 0, NULL},
    {"reservation", 0, 1, SB_RESERVATION, 0, NULL},
    {"wckey", 0, 1, SB_UNSUPPORTED, 0, NULL},
    {"input", 'i', 1, SB_UNSUPPORTED, 0, NULL},
    {"mincpus", 0, 1, SB_UNSUPPORTED, 0, NULL},
    {"tmp", 0, 1, SB_UNSUPPORTED, 0, NULL},
    {"gpu-freq", 0, 1, SB_UNSUPPORTED, 0, NULL},
    {"ntasks-per-gpu", 0, 1, SB_UNSUPPORTED, 0, NULL},
    {"ntasks-per-socket", 0, 1, SB_UNSUPPORTED, 0, NULL},
    {"ntasks-per-core", 0, 1, SB_UNSUPPORTED, 0, NULL},
    {"sockets-per-node", 0, 1, SB_UNSUPPORTED, 0, NULL},
    {"cores-per-socket", 0, 1, SB_UNSUPPORTED, 0, NULL},
    {"threads-per-core", 0, 1, SB_UNSUPPORTED, 0, NULL},
    {"distribution", 'm', 1, SB_UNSUPPORTED, 0, NULL},
    {"oversubscribe", 's', 0, SB_UNSUPPORTED, 0, NULL},
    {"overcommit", 'O', 0, SB_UNSUPPORTED, 0, NULL},
    {"switches", 0, 1, SB_UNSUPPORTED, 0, NULL},
    {"time-min", 0, 1, SB_UNSUPPORTED, 0, NULL},
    {"kill-on-invalid-dep", 0, 1, SB_UNSUPPORTED, 0, NULL},
    {"no-kill", 'k', 2, SB_UNSUPPORTED, 0, NULL},
    {"propagate", 0, 2, SB_UNSUPPORTED, 0, NULL},
    {"profile", 0, 1, SB_UNSUPPORTED, 0, NULL},
    {"acctg-freq", 0, 1, SB_UNSUPPORTED, 0, NULL},
    {"get-user-env", 0, 2, SB_UNSUPPORTED, 0, NULL},
    {"export-file", 0, 1, SB_UNSUPPORTED, 0, NULL},
    {"clusters", 'M', 1, SB_UNSUPPORTED, 0, NULL},
    {"container", 0, 1, SB_UNSUPPORTED, 0, "use sluice submit --image"},
    {"uid", 0, 1, SB_UNSUPPORTED, 0, NULL},
    {"gid", 0, 1, SB_UNSUPPORTED, 0, NULL},
    {"wait", 'W', 0, SB_UNSUPPORTED, 0, NULL},
    {"test-only", 0, 0, SB_UNSUPPORTED, 0, NULL},
    {"verbose", 'v', 0, SB_UNSUPPORTED, 0, NULL},
    {"batch", 0, 1, SB_UNSUPPORTED, 0, NULL},
    {"spread-job", 0, 0, SB_UNSUPPORTED, 0, NULL},
    {"use-min-nodes", 0, 0, SB_UNSUPPORTED, 0, NULL},
    {"reboot", 0, 0, SB_UNSUPPORTED, 0, NULL},
    {"core-spec", 'S', 1, SB_UNSUPPORTED, 0, NULL},
    {"thread-spec", 0, 1, SB_UNSUPPORTED, 0, NULL},
    {"gres-flags", 0, 1, SB_UNSUPPORTED, 0, NULL},
    {"mem-bind", 0, 1, SB_UNSUPPORTED, 0, NULL},
    {"cpu-freq", 0, 1, SB_UNSUPPORTED, 0, NULL},
    {"network", 0, 1, SB_UNSUPPORTED, 0, NULL},
    {"power", 0, 1, SB_UNSUPPORTED, 0, NULL},
    {"bb", 0, 1, SB_UNSUPPORTED, 0, NULL},
    {"bbf", 0, 1, SB_UNSUPPORTED, 0, NULL},
    {"delay-boot", 0, 1, SB_UNSUPPORTED, 0, NULL},
    {"extra-node-info", 'B', 1, SB_UNSUPPORTED, 0, NULL},
    {"tres-per-task", 0, 1, SB_UNSUPPORTED, 0, NULL},
    {0}};

struct cli_sbatch {
    char *val[SB_NOPTS];    /* the value in force (owned), NULL: not given */
    char where[SB_NOPTS][300]; /* "FILE:LINE" or "the command line", for messages */
    bool from_cli[SB_NOPTS];
    bool ignore_unsupported;
    bool env_pass;          /* cli_sbatch_opt: never over the command line */
    int warnings;
    int errors;             /* problems said so far: all are said, then nothing is submitted */
};

cli_sbatch_t *cli_sbatch_new(bool ignore_unsupported) {
    cli_sbatch_t *sb = calloc(1, sizeof *sb);
    if (sb == NULL)
        abort();
    sb->ignore_unsupported = ignore_unsupported;
    return sb;
}

void cli_sbatch_free(cli_sbatch_t *sb) {
    if (sb == NULL)
        return;
    for (int i = 0; i < SB_NOPTS; i++)
        free(sb->val[i]);
    free(sb);
}

bool cli_sbatch_flag(const cli_sbatch_t *sb, const char *name) {
    for (const sb_opt_t *o = opts; o->lng; o++)
        if (o->id >= 0 && strcmp(o->lng, name) == 0)
            return sb->val[o->id] != NULL;
    return false;
}

const char *cli_sbatch_value(const cli_sbatch_t *sb, const char *name) {
    for (const sb_opt_t *o = opts; o->lng; o++)
        if (o->id >= 0 && strcmp(o->lng, name) == 0)
            return sb->val[o->id];
    return NULL;
}

/* "-n/--ntasks" or "--mem": how a message names an option. */
static const char *opt_name(int id, char *buf, size_t len) {
    for (const sb_opt_t *o = opts; o->lng; o++) {
        if (o->id != id)
            continue;
        if (o->shrt)
            snprintf(buf, len, "-%c/--%s", o->shrt, o->lng);
        else
            snprintf(buf, len, "--%s", o->lng);
        return buf;
    }
    return "?";
}

static int sb_error(cli_sbatch_t *sb, const char *where, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int sb_error(cli_sbatch_t *sb, const char *where, const char *fmt, ...) {
    va_list ap;
    sb->errors++;
    va_start(ap, fmt);
    fprintf(stderr, "sluice: %s: ", where);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return CLI_EUSAGE;
}

/* An option Sluice does not support: an error, or a warning when the user
 * asked for those, unless it asks for resources (asks): dropping it would
 * give the job less than the script asks. 0 when only a warning. */
static int unsupported(cli_sbatch_t *sb, const char *where, const char *what, const char *why,
                       bool asks) {
    if (sb->ignore_unsupported && !asks) {
        fprintf(stderr, "sluice: warning: %s: %s is not supported%s%s; ignored\n", where, what,
                why ? ": " : "", why ? why : "");
        sb->warnings++;
        return 0;
    }
    sb->errors++;
    if (asks)
        fprintf(stderr, "sluice: %s: %s is not supported%s%s, and it asks for resources: "
                "ignoring it would give the job less than the script asks\n", where, what,
                why ? ": " : "", why ? why : "");
    else
        fprintf(stderr, "sluice: %s: %s is not supported%s%s (--ignore-unsupported makes this a "
                "warning)\n", where, what, why ? ": " : "", why ? why : "");
    return CLI_EUSAGE;
}

/* Parses argv as sbatch's options, up to the first word that is not one
 * (returned in *rest; argc when none). cli: the command line (overrides
 * everything) rather than a directive (overrides earlier directives, but
 * never the command line). */
static int parse_opts(cli_sbatch_t *sb, int argc, char **argv, bool cli, const char *where,
                      int *rest) {
    int i = 0;
    for (; i < argc; i++) {
        const char *a = argv[i];
        const sb_opt_t *o = NULL;
        const char *val = NULL;
        char shown[160];
        if (strcmp(a, "--") == 0) {
            i++;
            break;
        }
        if (a[0] != '-' || a[1] == '\0')
            break;
        if (a[1] == '-') {
            const char *eq = strchr(a, '=');
            size_t nl = eq ? (size_t)(eq - a - 2) : strlen(a + 2);
            for (const sb_opt_t *p = opts; p->lng && !o; p++)
                if (strlen(p->lng) == nl && strncmp(p->lng, a + 2, nl) == 0)
                    o = p;
            snprintf(shown, sizeof shown, "--%.*s", (int)(nl < 100 ? nl : 100), a + 2);
            if (o == NULL) {
                unsupported(sb, where, shown, "not an sbatch option Sluice knows", false);
                /* Whether it takes a value is unknown: in a directive, a
                 * next word that is not an option is taken for its value
                 * (a directive holds options only). */
                if (!cli && !eq && i + 1 < argc && argv[i + 1][0] != '-')
                    i++;
                continue;
            }
            if (eq) {
                if (o->arg == 0) {
                    sb_error(sb, where, "%s takes no value", shown);
                    continue;
                }
                val = eq + 1;
            }
        } else {
            for (const sb_opt_t *p = opts; p->lng && !o; p++)
                if (p->shrt == a[1])
                    o = p;
            snprintf(shown, sizeof shown, "-%c", a[1]);
            if (o == NULL) {
                unsupported(sb, where, shown, "not an sbatch option Sluice knows", false);
                continue;
            }
            if (o->shrt)
                snprintf(shown, sizeof shown, "-%c/--%s", o->shrt, o->lng);
            if (a[2] != '\0') {
                if (o->arg == 0) {
                    sb_error(sb, where, "%s takes no value", shown);
                    continue;
                }
                val = a + 2;
            }
        }
        if (o->arg == 1 && val == NULL) {
            if (i + 1 >= argc) {
                sb_error(sb, where, "%s needs a value", shown);
                continue;
            }
            val = argv[++i];
        }
        if (!cli && o->where == WHERE_CLI) {
            sb_error(sb, where, "%s is a flag of the command line, not a directive", shown);
            continue;
        }
        if (o->id == SB_UNSUPPORTED) {
            unsupported(sb, where, shown, o->why, asks_resources(o->lng));
            continue;
        }
        if (sb->from_cli[o->id] && (!cli || sb->env_pass))
            continue;
        free(sb->val[o->id]);
        sb->val[o->id] = strdup(val ? val : "");
        if (sb->val[o->id] == NULL)
            abort();
        snprintf(sb->where[o->id], sizeof sb->where[o->id], "%s", where);
        sb->from_cli[o->id] = cli;
        if (o->id == SB_IGNORE)
            sb->ignore_unsupported = true;
    }
    *rest = i;
    return 0;
}

int cli_sbatch_args(cli_sbatch_t *sb, int argc, char **argv, int *script_at) {
    return parse_opts(sb, argc, argv, true, "the command line", script_at);
}

int cli_sbatch_opt(cli_sbatch_t *sb, char *word, const char *where) {
    int rest;
    sb->env_pass = true;
    int rc = parse_opts(sb, 1, &word, true, where, &rest);
    sb->env_pass = false;
    return rc;
}

int cli_sbatch_script(cli_sbatch_t *sb, const char *path, const char *text) {
    int lineno = 0;
    if (strstr(text, "\r\n") != NULL) /* sbatch refuses these too */
        return sb_error(sb, path, "the script has DOS line breaks (\\r\\n) instead of UNIX ones "
                        "(\\n); convert it, e.g. with dos2unix");
    for (const char *p = text; *p;) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        lineno++;
        char line[4096];
        snprintf(line, sizeof line, "%.*s", (int)(len < sizeof line - 1 ? len : sizeof line - 1), p);
        p += len + (nl != NULL);
        if (strncmp(line, "#SBATCH", 7) == 0) {
            char where[300], buf[4096], *words[64];
            snprintf(where, sizeof where, "%s:%d", path, lineno);
            int n = cli_sbatch_split_words(line + 7, buf, sizeof buf, words, 64), rest;
            if (len >= sizeof line)
                sb_error(sb, where, "the directive is longer than %zu bytes", sizeof line - 1);
            else if (n < 0)
                sb_error(sb, where, "the directive has more than 64 words");
            else if (parse_opts(sb, n, words, false, where, &rest) == 0 && rest < n)
                sb_error(sb, where, "\"%s\" is not an option (a directive holds options only)",
                         words[rest]);
            continue;
        }
        /* The directives end at the first line that is not blank or a comment. */
        const char *q = line;
        while (*q && isspace((unsigned char)*q))
            q++;
        if (*q != '\0' && *q != '#')
            break;
    }
    return 0;
}

/* ---- values ---- */

static int bad(cli_sbatch_t *sb, int id, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int bad(cli_sbatch_t *sb, int id, const char *fmt, ...) {
    char name[64], msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return sb_error(sb, sb->where[id], "%s: %s", opt_name(id, name, sizeof name), msg);
}

/* A whole number 1..max, or -1 after a message. */
static long long count(cli_sbatch_t *sb, int id, long long max) {
    const char *s = sb->val[id];
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || *end || v < 1 || v > max) {
        bad(sb, id, "\"%s\" is not a whole number from 1 to %lld", s, max);
        return -1;
    }
    return v;
}

/* A GPU request "[type:]N" (--gpus, --gpus-per-task, --gpus-per-node), or
 * from --gres "gpu[:type]:N" (gres true). Sets *n and *model (a copy into
 * model, "" for any). 0, or CLI_EUSAGE after a message. */
static int gpu_req(cli_sbatch_t *sb, int id, bool gres, long long *n, char *model,
                   size_t mlen) {
    char buf[256];
    snprintf(buf, sizeof buf, "%s", sb->val[id]);
    char *s = buf;
    model[0] = '\0';
    if (gres) {
        if (strchr(s, ',') != NULL)
            return bad(sb, id, "\"%s\": Sluice schedules GPUs only (one gpu[:type]:N)", s);
        if (strncmp(s, "gpu", 3) != 0 || (s[3] != '\0' && s[3] != ':'))
            return bad(sb, id, "\"%s\": Sluice schedules GPUs only (gpu[:type]:N)", s);
        s += 3;
        if (*s == '\0') {
            *n = 1;
            return 0;
        }
        s++;
    }
    char *colon = strrchr(s, ':');
    char *num = s;
    if (colon) {
        *colon = '\0';
        snprintf(model, mlen, "%s", s);
        num = colon + 1;
    } else if (gres && !isdigit((unsigned char)*s)) {
        snprintf(model, mlen, "%s", s); /* gpu:type: one GPU */
        *n = 1;
        return 0;
    }
    char *end;
    errno = 0;
    *n = strtoll(num, &end, 10);
    if (errno || end == num || *end || *n < 0 || *n > 100000)
        return bad(sb, id, "\"%s\" is not a GPU count ([type:]N)", sb->val[id]);
    return 0;
}

/* Checks the file patterns of -o/-e: sbatch's %j %x %A %a %t %n %N %u %%,
 * with an optional width. */
static int check_pattern(cli_sbatch_t *sb, int id) {
    for (const char *p = sb->val[id]; *p; p++) {
        if (*p != '%')
            continue;
        p++;
        while (isdigit((unsigned char)*p))
            p++;
        if (*p == '\0' || strchr("jxAatnNu%", *p) == NULL)
            return bad(sb, id, "the pattern %%%c is not supported (Sluice expands %%j %%x %%A "
                       "%%a %%t %%n %%N %%u %%%%)", *p ? *p : ' ');
    }
    return 0;
}

/* Sets field name of spec from text through the job-spec table's check. */
static int set_field(cli_sbatch_t *sb, int id, json_t *spec, const char *name,
                     const char *text) {
    const sl_jobspec_field_t *f = sl_jobspec_find(name);
    char err[256];
    json_t *v = sl_jobspec_from_text(f, text, err, sizeof err);
    if (v == NULL)
        return bad(sb, id, "%s", err);
    json_object_set_new(spec, name, v);
    return 0;
}

/* Variables of the submitting shell never copied by --export=ALL: the
 * node sets its own (the job's directory, the user), and the CLI's own
 * credentials stay on this machine. */
static bool export_skipped(const char *k, size_t kl) {
    static const char *const skip[] = {"HOME", "USER", "LOGNAME", "TMPDIR", "PWD", "OLDPWD",
                                       "SHLVL", "_", "CUDA_VISIBLE_DEVICES", NULL};
    for (int i = 0; skip[i]; i++)
        if (strlen(skip[i]) == kl && strncmp(k, skip[i], kl) == 0)
            return true;
    return (kl >= 7 && strncmp(k, "SLUICE_", 7) == 0) || (kl >= 6 && strncmp(k, "SLURM_", 6) == 0);
}

extern char **environ;

/* --export: ALL, NONE, or a list of NAME and NAME=value (with ALL or NONE
 * among them). Fills env. */
static int export_env(cli_sbatch_t *sb, json_t *env) {
    char *list = strdup(sb->val[SB_EXPORT]), *save = NULL;
    if (list == NULL)
        abort();
    int rc = 0;
    for (char *w = strtok_r(list, ",", &save); w && rc == 0; w = strtok_r(NULL, ",", &save)) {
        if (strcmp(w, "NONE") == 0)
            continue;
        if (strcmp(w, "ALL") == 0) {
            for (char **e = environ; *e; e++) {
                const char *eq = strchr(*e, '=');
                if (eq == NULL || export_skipped(*e, (size_t)(eq - *e)))
                    continue;
                char *k = strndup(*e, (size_t)(eq - *e));
                if (k && sl_jobspec_env_name_ok(k))
                    json_object_set_new(env, k, json_string(eq + 1));
                free(k);
            }
            continue;
        }
        char *eq = strchr(w, '=');
        if (eq)
            *eq = '\0';
        if (!sl_jobspec_env_name_ok(w)) {
            rc = bad(sb, SB_EXPORT, "\"%s\" is not a variable name", w);
            break;
        }
        const char *v = eq ? eq + 1 : getenv(w);
        if (v)
            json_object_set_new(env, w, json_string(v));
    }
    free(list);
    return rc;
}

static const char *basename_of(const char *path) {
    const char *s = strrchr(path, '/');
    return s && s[1] ? s + 1 : path;
}

/* An absolute path for dir, relative to the directory of submission. */
static char *abs_path(const char *dir) {
    char cwd[PATH_MAX], *out;
    if (dir[0] == '/' || getcwd(cwd, sizeof cwd) == NULL)
        return strdup(dir);
    if (asprintf(&out, "%s/%s", cwd, dir) < 0)
        abort();
    return out;
}

/* -N N or -N min-max into *lo and *hi (hi 0 for one count). */
static int node_range(cli_sbatch_t *sb, long long *lo, long long *hi) {
    const char *s = sb->val[SB_NODES];
    char *end;
    errno = 0;
    *hi = 0;
    *lo = strtoll(s, &end, 10);
    if (!errno && end != s && *end == '-') {
        const char *m = end + 1;
        *hi = strtoll(m, &end, 10);
        if (end == m)
            *hi = -1;
    }
    if (errno || end == s || *end || *lo < 1 || *lo > SL_MAX_TASKS || *hi < 0 ||
        *hi > SL_MAX_TASKS || (*hi && *hi < *lo))
        return bad(sb, SB_NODES, "\"%s\" is not a node count N or min-max from 1 to %d", s,
                   SL_MAX_TASKS);
    if (*hi == *lo)
        *hi = 0;
    return 0;
}

/* Bytes of a memory option, or -1 after a message. */
static long long mem_opt(cli_sbatch_t *sb, int id, bool zero_ok) {
    long long b = cli_slurm_mem(sb->val[id]);
    if (b < 0 || (b == 0 && !zero_ok)) {
        bad(sb, id, "\"%s\" is not a size (a number with K, M, G or T; M when none)", sb->val[id]);
        return -1;
    }
    return b;
}

/* -w/--nodelist, -x/--exclude: a host list into field name. */
static void hosts_field(cli_sbatch_t *sb, int id, json_t *spec, const char *name) {
    json_t *list;
    char err[256];
    if (cli_slurm_hosts(sb->val[id], &list, err, sizeof err) < 0) {
        bad(sb, id, "%s", err);
        return;
    }
    json_object_set_new(spec, name, list);
}

json_t *cli_sbatch_spec(cli_sbatch_t *sb, const char *path, const char *text, char **args,
                        int nargs) {
    json_t *spec = json_object();
    char **v = sb->val, model[128] = "";
    long long ntasks = 1, nodes = 0, nodes_max = 0, tpn = 0, per_task_gpus = 0;

    if (strlen(text) > SL_JOBSPEC_SCRIPT_MAX) {
        fprintf(stderr, "sluice: %s: the script is %zu bytes; a batch script may have at most "
                "%d KiB\n", path, strlen(text), SL_JOBSPEC_SCRIPT_MAX / 1024);
        goto fail;
    }
    if (v[SB_JOB_NAME])
        set_field(sb, SB_JOB_NAME, spec, "name", v[SB_JOB_NAME]);
    /* Tasks: -n, else -N x --ntasks-per-node, else one per node. The
     * nodes are distinct, as Slurm's are (nodes, nodes_max). */
    if (v[SB_NODES] && node_range(sb, &nodes, &nodes_max) != 0)
        nodes = nodes_max = 0;
    if (v[SB_NTASKS_PER_NODE] && (tpn = count(sb, SB_NTASKS_PER_NODE, SL_MAX_TASKS)) < 0)
        tpn = 0;
    if (v[SB_NTASKS]) {
        if ((ntasks = count(sb, SB_NTASKS, SL_MAX_TASKS)) < 0)
            ntasks = 1;
    } else if (tpn) {
        ntasks = tpn * (nodes ? nodes : 1);
    } else if (nodes) {
        ntasks = nodes;
    }
    if (ntasks > SL_MAX_TASKS) {
        bad(sb, v[SB_NODES] ? SB_NODES : SB_NTASKS_PER_NODE,
            "%lld tasks in all; a job may have at most %d", ntasks, SL_MAX_TASKS);
        ntasks = 1;
    }
    if (nodes > ntasks) { /* as sbatch: "can't run 2 processes on 4 nodes, setting nnodes to 2" */
        fprintf(stderr, "sluice: warning: %s: -N/--nodes: %lld nodes for %lld task%s; %lld nodes, "
                "as sbatch sets them\n", sb->where[SB_NODES], nodes, ntasks, ntasks == 1 ? "" : "s",
                ntasks);
        sb->warnings++;
        nodes = ntasks;
        nodes_max = 0;
    }
    if (nodes) {
        json_object_set_new(spec, "nodes", json_integer(nodes));
        if (nodes_max)
            json_object_set_new(spec, "nodes_max", json_integer(nodes_max));
    }
    if (tpn)
        json_object_set_new(spec, "tasks_per_node", json_integer(tpn));
    else if (v[SB_NTASKS] && nodes && !nodes_max && ntasks % nodes == 0 && ntasks > nodes)
        json_object_set_new(spec, "tasks_per_node", json_integer(ntasks / nodes)); /* even, as Slurm lays them out */
    /* A node's tasks, to divide what Slurm asks per node. */
    if (tpn == 0)
        tpn = nodes ? (ntasks + nodes - 1) / nodes : ntasks;
    json_object_set_new(spec, "tasks", json_integer(ntasks));

    long long cpus = 1;
    if (v[SB_CPUS_PER_TASK]) {
        if ((cpus = count(sb, SB_CPUS_PER_TASK, 1000000)) < 0)
            cpus = 1;
        else
            json_object_set_new(spec, "cpus", json_sprintf("%lld", cpus));
    }
    int mem_opts[] = {SB_MEM, SB_MEM_PER_CPU, SB_MEM_PER_GPU}, nmo = 0;
    for (int k = 0; k < 3; k++)
        nmo += v[mem_opts[k]] != NULL;
    if (nmo > 1)
        bad(sb, v[SB_MEM_PER_GPU] ? SB_MEM_PER_GPU : SB_MEM_PER_CPU,
            "give one of --mem, --mem-per-cpu and --mem-per-gpu");
    bool exclusive = v[SB_EXCLUSIVE] != NULL;
    if (v[SB_MEM]) {
        long long b = mem_opt(sb, SB_MEM, true);
        if (b == 0)
            exclusive = true; /* all of each node's memory: the node is the job's */
        else if (b > 0)
            json_object_set_new(spec, "memory", cli_mem_json(b / tpn));
    }
    if (exclusive)
        json_object_set_new(spec, "exclusive", json_true());
    if (v[SB_MEM_PER_CPU]) {
        long long b = mem_opt(sb, SB_MEM_PER_CPU, false);
        if (b > 0)
            json_object_set_new(spec, "memory", cli_mem_json(b * cpus));
    }
    /* GPUs: one of the four ways Slurm asks for them, per task in Sluice. */
    int gpu_opts[] = {SB_GPUS_PER_TASK, SB_GRES, SB_GPUS_PER_NODE, SB_GPUS}, ngo = 0, gid = -1;
    for (int k = 0; k < 4; k++)
        if (v[gpu_opts[k]]) {
            ngo++;
            if (gid < 0)
                gid = gpu_opts[k];
        }
    if (ngo > 1) {
        char a[64];
        bad(sb, gid, "give one of --gpus-per-task, --gres, --gpus-per-node and --gpus "
            "(also given: %s)", opt_name(gid == SB_GPUS_PER_TASK && v[SB_GRES] ? SB_GRES
                                         : SB_GPUS, a, sizeof a));
    } else if (gid >= 0) {
        long long n = 0;
        long long per = gid == SB_GPUS ? ntasks : gid == SB_GPUS_PER_TASK ? 1 : tpn;
        if (gpu_req(sb, gid, gid == SB_GRES, &n, model, sizeof model) != 0) {
            n = 0;
        } else if (n > 0 && n < per && n * SL_GPU_MILLI % per == 0) {
            /* Fewer GPUs than the tasks that share them (--gpus-per-node=1
             * --ntasks-per-node=4): each task gets its share of one GPU,
             * so that the node's tasks hold the GPUs Slurm gives it. */
            json_object_set_new(spec, "gpu_share", json_sprintf("%g", (double)n / (double)per));
            if (model[0])
                json_object_set_new(spec, "gpu_models", json_pack("[s]", model));
            n = 0;
        } else if (n % per != 0) {
            bad(sb, gid, "%lld GPUs cannot be divided evenly among %lld tasks%s (Sluice asks "
                "for whole GPUs per task, or for an equal share of one GPU when there are "
                "fewer GPUs than tasks, in thousandths of a GPU)", n, per,
                gid == SB_GPUS ? "" : " of a node");
            n = 0;
        }
        per_task_gpus = n / per;
        if (per_task_gpus > 0) {
            char t[32];
            snprintf(t, sizeof t, "%lld", per_task_gpus);
            set_field(sb, gid, spec, "gpus", t);
            if (model[0])
                json_object_set_new(spec, "gpu_models", json_pack("[s]", model));
        }
    }
    if (v[SB_MEM_PER_GPU]) {
        long long b = mem_opt(sb, SB_MEM_PER_GPU, false);
        if (b > 0 && per_task_gpus == 0)
            bad(sb, SB_MEM_PER_GPU, "needs GPUs per task (--gres, --gpus-per-task, ...)");
        else if (b > 0)
            json_object_set_new(spec, "mem_per_gpu", cli_mem_json(b));
    }
    if (v[SB_CPUS_PER_GPU]) {
        long long c = count(sb, SB_CPUS_PER_GPU, 1000000);
        if (c > 0 && v[SB_CPUS_PER_TASK])
            bad(sb, SB_CPUS_PER_GPU, "give --cpus-per-task or --cpus-per-gpu, not both");
        else if (c > 0 && per_task_gpus == 0)
            bad(sb, SB_CPUS_PER_GPU, "needs GPUs per task (--gres, --gpus-per-task, ...)");
        else if (c > 0)
            json_object_set_new(spec, "cpus", json_sprintf("%lld", c * per_task_gpus));
    }
    if (v[SB_TIME]) {
        long long s = cli_slurm_time(v[SB_TIME]);
        char t[32];
        snprintf(t, sizeof t, "%lld", s);
        if (s < 0)
            bad(sb, SB_TIME, "\"%s\" is not a time (minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM, "
                "D-HH:MM:SS or UNLIMITED)", v[SB_TIME]);
        else
            set_field(sb, SB_TIME, spec, "time_limit", t);
    }
    if (v[SB_PARTITION]) {
        if (strchr(v[SB_PARTITION], ','))
            bad(sb, SB_PARTITION, "\"%s\": a Sluice job runs in one pool", v[SB_PARTITION]);
        else
            set_field(sb, SB_PARTITION, spec, "pool", v[SB_PARTITION]);
    }
    if (v[SB_RESERVATION])
        set_field(sb, SB_RESERVATION, spec, "reservation", v[SB_RESERVATION]);
    if (v[SB_QOS]) {
        if (sl_jobspec_find("priority_class") == NULL)
            unsupported(sb, sb->where[SB_QOS], "-q/--qos",
                        "priority classes are not configured in this Sluice", false);
        else
            set_field(sb, SB_QOS, spec, "priority_class", v[SB_QOS]);
    }
    /* Node features are node labels: a bare name is a label key the node
     * must have, & and | as Slurm joins them (docs/placement.md); Slurm's
     * brackets ([a|b]: one of them, the same on every node) are dropped,
     * counts refused. */
    if (v[SB_CONSTRAINT]) {
        char feat[1100], err[256];
        if (cli_slurm_features(v[SB_CONSTRAINT], feat, sizeof feat, err, sizeof err) < 0)
            bad(sb, SB_CONSTRAINT, "%s", err);
        else
            set_field(sb, SB_CONSTRAINT, spec, "constraint", feat);
    }
    if (v[SB_NODELIST])
        hosts_field(sb, SB_NODELIST, spec, "nodelist");
    if (v[SB_EXCLUDE])
        hosts_field(sb, SB_EXCLUDE, spec, "exclude");
    if (v[SB_COMMENT])
        set_field(sb, SB_COMMENT, spec, "comment", v[SB_COMMENT]);
    if (v[SB_OPEN_MODE]) {
        if (strcmp(v[SB_OPEN_MODE], "append") && strcmp(v[SB_OPEN_MODE], "truncate"))
            bad(sb, SB_OPEN_MODE, "\"%s\" is not append or truncate", v[SB_OPEN_MODE]);
        else
            json_object_set_new(spec, "open_mode", json_string(v[SB_OPEN_MODE]));
    }
    if (v[SB_ACCOUNT]) {
        /* Slurm keeps account names in lower case, and so matches them. */
        for (char *p = v[SB_ACCOUNT]; *p; p++)
            *p = (char)tolower((unsigned char)*p);
        set_field(sb, SB_ACCOUNT, spec, "tenant", v[SB_ACCOUNT]);
    }
    /* --requeue: requeued after a node's loss (Slurm's meaning), and
     * retried after a failure as the config's scheduler.default_retries
     * says; --no-requeue: neither (it wins when both are given). */
    if (v[SB_NO_REQUEUE]) {
        json_object_set_new(spec, "on_node_failure", json_string("fail"));
        json_object_set_new(spec, "retries", json_integer(0));
    } else if (v[SB_REQUEUE]) {
        json_object_set_new(spec, "on_node_failure", json_string("requeue"));
    }
    if (v[SB_MAIL_TYPE]) {
        uint32_t mask;
        char merr[256];
        if (sl_mail_types_parse(v[SB_MAIL_TYPE], &mask, merr, sizeof merr) < 0)
            bad(sb, SB_MAIL_TYPE, "%s", merr);
        else
            set_field(sb, SB_MAIL_TYPE, spec, "mail_type", v[SB_MAIL_TYPE]);
    }
    if (v[SB_MAIL_USER])
        set_field(sb, SB_MAIL_USER, spec, "mail_user", v[SB_MAIL_USER]);
    if (v[SB_OUTPUT] && check_pattern(sb, SB_OUTPUT) == 0)
        json_object_set_new(spec, "output", json_string(v[SB_OUTPUT]));
    if (v[SB_ERROR] && check_pattern(sb, SB_ERROR) == 0)
        json_object_set_new(spec, "error", json_string(v[SB_ERROR]));
    /* Arrays and dependencies keep Slurm's text; the controller reads it. */
    if (v[SB_ARRAY]) {
        if (v[SB_ARRAY][0] == '\0')
            bad(sb, SB_ARRAY, "needs indices such as 0-99%%8 or 1,3,5-9:2");
        else
            json_object_set_new(spec, "array", json_string(v[SB_ARRAY]));
    }
    if (v[SB_DEPENDENCY]) {
        if (v[SB_DEPENDENCY][0] == '\0')
            bad(sb, SB_DEPENDENCY, "needs a condition such as afterok:123 or singleton");
        else
            json_object_set_new(spec, "dependency", json_string(v[SB_DEPENDENCY]));
    }
    if (v[SB_EXPORT]) {
        json_t *env = json_object();
        json_object_set_new(spec, "env", env);
        export_env(sb, env);
        if (json_object_size(env) == 0)
            json_object_del(spec, "env");
    }
    if (v[SB_CONTAINER_IMAGE] || v[SB_CONTAINER_MOUNTS] || v[SB_CONTAINER_WORKDIR] ||
        v[SB_CONTAINER_NAME]) {
        const char *pv[CLI_PYXIS_N] = {v[SB_CONTAINER_IMAGE], v[SB_CONTAINER_MOUNTS],
                                       v[SB_CONTAINER_WORKDIR], v[SB_CONTAINER_NAME]};
        char perr[512];
        int which = 0;
        if (cli_pyxis_apply(spec, pv, &which, perr, sizeof perr) != 0)
            bad(sb, SB_CONTAINER_IMAGE + which, "%s", perr);
    }
    if (v[SB_CHDIR]) {
        char *d = abs_path(v[SB_CHDIR]);
        json_object_set_new(spec, "chdir", json_string(d));
        free(d);
    }
    /* Every problem of the script and the command line was said above, each
     * where it was given; nothing is submitted while any is left. */
    if (sb->errors > 0) {
        fprintf(stderr, "sluice: %s: %d problem%s (above); nothing was submitted\n", path,
                sb->errors, sb->errors == 1 ? "" : "s");
        goto fail;
    }
    char cwd[PATH_MAX];
    if (getcwd(cwd, sizeof cwd))
        json_object_set_new(spec, "submit_dir", json_string(cwd));
    json_object_set_new(spec, "script", json_string(text));
    json_t *cmd = json_array();
    json_array_append_new(cmd, json_string(basename_of(path)));
    for (int k = 0; k < nargs; k++)
        json_array_append_new(cmd, json_string(args[k]));
    json_object_set_new(spec, "command", cmd);
    return spec;
fail:
    json_decref(spec);
    return NULL;
}

int cli_sbatch_read(const char *path, char **text) {
    FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "r");
    if (f == NULL) {
        fprintf(stderr, "sluice: %s: %s\n", path, strerror(errno));
        return CLI_EUSAGE;
    }
    size_t cap = SL_JOBSPEC_SCRIPT_MAX + 2, n;
    char *buf = malloc(cap);
    if (buf == NULL)
        abort();
    n = fread(buf, 1, cap - 1, f);
    int err = ferror(f);
    if (f != stdin)
        fclose(f);
    if (err) {
        free(buf);
        fprintf(stderr, "sluice: %s: cannot read it\n", path);
        return CLI_EUSAGE;
    }
    if (n > SL_JOBSPEC_SCRIPT_MAX) {
        free(buf);
        fprintf(stderr, "sluice: %s: the script is over %d KiB, the most a batch script may "
                "have\n", path, SL_JOBSPEC_SCRIPT_MAX / 1024);
        return CLI_EUSAGE;
    }
    buf[n] = '\0';
    if (memchr(buf, '\0', n) != NULL) {
        free(buf);
        fprintf(stderr, "sluice: %s: the script holds a NUL byte (is it a binary?)\n", path);
        return CLI_EUSAGE;
    }
    *text = buf;
    return CLI_OK;
}

bool cli_sbatch_is_script(const char *path) {
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return false;
    char head[2] = {0};
    size_t n = fread(head, 1, 2, f);
    fclose(f);
    return n == 2 && head[0] == '#' && head[1] == '!';
}
