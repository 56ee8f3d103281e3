/*
 * hroute.h - the path patterns of the API's route table (http.c).
 */
#ifndef SLUICE_CTL_HROUTE_H
#define SLUICE_CTL_HROUTE_H

#include <stdbool.h>
#include <stdint.h>

/* Whether path matches pattern, whose "{id}" takes a positive decimal job
 * id, or A_I (element I of array A: *aidx = I, else -1), into *id, and
 * whose "{name}" takes one path segment without '%' or '?' (*name points
 * at it in path). A trailing slash is tolerated. Pure; can't fail. */
bool ctl_route_match(const char *pattern, const char *path, uint64_t *id, int64_t *aidx,
                     const char **name);

#endif
