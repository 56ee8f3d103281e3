/*
 * pyxis.h - pyxis' container options of sbatch (NVIDIA's Slurm plugin:
 * --container-image, --container-mounts, --container-workdir,
 * --container-name) as the job spec's image, mounts and workdir
 * (pyxis.c; docs/containers.md, docs/slurm.md).
 */
#ifndef SLUICE_CLI_PYXIS_H
#define SLUICE_CLI_PYXIS_H

#include <stddef.h>

#include <jansson.h>

/* The options, in the order cli_pyxis_apply's *bad counts them. */
enum { CLI_PYXIS_IMAGE, CLI_PYXIS_MOUNTS, CLI_PYXIS_WORKDIR, CLI_PYXIS_NAME, CLI_PYXIS_N };

/*
 * Sets spec's fields from the options' values (each NULL when not given):
 * the image (enroot's REGISTRY#IMAGE written REGISTRY/IMAGE; a squashfs
 * file is refused), the mounts (comma-separated SRC[:DST[:FLAGS]], DST
 * SRC when absent, FLAGS ro or rw), the working directory; the name names
 * the job when spec has no name yet (Sluice keeps no container between
 * tasks, so it names nothing else). Returns 0, or -1 with err (errlen
 * bytes) and *bad the option at fault (CLI_PYXIS_*).
 */
int cli_pyxis_apply(json_t *spec, const char *const vals[CLI_PYXIS_N], int *bad, char *err,
                    size_t errlen);

#endif
