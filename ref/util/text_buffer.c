/* text_buffer.c: see text_buffer.h. */
#include "ref/util/text_buffer.h"

#include <stdlib.h>
#include <string.h>

void text_buffer_add(TextBuffer *b, const char *s, size_t n) {
    if (!b->ok) return;
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 64;
        while (b->n + n + 1 > cap) cap *= 2;
        char *grown = realloc(b->s, cap);
        if (grown == NULL) {
            b->ok = false;
            return;
        }
        b->s = grown, b->cap = cap;
    }
    memcpy(b->s + b->n, s, n);
    b->n += n;
    b->s[b->n] = '\0';
}
