/* parse.c - a tiny record parser (test data for the ground-truth builder). */
#include <stdlib.h>
#include <string.h>
#include "parse.h"

#define FT_LOCAL_DEF(x) x
#define PHP_FUNCTION(name) void zif_##name(void)

static int
read_u16(const unsigned char *p, size_t len)
{
  if (len < 2)
    return -1;
  return (p[0] << 8) | p[1];
}

char *
dup_field(const char *src, size_t n)
{
  char *out = malloc(n);
  memcpy(out, src, n);
  out[n] = '\0';
  return out;
}

int
old_style_sum(a, b)
  int a;
  int b;
{
  int total = a + b;
  return total;
}

FT_LOCAL_DEF( int )
tt_face_load_cmap( const unsigned char *table, size_t size )
{
  size_t count = table[0];
  size_t i;
  for (i = 0; i < count; i++) {
    if (table[1 + i] == 0)
      return -1;
  }
  return (int)size;
}

PHP_FUNCTION(strlen)
{
  int length = 0;
  length++;
}

static int
parse_header(struct record *rec, const unsigned char *buf, size_t len)
{
#ifdef STRICT_HEADERS
  if (len < 4 && rec->strict) {
#else
  if (len < 4) {
#endif
    return -1;
  }
  rec->version = read_u16(buf, len);
  rec->count = read_u16(buf + 2, len - 2);
  return 0;
}

static const char *const names[] = {
  "zero",
  "one",
};

const char *
record_name(int i)
{
  return names[i];
}
