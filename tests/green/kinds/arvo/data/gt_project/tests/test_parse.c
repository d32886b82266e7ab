#include "../include/parse.h"

int main(void)
{
  struct record r = {0};
  return record_valid(&r);
}
