/*
 * ui.h - the web console's files (ui/ in the source tree), compiled into
 * sluiced by cmake/embed_ui.cmake, and the security headers they are
 * served with (docs/console.md).
 */
#ifndef SLUICE_CTL_UI_H
#define SLUICE_CTL_UI_H

#include <stddef.h>

typedef struct ctl_ui_file {
    const char *path;  /* "/ui/app.js" */
    const char *ctype; /* its Content-Type */
    const unsigned char *data;
    size_t len;
} ctl_ui_file_t;

/* The policy every console reply carries: scripts and styles only from
 * sluiced itself (no inline script, no eval), requests only to it, no
 * framing, no plugins. */
#define CTL_UI_CSP                                                                              \
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "                 \
    "connect-src 'self'; form-action 'none'; frame-ancestors 'none'; base-uri 'none'"

/* The file served at path: "/ui" and "/ui/" are index.html. NULL when
 * there is none. The file is static: never freed. O(files). */
const ctl_ui_file_t *ctl_ui_find(const char *path);

#endif
