#include <stdint.h>
#include <stddef.h>
#include "../include/parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  char *f = dup_field((const char *)data, size);
  (void)f;
  return 0;
}
