/*
 * fielderr.c - filling a refusal for the API's handlers (fielderr.h).
 */
#include <stdarg.h>
#include <stdio.h>

#include "views/fielderr.h"

int ctl_field_errf(ctl_field_err_t *fe, int status, const char *code, const char *field,
                   const char *fmt, ...) {
    fe->status = status;
    fe->code = code;
    snprintf(fe->field, sizeof fe->field, "%s", field ? field : "");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(fe->message, sizeof fe->message, fmt, ap);
    va_end(ap);
    return status;
}
