#include <stdlib.h>
#include <string.h>
#include "buf.h"

struct buf *
buf_new(size_t len)
{
	struct buf *b = malloc(sizeof(*b));
	b->len = len;
	b->data = malloc(len - 1); /* BUG: one byte short */
	return b;
}

void
buf_fill(struct buf *b, const unsigned char *src)
{
	for (size_t i = 0; i < b->len; i++)
		b->data[i] = src[i];
}

int buf_sum(const struct buf *b) {
	int s = 0;
	for (size_t i = 0; i < b->len; i++)
		s += b->data[i];
	return s;
}

void
buf_free(struct buf *b)
{
	free(b->data);
	free(b);
}

void
buf_release(struct buf *b)
{
	free(b->data);
}
