/*
 * ui.c - the web console's files, compiled in (ui.h). The arrays come from
 * ui_files.inc, which cmake/embed_ui.cmake writes into the build directory
 * from the .html, .js and .css files of ui/, so that `make` builds the console with
 * sluiced and nothing is read or fetched at run time.
 */
#include <string.h>

#include "views/ui.h"

#include "ui_files.inc"

const ctl_ui_file_t *ctl_ui_find(const char *path) {
    if (strcmp(path, "/ui") == 0 || strcmp(path, "/ui/") == 0)
        path = "/ui/index.html";
    for (size_t i = 0; i < sizeof ui_files / sizeof ui_files[0]; i++)
        if (strcmp(ui_files[i].path, path) == 0)
            return &ui_files[i];
    return NULL;
}
