#include <string.h>

int lib_util_len(const char *s)
{
  return (int)strlen(s);
}
