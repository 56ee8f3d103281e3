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
 * error naming it and where it was given ("train.sh:4: --mail-type is not
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
#include "sluice/job.h"

enum {
    SB_JOB_NAME, SB_NTASKS, SB_NODES, SB_NTASKS_PER_NODE, SB_CPUS_PER_TASK, SB_MEM,
    SB_MEM_PER_CPU, SB_GRES, SB_GPUS, SB_GPUS_PER_TASK, SB_GPUS_PER_NODE, SB_TIME, SB_PARTITION,
    SB_QOS, SB_ACCOUNT, SB_OUTPUT, SB_ERROR, SB_ARRAY, SB_DEPENDENCY, SB_EXPORT, SB_CHDIR,
    SB_CONSTRAINT,
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
    {"wrap", 0, 1, SB_WRAP, WHERE_CLI, NULL},
    {"parsable", 0, 0, SB_PARSABLE, WHERE_CLI, NULL},
    {"quiet", 'Q', 0, SB_QUIET, WHERE_CLI, NULL},
    {"ignore-unsupported", 0, 0, SB_IGNORE, WHERE_CLI, NULL},
    {"dry-run", 0, 0, SB_DRY_RUN, WHERE_CLI, NULL},
    {"help", 'h', 0, SB_HELP, WHERE_CLI, NULL},
    /* Known to Slurm, not (yet) to Sluice: each says why. */
    {"exclusive", 0, 2, SB_UNSUPPORTED, 0,
     "Sluice does not reserve whole nodes; a job's GPUs, CPUs and memory are its own"},
    {"mail-type", 0, 1, SB_UNSUPPORTED, 0, "Sluice sends no mail"},
    {"mail-user", 0, 1, SB_UNSUPPORTED, 0, "Sluice sends no mail"},
    {"requeue", 0, 0, SB_UNSUPPORTED, 0,
     "after a node failure a job is requeued by default (on_node_failure)"},
    {"no-requeue", 0, 0, SB_UNSUPPORTED, 0,
     "use sluice submit --on-node-failure fail"},
    {"begin", 'b', 1, SB_UNSUPPORTED, 0, NULL},
    {"deadline", 0, 1, SB_UNSUPPORTED, 0, NULL},
    {"hold", 'H', 0, SB_UNSUPPORTED, 0, NULL},
    {"nice", 0, 2, SB_UNSUPPORTED, 0, "use sluice submit --priority"},
    {"priority", 0, 1, SB_UNSUPPORTED, 0, "use sluice submit --priority"},
    {"signal", 0, 1, SB_UNSUPPORTED, 0, NULL},
    {"licenses", 'L', 1, SB_UNSUPPORTED, 0, NULL},
    {"reservation", 0, 1, SB_UNSUPPORTED, 0, NULL},
    {"wckey", 0, 1, SB_UNSUPPORTED, 0, NULL},
    {"comment", 0, 1, SB_UNSUPPORTED, 0, NULL},
    {"open-mode", 0, 1, SB_UNSUPPORTED, 0, "output files are always appended to"},
    {"input", 'i', 1, SB_UNSUPPORTED, 0, NULL},
    {"mincpus", 0, 1, SB_UNSUPPORTED, 0, NULL},
    {"tmp", 0, 1, SB_UNSUPPORTED, 0, NULL},
    {"cpus-per-gpu", 0, 1, SB_UNSUPPORTED, 0, "use --cpus-per-task"},
    {"mem-per-gpu", 0, 1, SB_UNSUPPORTED, 0, "use --mem-per-cpu or --mem"},
    {"gpu-bind", 0, 1, SB_UNSUPPORTED, 0, NULL},
    {"gpu-freq", 0, 1, SB_UNSUPPORTED, 0, NULL},
    {"ntasks-per-gpu", 0, 1, SB_UNSUPPORTED, 0, NULL},
    {"ntasks-per-socket", 0, 1, SB_UNSUPPORTED, 0, NULL},
    {"ntasks-per-core", 0, 1, SB_UNSUPPORTED, 0, NULL},
    {"sockets-per-node", 0, 1, SB_UNSUPPORTED, 0, NULL},
    {"cores-per-socket", 0, 1, SB_UNSUPPORTED, 0, NULL},
    {"threads-per-core", 0, 1, SB_UNSUPPORTED, 0, NULL},
    {"hint", 0, 1, SB_UNSUPPORTED, 0, NULL},
    {"distribution", 'm', 1, SB_UNSUPPORTED, 0, NULL},
    {"nodelist", 'w', 1, SB_UNSUPPORTED, 0, NULL},
    {"exclude", 'x', 1, SB_UNSUPPORTED, 0, NULL},
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

static int sb_error(const char *where, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int sb_error(const char *where, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "sluice: %s: ", where);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return CLI_EUSAGE;
}

/* An option Sluice does not support: an error, or a warning when the user
 * asked for those. 0 to go on. */
static int unsupported(cli_sbatch_t *sb, const char *where, const char *what, const char *why) {
    if (sb->ignore_unsupported) {
        fprintf(stderr, "sluice: warning: %s: %s is not supported%s%s; ignored\n", where, what,
                why ? ": " : "", why ? why : "");
        sb->warnings++;
        return 0;
    }
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
                int rc = unsupported(sb, where, shown, "not an sbatch option Sluice knows");
                if (rc)
                    return rc;
                /* Whether it takes a value is unknown: in a directive, a
                 * next word that is not an option is taken for its value
                 * (a directive holds options only). */
                if (!cli && !eq && i + 1 < argc && argv[i + 1][0] != '-')
                    i++;
                continue;
            }
            if (eq) {
                if (o->arg == 0)
                    return sb_error(where, "%s takes no value", shown);
                val = eq + 1;
            }
        } else {
            for (const sb_opt_t *p = opts; p->lng && !o; p++)
                if (p->shrt == a[1])
                    o = p;
            snprintf(shown, sizeof shown, "-%c", a[1]);
            if (o == NULL) {
                int rc = unsupported(sb, where, shown, "not an sbatch option Sluice knows");
                if (rc)
                    return rc;
                continue;
            }
            if (o->shrt)
                snprintf(shown, sizeof shown, "-%c/--%s", o->shrt, o->lng);
            if (a[2] != '\0') {
                if (o->arg == 0)
                    return sb_error(where, "%s takes no value", shown);
                val = a + 2;
            }
        }
        if (o->arg == 1 && val == NULL) {
            if (i + 1 >= argc)
                return sb_error(where, "%s needs a value", shown);
            val = argv[++i];
        }
        if (!cli && o->where == WHERE_CLI)
            return sb_error(where, "%s is a flag of the command line, not a directive", shown);
        if (o->id == SB_UNSUPPORTED) {
            int rc = unsupported(sb, where, shown, o->why);
            if (rc)
                return rc;
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

/* Splits a directive's text into words as sbatch does. Returns the count,
 * the words in a buffer of the caller's; -1 for more than max words. */
static int split_words(const char *s, char *buf, size_t buflen, char **words, int max) {
    int n = 0;
    size_t b = 0;
    while (*s && n < max) {
        while (*s && isspace((unsigned char)*s))
            s++;
        if (*s == '\0' || *s == '#')
            break;
        char q = 0;
        words[n++] = buf + b;
        while (*s && (q || !isspace((unsigned char)*s)) && b + 1 < buflen) {
            if (*s == '\\' && s[1]) {
                buf[b++] = s[1];
                s += 2;
            } else if (q && *s == q) {
                q = 0;
                s++;
            } else if (!q && (*s == '"' || *s == '\'')) {
                q = *s++;
            } else if (!q && *s == '#') {
                break;
            } else {
                buf[b++] = *s++;
            }
        }
        buf[b++] = '\0';
        if (*s == '#' && !q)
            break;
    }
    while (*s && isspace((unsigned char)*s))
        s++;
    return *s && *s != '#' ? -1 : n;
}

int cli_sbatch_script(cli_sbatch_t *sb, const char *path, const char *text) {
    int lineno = 0;
    if (strstr(text, "\r\n") != NULL) /* sbatch refuses these too */
        return sb_error(path, "the script has DOS line breaks (\\r\\n) instead of UNIX ones "
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
            if (len >= sizeof line)
                return sb_error(where, "the directive is longer than %zu bytes", sizeof line - 1);
            int n = split_words(line + 7, buf, sizeof buf, words, 64), rest;
            if (n < 0)
                return sb_error(where, "the directive has more than 64 words");
            int rc = parse_opts(sb, n, words, false, where, &rest);
            if (rc)
                return rc;
            if (rest < n)
                return sb_error(where, "\"%s\" is not an option (a directive holds options only)",
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

static int bad(const cli_sbatch_t *sb, int id, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int bad(const cli_sbatch_t *sb, int id, const char *fmt, ...) {
    char name[64], msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return sb_error(sb->where[id], "%s: %s", opt_name(id, name, sizeof name), msg);
}

/* A whole number 1..max, or -1 after a message. */
static long long count(const cli_sbatch_t *sb, int id, long long max) {
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

/*
 * Slurm's time formats: "M", "M:S", "H:M:S", "D-H", "D-H:M", "D-H:M:S";
 * "UNLIMITED", "INFINITE" and 0 mean none. Seconds, rounded up to whole
 * minutes as Slurm keeps them. 0 for none; -1 for bad syntax.
 */
long long cli_slurm_time(const char *s) {
    if (strcasecmp(s, "UNLIMITED") == 0 || strcasecmp(s, "INFINITE") == 0)
        return 0;
    long long f[4] = {0};
    int nf = 0;
    long long days = -1;
    const char *p = s;
    const char *dash = strchr(s, '-');
    if (dash) {
        char *end;
        days = strtoll(s, &end, 10);
        if (end != dash || dash == s)
            return -1;
        p = dash + 1;
    }
    while (*p) {
        if (!isdigit((unsigned char)*p) || nf == 3)
            return -1;
        char *end;
        errno = 0;
        f[nf++] = strtoll(p, &end, 10);
        if (errno || f[nf - 1] > 100000000)
            return -1;
        p = end;
        if (*p == ':') {
            p++;
            if (*p == '\0')
                return -1;
        } else if (*p) {
            return -1;
        }
    }
    if (nf == 0)
        return -1;
    long long sec;
    if (days >= 0) { /* D-H, D-H:M, D-H:M:S */
        long long h = f[0], m = nf > 1 ? f[1] : 0, sc = nf > 2 ? f[2] : 0;
        sec = ((days * 24 + h) * 60 + m) * 60 + sc;
    } else if (nf == 1) { /* M */
        sec = f[0] * 60;
    } else if (nf == 2) { /* M:S */
        sec = f[0] * 60 + f[1];
    } else { /* H:M:S */
        sec = (f[0] * 60 + f[1]) * 60 + f[2];
    }
    return (sec + 59) / 60 * 60;
}

/* Slurm's memory size: a number with an optional K, M, G or T (binary
 * units; M when none). Bytes, or -1. */
static long long slurm_mem(const char *s) {
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || v < 0)
        return -1;
    long long mul = 1LL << 20;
    switch (toupper((unsigned char)*end)) {
    case '\0': break;
    case 'K': mul = 1LL << 10; end++; break;
    case 'M': mul = 1LL << 20; end++; break;
    case 'G': mul = 1LL << 30; end++; break;
    case 'T': mul = 1LL << 40; end++; break;
    default: return -1;
    }
    if (*end == 'B' || *end == 'b')
        end++;
    if (*end || v > LLONG_MAX / mul)
        return -1;
    return v * mul;
}

/* Bytes as a Sluice memory quantity in the largest exact binary unit. */
static json_t *mem_json(long long b) {
    static const char *units[] = {"Ti", "Gi", "Mi", "Ki"};
    for (int i = 0; i < 4; i++) {
        long long u = 1LL << (10 * (4 - i));
        if (b >= u && b % u == 0) {
            char s[48];
            snprintf(s, sizeof s, "%lld%s", b / u, units[i]);
            return json_string(s);
        }
    }
    char s[32];
    snprintf(s, sizeof s, "%lld", b);
    return json_string(s);
}

/* A GPU request "[type:]N" (--gpus, --gpus-per-task, --gpus-per-node), or
 * from --gres "gpu[:type]:N" (gres true). Sets *n and *model (a copy into
 * model, "" for any). 0, or CLI_EUSAGE after a message. */
static int gpu_req(const cli_sbatch_t *sb, int id, bool gres, long long *n, char *model,
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
static int check_pattern(const cli_sbatch_t *sb, int id) {
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
static int set_field(const cli_sbatch_t *sb, int id, json_t *spec, const char *name,
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
static int export_env(const cli_sbatch_t *sb, json_t *env) {
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

json_t *cli_sbatch_spec(cli_sbatch_t *sb, const char *path, const char *text, char **args,
                        int nargs) {
    json_t *spec = json_object();
    char **v = sb->val, model[128] = "";
    int rc = 0;
    long long ntasks = 1, nodes = 0, tpn = 0, per_task_gpus = 0;

    if (strlen(text) > SL_JOBSPEC_SCRIPT_MAX) {
        fprintf(stderr, "sluice: %s: the script is %zu bytes; a batch script may have at most "
                "%d KiB\n", path, strlen(text), SL_JOBSPEC_SCRIPT_MAX / 1024);
        goto fail;
    }
    if (v[SB_JOB_NAME] && (rc = set_field(sb, SB_JOB_NAME, spec, "name", v[SB_JOB_NAME])))
        goto fail;
    /* Tasks: -n, else -N x --ntasks-per-node, else one per node. */
    if (v[SB_NODES]) {
        if (strchr(v[SB_NODES], '-') || strchr(v[SB_NODES], ',')) {
            rc = bad(sb, SB_NODES, "\"%s\": Sluice takes one node count, not a range",
                     v[SB_NODES]);
            goto fail;
        }
        if ((nodes = count(sb, SB_NODES, SL_MAX_TASKS)) < 0)
            goto fail;
    }
    if (v[SB_NTASKS_PER_NODE] && (tpn = count(sb, SB_NTASKS_PER_NODE, SL_MAX_TASKS)) < 0)
        goto fail;
    if (v[SB_NTASKS]) {
        if ((ntasks = count(sb, SB_NTASKS, SL_MAX_TASKS)) < 0)
            goto fail;
    } else if (tpn) {
        ntasks = tpn * (nodes ? nodes : 1);
    } else if (nodes) {
        ntasks = nodes;
    }
    if (ntasks > SL_MAX_TASKS) {
        rc = bad(sb, v[SB_NODES] ? SB_NODES : SB_NTASKS_PER_NODE,
                 "%lld tasks in all; a job may have at most %d", ntasks, SL_MAX_TASKS);
        goto fail;
    }
    /* A node's tasks, to divide what Slurm asks per node. */
    if (tpn == 0)
        tpn = nodes ? (ntasks + nodes - 1) / nodes : ntasks;
    json_object_set_new(spec, "tasks", json_integer(ntasks));

    long long cpus = 1;
    if (v[SB_CPUS_PER_TASK]) {
        if ((cpus = count(sb, SB_CPUS_PER_TASK, 1000000)) < 0)
            goto fail;
        json_object_set_new(spec, "cpus", json_sprintf("%lld", cpus));
    }
    if (v[SB_MEM] && v[SB_MEM_PER_CPU]) {
        rc = bad(sb, SB_MEM_PER_CPU, "give --mem or --mem-per-cpu, not both");
        goto fail;
    }
    if (v[SB_MEM]) {
        long long b = slurm_mem(v[SB_MEM]);
        if (b < 0) {
            rc = bad(sb, SB_MEM, "\"%s\" is not a size (a number with K, M, G or T; M when none)",
                     v[SB_MEM]);
            goto fail;
        }
        if (b == 0) {
            rc = unsupported(sb, sb->where[SB_MEM], "--mem=0 (all of a node's memory)",
                             "ask for an amount");
            if (rc)
                goto fail;
        } else {
            json_object_set_new(spec, "memory", mem_json(b / tpn));
        }
    }
    if (v[SB_MEM_PER_CPU]) {
        long long b = slurm_mem(v[SB_MEM_PER_CPU]);
        if (b <= 0) {
            rc = bad(sb, SB_MEM_PER_CPU, "\"%s\" is not a size (a number with K, M, G or T; M "
                     "when none)", v[SB_MEM_PER_CPU]);
            goto fail;
        }
        json_object_set_new(spec, "memory", mem_json(b * cpus));
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
        rc = bad(sb, gid, "give one of --gpus-per-task, --gres, --gpus-per-node and --gpus "
                 "(also given: %s)", opt_name(gid == SB_GPUS_PER_TASK && v[SB_GRES] ? SB_GRES
                                              : SB_GPUS, a, sizeof a));
        goto fail;
    }
    if (gid >= 0) {
        long long n = 0;
        if ((rc = gpu_req(sb, gid, gid == SB_GRES, &n, model, sizeof model)))
            goto fail;
        long long per = gid == SB_GPUS ? ntasks : gid == SB_GPUS_PER_TASK ? 1 : tpn;
        if (n % per != 0) {
            rc = bad(sb, gid, "%lld GPUs cannot be divided evenly among %lld tasks%s (Sluice asks "
                     "for GPUs per task)", n, per, gid == SB_GPUS ? "" : " of a node");
            goto fail;
        }
        per_task_gpus = n / per;
        if (per_task_gpus > 0) {
            char t[32];
            snprintf(t, sizeof t, "%lld", per_task_gpus);
            if ((rc = set_field(sb, gid, spec, "gpus", t)))
                goto fail;
            if (model[0])
                json_object_set_new(spec, "gpu_models", json_pack("[s]", model));
        }
    }
    if (v[SB_TIME]) {
        long long s = cli_slurm_time(v[SB_TIME]);
        if (s < 0) {
            rc = bad(sb, SB_TIME, "\"%s\" is not a time (minutes, MM:SS, HH:MM:SS, D-HH, "
                     "D-HH:MM, D-HH:MM:SS or UNLIMITED)", v[SB_TIME]);
            goto fail;
        }
        char t[32];
        snprintf(t, sizeof t, "%lld", s);
        if ((rc = set_field(sb, SB_TIME, spec, "time_limit", t)))
            goto fail;
    }
    if (v[SB_PARTITION]) {
        if (strchr(v[SB_PARTITION], ',')) {
            rc = bad(sb, SB_PARTITION, "\"%s\": a Sluice job runs in one pool", v[SB_PARTITION]);
            goto fail;
        }
        if ((rc = set_field(sb, SB_PARTITION, spec, "pool", v[SB_PARTITION])))
            goto fail;
    }
    if (v[SB_QOS]) {
        if (sl_jobspec_find("priority_class") == NULL) {
            rc = unsupported(sb, sb->where[SB_QOS], "-q/--qos",
                             "priority classes are not configured in this Sluice");
            if (rc)
                goto fail;
        } else if ((rc = set_field(sb, SB_QOS, spec, "priority_class", v[SB_QOS]))) {
            goto fail;
        }
    }
    /* Node features are node labels: a bare name is a label key the node
     * must have, & and | as Slurm joins them (docs/placement.md); Slurm's
     * counts and brackets are refused by the constraint's parser. */
    if (v[SB_CONSTRAINT] && (rc = set_field(sb, SB_CONSTRAINT, spec, "constraint", v[SB_CONSTRAINT])))
        goto fail;
    if (v[SB_ACCOUNT]) {
        /* Slurm keeps account names in lower case, and so matches them. */
        for (char *p = v[SB_ACCOUNT]; *p; p++)
            *p = (char)tolower((unsigned char)*p);
        if ((rc = set_field(sb, SB_ACCOUNT, spec, "tenant", v[SB_ACCOUNT])))
            goto fail;
    }
    if (v[SB_OUTPUT]) {
        if ((rc = check_pattern(sb, SB_OUTPUT)))
            goto fail;
        json_object_set_new(spec, "output", json_string(v[SB_OUTPUT]));
    }
    if (v[SB_ERROR]) {
        if ((rc = check_pattern(sb, SB_ERROR)))
            goto fail;
        json_object_set_new(spec, "error", json_string(v[SB_ERROR]));
    }
    /* Arrays and dependencies keep Slurm's text; the controller reads it. */
    if (v[SB_ARRAY]) {
        if (v[SB_ARRAY][0] == '\0') {
            rc = bad(sb, SB_ARRAY, "needs indices such as 0-99%%8 or 1,3,5-9:2");
            goto fail;
        }
        json_object_set_new(spec, "array", json_string(v[SB_ARRAY]));
    }
    if (v[SB_DEPENDENCY]) {
        if (v[SB_DEPENDENCY][0] == '\0') {
            rc = bad(sb, SB_DEPENDENCY, "needs a condition such as afterok:123 or singleton");
            goto fail;
        }
        json_object_set_new(spec, "dependency", json_string(v[SB_DEPENDENCY]));
    }
    if (v[SB_EXPORT]) {
        json_t *env = json_object();
        json_object_set_new(spec, "env", env);
        if ((rc = export_env(sb, env)))
            goto fail;
        if (json_object_size(env) == 0)
            json_object_del(spec, "env");
    }
    if (v[SB_CHDIR]) {
        char *d = abs_path(v[SB_CHDIR]);
        json_object_set_new(spec, "chdir", json_string(d));
        free(d);
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
