int obsolete_one(void)
{
  return 1;
}

int obsolete_two(void)
{
  return 2;
}
