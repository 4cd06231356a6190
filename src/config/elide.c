/* Shortened text for messages (see elide.h). */
#include "config/elide.h"

#include <stdio.h>
#include <string.h>

#define ELIDE_HEAD 80
#define ELIDE_TAIL 32

void elide(const char *s, char *buf, size_t len) {
    const size_t n = strlen(s);
    if (n <= ELIDE_KEEP) {
        snprintf(buf, len, "%s", s);
        return;
    }
    snprintf(buf, len, "%.*s...(%zu more characters)...%s", ELIDE_HEAD, s,
             n - ELIDE_HEAD - ELIDE_TAIL, s + n - ELIDE_TAIL);
}
