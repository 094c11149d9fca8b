/* ref_cases.h - turning rows of the reference CSVs (tests/data) into model jobs, for the tests and
 * the search checker. */
#ifndef STEPSIM_REF_CASES_H
#define STEPSIM_REF_CASES_H

#include "csv.h"
#include "model.h"

/* Fill *job from data row r of a point-cases or layer-cases table (--compat reference).
 * Return 0, or -1 if a preset or strategy is unknown. */
int ref_case_job(const csv_table_t *t, size_t r, model_job_t *job);
/* Numeric cell by column name; NaN if the column is missing or the cell is empty. */
double ref_num(const csv_table_t *t, size_t r, const char *column);
/* |a - b| <= rel * max(|a|, |b|), with both zero equal. */
int ref_close(double a, double b, double rel);

#endif
