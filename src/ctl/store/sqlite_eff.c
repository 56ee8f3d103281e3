/*
 * sqlite_eff.c - jobs' efficiency rows in SQLite (store.h, eff.c; the table
 * is created with the others, sqlite.c). Prepared at each call: a job's
 * row is written at most every CTL_EFF_WRITE_S and at its end, so the
 * statement cache is not worth a slot in st[].
 */
#include <math.h>
#include <stdbool.h>

#include "store/sqlite.h"

static int bind_opt_i64(sqlite3_stmt *st, int i, bool has, int64_t v) {
    return has ? sqlite3_bind_int64(st, i, v) : sqlite3_bind_null(st, i);
}

static int bind_opt_real(sqlite3_stmt *st, int i, double v) {
    return isnan(v) ? sqlite3_bind_null(st, i) : sqlite3_bind_double(st, i, v);
}

void ctl_store_eff_put(ctl_store_t *s, uint64_t job, const ctl_eff_t *e) {
    ctl_sqlite_write_begin(s, false);
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(s->db, "INSERT OR REPLACE INTO job_eff(job, gpu_util_mean, gpu_util_peak,"
                           " gpu_mem_peak, gpu_mem_total, cpu_seconds, mem_peak, samples)"
                           " VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)", -1, &st, NULL) != SQLITE_OK)
        ctl_sqlite_fatal(s, "job_eff put");
    int b = sqlite3_bind_int64(st, 1, (sqlite3_int64)job);
    b |= bind_opt_real(st, 2, e->gpu_util_mean);
    b |= bind_opt_real(st, 3, e->gpu_util_peak);
    b |= bind_opt_i64(st, 4, e->gpu_mem_peak >= 0, e->gpu_mem_peak);
    b |= bind_opt_i64(st, 5, e->gpu_mem_total >= 0, e->gpu_mem_total);
    b |= bind_opt_real(st, 6, e->cpu_seconds);
    b |= bind_opt_i64(st, 7, e->mem_peak >= 0, e->mem_peak);
    b |= sqlite3_bind_int64(st, 8, e->samples);
    ctl_sqlite_write_step(s, st, b, "job_eff put");
    sqlite3_finalize(st);
}

int ctl_store_eff_get(ctl_store_t *s, uint64_t job, ctl_eff_t *e) {
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(s->db, "SELECT gpu_util_mean, gpu_util_peak, gpu_mem_peak, gpu_mem_total,"
                           " cpu_seconds, mem_peak, samples FROM job_eff WHERE job = ?1", -1, &st,
                           NULL) != SQLITE_OK)
        return ctl_sqlite_read_fail(s, "job_eff get");
    sqlite3_bind_int64(st, 1, (sqlite3_int64)job);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        double *reals[] = {&e->gpu_util_mean, &e->gpu_util_peak, NULL, NULL, &e->cpu_seconds};
        int64_t *ints[] = {NULL, NULL, &e->gpu_mem_peak, &e->gpu_mem_total, NULL, &e->mem_peak};
        for (int i = 0; i < 6; i++) {
            bool null = sqlite3_column_type(st, i) == SQLITE_NULL;
            if (i < 5 && reals[i]) *reals[i] = null ? NAN : sqlite3_column_double(st, i);
            if (ints[i]) *ints[i] = null ? -1 : sqlite3_column_int64(st, i);
        }
        e->samples = sqlite3_column_int64(st, 6);
        e->no_nvml_node = -1;
    }
    sqlite3_finalize(st);
    if (rc == SQLITE_ROW) return 1;
    if (rc == SQLITE_DONE) return 0;
    return ctl_sqlite_read_fail(s, "job_eff get");
}
