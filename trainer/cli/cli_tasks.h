/* cli_tasks.h: multi-task training for `trainer train --tasks` (cli_tasks.c). */
#ifndef TRN_CLI_TASKS_H
#define TRN_CLI_TASKS_H

#include "trn.h"

#define CLI_MAX_TASKS 16

typedef struct cli_tasks {
    int n;                              /* tasks, the first the task of --data */
    int group;                          /* outputs per task: the largest class count */
    char name[CLI_MAX_TASKS][64];
    char path[CLI_MAX_TASKS][4200];
    trn_dataset *ds[CLI_MAX_TASKS];
    float w[CLI_MAX_TASKS];             /* loss weight per task (default 1) */
} cli_tasks;

/* Reads the tasks file ("task data-file" lines, paths relative to it; the
 * first must be `data`, whose data set the caller has opened as `first`:
 * t borrows it, cli_tasks_free leaves it open), opens every other task's
 * data set and parses `weights` ("w1,w2,...", one per task; NULL: all 1).
 * -1 with err on failure. */
int cli_tasks_open(const char *path, const char *data, trn_dataset *first, const char *weights, cli_tasks *t,
                   trn_err *err);
void cli_tasks_free(cli_tasks *t);
/* The training cfg: a clone of cfg (which must end in [connected]
 * output=classes, [softmax] without groups) with that layer widened to
 * t->n * t->group outputs and softmax groups=t->n. */
trn_cfg *cli_tasks_cfg(const trn_cfg *cfg, const cli_tasks *t, int classes, trn_err *err);
/* Copies the multi-task network's parameters into the plain network of the
 * first task (the first rows of the widened layer) and its `seen`. */
int cli_tasks_slice(const trn_net *multi, trn_net *plain, trn_err *err);
/* The inverse, for a multi-task fine-tune of a plain model: copies the
 * plain network's parameters into the multi-task one (the first task's
 * rows of the widened layer; the other groups' rows and biases 0)
 * and its `seen`. */
int cli_tasks_widen(const trn_net *plain, trn_net *multi, trn_err *err);

#endif
