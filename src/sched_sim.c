#include "sc_internal.h"

bool
sc__curthread_kstack(struct sc_range *r)
{
	(void)r;
	return (false);
}
