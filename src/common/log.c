/* log.c - timestamped key=value log lines on stderr. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

#include "log.h"

static sl_log_level_t cur_level = SL_LOG_INFO;
static char flags[256];

static const char *names[] = {"error", "warn", "info", "debug"};

void sl_log_set_level(sl_log_level_t level) {
    cur_level = level;
}

int sl_log_parse_level(const char *s, sl_log_level_t *out) {
    for (int i = 0; i < 4; i++) {
        if (strcmp(s, names[i]) == 0) {
            *out = (sl_log_level_t)i;
            return 0;
        }
    }
    return -1;
}

void sl_log_init_from_env(void) {
    const char *lv = getenv("SLUICE_LOG");
    sl_log_level_t l;
    if (lv && sl_log_parse_level(lv, &l) == 0) cur_level = l;
    const char *f = getenv("SLUICE_LOG_FLAGS");
    if (f) snprintf(flags, sizeof flags, ",%s,", f);
}

int sl_log_enabled(sl_log_level_t level, const char *subsys) {
    if (level <= cur_level) return 1;
    if (level == SL_LOG_DEBUG && subsys && flags[0]) {
        char key[64];
        snprintf(key, sizeof key, ",%s,", subsys);
        return strstr(flags, key) != NULL;
    }
    return 0;
}

void sl_log(sl_log_level_t level, const char *subsys, const char *fmt, ...) {
    if (!sl_log_enabled(level, subsys)) return;
    struct timeval tv;
    gettimeofday(&tv, NULL);
    struct tm tm;
    gmtime_r(&tv.tv_sec, &tm);
    char ts[32];
    strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%S", &tm);
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "%s.%03dZ %s %s: %s\n", ts, (int)(tv.tv_usec / 1000), names[level],
            subsys ? subsys : "-", msg);
}
