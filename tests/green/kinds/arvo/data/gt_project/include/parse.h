#ifndef PARSE_H
#define PARSE_H
#include <stddef.h>

struct record {
  int version;
  int count;
  int strict;
};

static inline int
record_valid(const struct record *r)
{
  return r->version > 0;
}

char *dup_field(const char *src, size_t n);
const char *record_name(int i);

#endif
