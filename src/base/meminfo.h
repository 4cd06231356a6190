/* The node's available RAM, as the kernel reports it (MemAvailable): what
 * the pre-flight and the checkpoint snapshot buffers are sized against. */
#ifndef GPT2_BASE_MEMINFO_H
#define GPT2_BASE_MEMINFO_H

/* MemAvailable of /proc/meminfo in bytes; -1 when unknown. When the
 * environment variable test_env (may be NULL) is set, its value in MiB
 * stands in for it (tests: a small machine without filling this one). */
double meminfo_available_bytes(const char *test_env);
#endif
