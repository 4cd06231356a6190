/* The node's available RAM (see meminfo.h). */
#include "base/meminfo.h"

#include <stdio.h>
#include <stdlib.h>

double meminfo_available_bytes(const char *test_env) {
    const char *fake = test_env ? getenv(test_env) : NULL;
    if (fake && *fake) return atof(fake) * 1048576.0;
    FILE *f = fopen("/proc/meminfo", "r");
    if (!f) return -1.0;
    char line[256];
    double kib = -1.0;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "MemAvailable: %lf kB", &kib) == 1) break;
    fclose(f);
    return kib < 0 ? -1.0 : kib * 1024.0;
}
