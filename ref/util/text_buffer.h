/* text_buffer.h: a byte string that grows as it is appended to, always
 * NUL-terminated; shared by the pre-tokenizer and the chat renderer. */
#ifndef STEPWISE_TEXT_BUFFER_H
#define STEPWISE_TEXT_BUFFER_H

#include <stdbool.h>
#include <stddef.h>

typedef struct {
    char *s; /* [n + 1], owned (free it) */
    size_t n, cap;
    bool ok; /* false for good once memory ran out: later appends do nothing */
} TextBuffer;

#define TEXT_BUFFER_INIT ((TextBuffer){.ok = true})

/* Append s[0..n), doubling the room when it runs out. */
void text_buffer_add(TextBuffer *b, const char *s, size_t n);

#endif
