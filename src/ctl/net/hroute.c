/*
 * hroute.c - the API's path patterns (hroute.h).
 */
#include <stdint.h>
#include <string.h>

#include "net/hroute.h"

/* Matches path against pattern; "{id}" takes a positive decimal id. */
/* {id} is a job id, or A_I: element I of array A (*aidx, else -1). */
bool ctl_route_match(const char *pattern, const char *path, uint64_t *id, int64_t *aidx,
                     const char **name) {
    *aidx = -1;
    while (*pattern && *path) {
        if (strncmp(pattern, "{name}", 6) == 0) {
            /* The rest of the path, one segment (the names a reservation may have). */
            *name = path;
            for (; *path && *path != '/'; path++)
                if (*path == '%' || *path == '?')
                    return false;
            pattern += 6;
            continue;
        }
        if (strncmp(pattern, "{id}", 4) == 0) {
            if (*path < '0' || *path > '9')
                return false;
            uint64_t v = 0;
            while (*path >= '0' && *path <= '9') {
                if (v > (UINT64_MAX - 9) / 10)
                    return false;
                v = v * 10 + (uint64_t)(*path++ - '0');
            }
            if (v == 0)
                return false; /* ids start at 1: "0" and "00" name nothing */
            if (*path == '_' && path[1] >= '0' && path[1] <= '9') {
                int64_t x = 0;
                for (path++; *path >= '0' && *path <= '9' && x <= INT32_MAX; path++)
                    x = x * 10 + (*path - '0');
                if (x > INT32_MAX)
                    return false;
                *aidx = x;
            }
            *id = v;
            pattern += 4;
            continue;
        }
        if (*pattern++ != *path++)
            return false;
    }
    if (*path == '/' && path[1] == '\0')
        path++; /* a trailing slash is tolerated */
    return *pattern == '\0' && *path == '\0';
}
