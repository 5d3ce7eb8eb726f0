/*
 * The library's version (FreeBSD: sys/conf/newvers.sh and the version
 * string it writes into vers.c).  STACKCAP_VERSION_* in stackcap.h is the
 * one place it is set; CMake reads it from there.
 */
#include "sc_internal.h"

#define SC_STR1(x)	#x
#define SC_STR(x)	SC_STR1(x)

unsigned int
sc_version(void)
{
	return (STACKCAP_VERSION_HEX);
}

const char *
sc_version_string(void)
{
	return (SC_STR(STACKCAP_VERSION_MAJOR) "."
	    SC_STR(STACKCAP_VERSION_MINOR) "." SC_STR(STACKCAP_VERSION_PATCH));
}
