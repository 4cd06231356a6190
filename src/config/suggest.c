/* Typo suggestions by edit distance (see suggest.h). */
#include "config/suggest.h"

#include <ctype.h>
#include <limits.h>
#include <stdbool.h>
#include <string.h>
#include <strings.h>

static bool same_letter(char a, char b) {
    return tolower((unsigned char)a) == tolower((unsigned char)b);
}

/* Optimal-string-alignment distance, case-insensitive: a transposition
 * ("n_haed") counts as one edit like a typo does. */
static int edit_distance(const char *a, const char *b) {
    size_t n = strlen(a), m = strlen(b);
    if (n > 63 || m > 63) return INT_MAX;
    int d[64][64];
    for (size_t i = 0; i <= n; i++) d[i][0] = (int)i;
    for (size_t j = 0; j <= m; j++) d[0][j] = (int)j;
    for (size_t i = 1; i <= n; i++) {
        for (size_t j = 1; j <= m; j++) {
            int best = d[i - 1][j - 1] + !same_letter(a[i - 1], b[j - 1]);
            if (d[i - 1][j] + 1 < best) best = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < best) best = d[i][j - 1] + 1;
            bool swapped = i > 1 && j > 1 && same_letter(a[i - 1], b[j - 2]) &&
                           same_letter(a[i - 2], b[j - 1]);
            if (swapped && d[i - 2][j - 2] + 1 < best) best = d[i - 2][j - 2] + 1;
            d[i][j] = best;
        }
    }
    return d[n][m];
}

/* The allowed distance grows with the name: a third of its letters, at
 * least 2, so that short names do not match everything. */
const char *suggest_name(const char *typo, const char *const *names, size_t n_names) {
    size_t len = strlen(typo);
    int limit = len / 3 > 2 ? (int)(len / 3) : 2;
    const char *best = NULL;
    int best_distance = INT_MAX;
    for (size_t i = 0; i < n_names; i++) {
        int dist = edit_distance(typo, names[i]);
        if (dist < best_distance) best_distance = dist, best = names[i];
    }
    if (best_distance <= limit) return best;
    for (size_t i = 0; len >= 4 && i < n_names; i++)
        if (strncasecmp(typo, names[i], len) == 0) return names[i];
    /* A name with a word added: "lr_rate" -> lr, the longest such name. */
    best = NULL;
    for (size_t i = 0; i < n_names; i++) {
        size_t n = strlen(names[i]);
        if (n < len && typo[n] == '_' && strncasecmp(typo, names[i], n) == 0 &&
            (!best || n > strlen(best)))
            best = names[i];
    }
    return best;
}
