/* The repository's bundled files from any folder (see bundled.h). */
#include "base/bundled.h"

#include <glob.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#ifndef GPT2_SOURCE_DIR
#define GPT2_SOURCE_DIR "."
#endif

const char *bundled_path(const char *what, const char *path, char *buf, size_t len, FILE *note_to,
                         const char *prefix) {
    if (!path || !bundled_resolve(path, buf, len)) return path;
    if (note_to)
        fprintf(note_to, "%s%s %s names nothing from this folder: using the repository's %s\n",
                prefix, what, path, buf);
    return buf;
}

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
