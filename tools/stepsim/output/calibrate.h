/* calibrate.h - the report of `validate --calibrate`: one system's FLOP efficiency fitted to its
 * measured runs (model_calibrate_fit in model.h does the fitting), as text or as a JSON object. */
#ifndef STEPSIM_CALIBRATE_H
#define STEPSIM_CALIBRATE_H

#include <stdio.h>

#include "model.h"

/* The text block of one fit of the runs of system `system`; names[i] is run i's name. */
void calib_print_text(FILE *out, const char *system, const model_calibration_t *fit,
                      const char *const *names);
/* The JSON object of one fit (the caller frees it with cJSON_Delete), or NULL if out of memory. */
struct cJSON *calib_json(const char *system, const model_calibration_t *fit, const char *const *names);

#endif
