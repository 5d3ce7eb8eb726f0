/*
 * Sampling: capture every thread of a machine again and again, and write
 * the stacks as "collapsed" lines, root first, that flame-graph tools read
 * (flamegraph.pl, speedscope, inferno): "comm;root;...;leaf count".
 */
#ifndef SC_SAMPLE_H
#define SC_SAMPLE_H

#include <stdio.h>

#include "stackcap.h"

/*
 * Take `rounds` samples of every thread of every proc of m (with
 * sc_proc_kstack(), so threads that are running are captured by IPI), and
 * write one line per distinct stack with the number of samples that had
 * it, most frequent first.  A swapped thread counts as "<swapped>", a
 * failed capture of a running one as "<running>".  Returns 0, ENOMEM or
 * EIO.  Context: a plain pthread.
 */
int	smp_collapsed(struct sc_machine *m, int rounds, FILE *out);

#endif /* !SC_SAMPLE_H */
