/*
 * fielderr.h - filling a refusal (domain/spec.h's ctl_field_err_t) for the
 * API's request handlers: one maker, so that every route's 4xx has the
 * same status, code, field and message shape.
 */
#ifndef SLUICE_CTL_FIELDERR_H
#define SLUICE_CTL_FIELDERR_H

#include "domain/spec.h"

/* Sets fe's status and code (a static string, kept by pointer), its field
 * (NULL: none; cut to the field's size) and its message, formatted from
 * fmt exactly as given (the caller names the field in it) and cut to the
 * message's size. Returns status, so that a handler can
 * `return ctl_field_errf(fe, 400, ...)`. Pure. */
int ctl_field_errf(ctl_field_err_t *fe, int status, const char *code, const char *field,
                   const char *fmt, ...) __attribute__((format(printf, 5, 6)));

#endif
