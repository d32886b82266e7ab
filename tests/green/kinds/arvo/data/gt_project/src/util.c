#include <string.h>

int util_copy(char *dst, const char *src, size_t n)
{
  memcpy(dst, src, n);
  return 0;
}
