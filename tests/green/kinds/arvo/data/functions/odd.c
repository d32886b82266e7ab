/* Function shapes that trip up naive parsers (test data). */
#include <stddef.h>

#define MAGICK_EXPORT
#define PNGAPI
typedef struct _Image Image;
typedef void (*handler_t)(int);

static void noop(int sig) { (void)sig; }

MAGICK_EXPORT Image *ReadImage(const char *name, size_t len)
{
  (void)name;
  return len ? NULL : NULL;
}

static handler_t (pick_handler)(int kind)
{
  return kind ? noop : NULL;
}

static void (*legacy_handler(int kind))(int)
{
  return kind ? noop : NULL;
}

static int PNGAPI png_check(const unsigned char *p)
{
#if defined(STRICT)
  if (p[0] != 0x89) {
#else
  if (p[0] == 0) {
#endif
    return 1;
  }
  return 0;
}

static const struct {
  const char *name;
  int value;
} table[] = {
  { "a{", 1 },
  { "b}", 2 },
};

int __attribute__((noinline))
lookup(const char *name)
{
  /* braces in comments { and strings "}" do not count */
  size_t i;
  for (i = 0; i < sizeof table / sizeof table[0]; i++) {
    if (name[0] == table[i].name[0])
      return table[i].value;
  }
  return -1;
}
