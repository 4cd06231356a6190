/* The repository's bundled files from any folder (see bundled.h). */
#include "base/bundled.h"

#include <glob.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#ifndef GPT2_SOURCE_DIR
#define GPT2_SOURCE_DIR "."
#endif

const char *bundled_source_dir(void) { return GPT2_SOURCE_DIR; }

/* path names at least one file or directory (a pattern: a match). */
static bool names_something(const char *path) {
    if (!strpbrk(path, "*?[")) return access(path, F_OK) == 0;
    glob_t g;
    const bool found = glob(path, 0, NULL, &g) == 0 && g.gl_pathc > 0;
    globfree(&g);
    return found;
}

bool bundled_resolve(const char *path, char *out, size_t len) {
    snprintf(out, len, "%s", path);
    if (!path[0] || path[0] == '/' || names_something(path)) return false;
    char there[4200];
    if (snprintf(there, sizeof there, "%s/%s", GPT2_SOURCE_DIR, path) >= (int)sizeof there ||
        !names_something(there))
        return false;
    snprintf(out, len, "%s", there);
    return true;
}
