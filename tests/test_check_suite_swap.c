/*
 * tests/test_swap.c as it is, its main() renamed, for test_check_suite.c
 * to run as a body of sc_check().
 */
int	test_swap_main(void);
#define main	test_swap_main
#include "test_swap.c"
