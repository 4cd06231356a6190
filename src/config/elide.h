/* Long text quoted in a message, shortened (elide.c): its start and its
 * end around the number of characters left out, so that a 600-character
 * value still leaves room for the reason that follows it. */
#ifndef GPT2_CONFIG_ELIDE_H
#define GPT2_CONFIG_ELIDE_H

#include <stddef.h>

/* Text up to this many characters is shown whole. */
#define ELIDE_KEEP 120

/* s, or for longer text "<first 80>...(N more characters)...<last 32>",
 * into buf (len bytes; the result always fits in ELIDE_KEEP + 40). */
void elide(const char *s, char *buf, size_t len);
#endif
