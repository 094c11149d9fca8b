/* stats.h - the order statistics the reports and benchmarks print.
 * Contract: stats_median sorts v[0..n-1] in place (ascending, so v[0] is then the minimum) and
 * returns its median (the mean of the middle two for even n); n must be >= 1. No allocation. */
#ifndef STEPSIM_STATS_H
#define STEPSIM_STATS_H

#include <stddef.h>

double stats_median(double *v, size_t n);

#endif
