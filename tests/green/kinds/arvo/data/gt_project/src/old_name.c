#include <stdlib.h>

int legacy_alloc(int n)
{
  int *p = malloc(n);
  p[n] = 0;
  free(p);
  return 0;
}
