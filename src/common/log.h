/*
 * log.h - logging for Sluice's programs (never the core, which returns
 * reasons and counters instead).
 *
 *   sl_log(SL_LOG_INFO, "sched", "job=%llu started nodes=%d", id, n);
 *
 * Lines go to stderr as "2026-11-29T15:00:00.123Z info sched: job=1 ...".
 * The level is set once at start-up (sl_log_set_level, or SLUICE_LOG=debug);
 * per-subsystem debug flags come from SLUICE_LOG_FLAGS=sched,http (Slurm's
 * DebugFlags).
 */
#ifndef SLUICE_COMMON_LOG_H
#define SLUICE_COMMON_LOG_H

typedef enum sl_log_level {
    SL_LOG_ERROR = 0,
    SL_LOG_WARN = 1,
    SL_LOG_INFO = 2,
    SL_LOG_DEBUG = 3
} sl_log_level_t;

void sl_log_set_level(sl_log_level_t level);
/* Parses "error", "warn", "info", "debug"; returns 0 or -1. */
int sl_log_parse_level(const char *s, sl_log_level_t *out);
/* Reads SLUICE_LOG and SLUICE_LOG_FLAGS from the environment. */
void sl_log_init_from_env(void);
/* True if debug output is on for subsystem (level debug, or its flag set). */
int sl_log_enabled(sl_log_level_t level, const char *subsys);

void sl_log(sl_log_level_t level, const char *subsys, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
