/*
 * slurminstall.c - `sluice slurm-commands install DIR`: a symbolic link
 * for every Slurm command name Sluice answers to (sl_slurm_commands,
 * slurmfmt.h) in DIR, each to this binary, which answers by argv[0]
 * (slurmcmds.c, docs/slurm.md). A file in DIR that is not a link is left
 * as it is and reported; the command then exits 1.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "slurmfmt.h"

int cli_cmd_slurm_commands(cli_t *c) {
    if (c->npos != 2 || strcmp(c->pos[0], "install") != 0)
        return cli_usage_error(c, "give `install DIR`");
    const char *dir = c->pos[1];
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) {
        fprintf(stderr, "sluice slurm-commands: cannot find this binary: %s\n", strerror(errno));
        return CLI_ESERVER;
    }
    self[n] = '\0';
    if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
        fprintf(stderr, "sluice slurm-commands: %s: %s\n", dir, strerror(errno));
        return CLI_ESERVER;
    }
    int rc = CLI_OK;
    for (size_t i = 0; sl_slurm_commands[i]; i++) {
        char link[PATH_MAX + 64];
        struct stat st;
        snprintf(link, sizeof link, "%s/%s", dir, sl_slurm_commands[i]);
        if (lstat(link, &st) == 0) {
            if (!S_ISLNK(st.st_mode)) {
                fprintf(stderr, "sluice slurm-commands: %s exists and is not a link: left as it is\n",
                        link);
                rc = CLI_ESERVER;
                continue;
            }
            unlink(link);
        }
        if (symlink(self, link) != 0) {
            fprintf(stderr, "sluice slurm-commands: %s: %s\n", link, strerror(errno));
            rc = CLI_ESERVER;
            continue;
        }
        printf("%s -> %s\n", link, self);
    }
    return rc;
}
