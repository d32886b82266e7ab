#include <stddef.h>
struct buf { size_t len; unsigned char *data; };
struct buf *buf_new(size_t len);
void buf_fill(struct buf *b, const unsigned char *src);
int buf_sum(const struct buf *b);
void buf_free(struct buf *b);
int table_get(int i);
int recurse(int n);
int scale(int a, int b);
char *leak_name(const char *s);
void buf_release(struct buf *b);
