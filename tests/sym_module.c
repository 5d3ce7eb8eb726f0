/*
 * A shared object that test_stack loads and unloads, to show that
 * sc_symbolize()'s cache forgets the names of an object that is gone.
 */
/* Exported: the project builds with hidden visibility. */
int	sc_test_module_fn(int x);

__attribute__((noinline, visibility("default"))) int
sc_test_module_fn(int x)
{
	return (x * 3 + 1);
}
