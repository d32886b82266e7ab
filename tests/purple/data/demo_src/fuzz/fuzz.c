#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../lib/buf.h"
int stack_copy(const char *s, int n);

static int
run(int mode, const uint8_t *data, size_t size)
{
	struct buf *b;
	int *p = NULL;
	switch (mode) {
	case 0: /* heap-buffer-overflow */
		b = buf_new(size);
		buf_fill(b, data);
		return buf_sum(b);
	case 1: /* use-after-free */
		b = buf_new(size + 1);
		buf_free(b);
		return buf_sum(b);
	case 2: /* double free */
		b = buf_new(size + 1);
		buf_release(b);
		buf_release(b);
		return 0;
	case 3: return table_get((int)size);          /* global-buffer-overflow */
	case 4: return stack_copy((const char *)data, (int)size); /* stack-buffer-overflow */
	case 5: return *p;                             /* SEGV */
	case 6: return recurse(1);                     /* stack-overflow */
	case 7: return scale(0x7fffffff, (int)size);   /* UBSan signed overflow */
	case 8: leak_name((const char *)data); return 0; /* leak */
	}
	return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	return run(data[0] - '0', data + 1, size - 1);
}

int
main(int argc, char **argv)
{
	unsigned char in[64] = {0};
	snprintf((char *)in, sizeof in, "%s", argv[1]);
	return LLVMFuzzerTestOneInput(in, strlen((char *)in) + (argv[1][0] == '8'));
}
