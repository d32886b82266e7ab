#include <stdlib.h>
#include <string.h>
#include "buf.h"

static int table[4] = {1, 2, 3, 4};

int
table_get(int i)
{
	return table[i];
}

int
recurse(int n)
{
	char pad[256];
	memset(pad, n, sizeof(pad));
	return recurse(n + 1) + pad[n % 256];
}

int
scale(int a, int b)
{
	return a * b;
}

char *
leak_name(const char *s)
{
	char *copy = malloc(strlen(s) + 1);
	strcpy(copy, s);
	return copy;
}

int
stack_copy(const char *s, int n)
{
	char local[8];
	memcpy(local, s, n);
	return local[0];
}
