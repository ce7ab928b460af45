# mk/launch.mk: how the pipeline's heavy jobs run: here (LAUNCH=local) or
# through Slurm (LAUNCH=slurm).
#
# Every training, evaluation and derivation step is one command prefixed by
# $(call launch,NAME). Locally that is nothing: `make -j N` runs N jobs at
# once and each job takes THREADS/N threads (JOB_THREADS). With Slurm each
# job is `srun` of the same command on a node of the allocation or
# partition, with JOB_THREADS cores; make still tracks every output file, so
# `make -j 32 catalog LAUNCH=slurm` on a login node fans the variants out
# over the cluster and an interrupted build resumes where it stopped. The
# build folder must be on a file system every node sees.

LAUNCH     ?= local
SRUN       ?= srun
SLURM_ARGS ?=
JOB_THREADS ?=

OPTIONS += LAUNCH SLURM_ARGS JOB_THREADS
OPT_DOC_LAUNCH      := where pipeline jobs run: local (make -j N) or slurm (srun per job)
OPT_DOC_SLURM_ARGS  := extra srun arguments with LAUNCH=slurm, e.g. --partition=gpu --time=60
OPT_DOC_JOB_THREADS := threads per pipeline job (default: THREADS divided among make -j jobs)

ifeq ($(filter local slurm,$(LAUNCH)),)
$(error LAUNCH='$(LAUNCH)' is not valid: use LAUNCH=local or LAUNCH=slurm)
endif
ifneq ($(JOB_THREADS),)
ifneq ($(shell echo '$(JOB_THREADS)' | grep -Ex '[1-9][0-9]{0,3}'),$(JOB_THREADS))
$(error JOB_THREADS='$(JOB_THREADS)' is not valid: use a positive integer)
endif
endif

# Threads of one job, in a recipe: JOB_THREADS, else THREADS shared among the
# jobs of `make -jN` (make tells recipes N through MAKEFLAGS); a plain -j
# (no limit) gives each job one thread.
job_threads = $(if $(JOB_THREADS),$(JOB_THREADS),$$(n=$$(printf '%s\n' ' $(MAKEFLAGS) ' | \
  sed -n 's/.* -j\([0-9][0-9]*\) .*/\1/p;t;s/.* -j .*/0/p'); n=$${n:-1}; \
  if [ "$$n" = 0 ]; then echo 1; else t=$$(( $(THREADS) / n )); echo $$(( t < 1 ? 1 : t )); fi))

# $(call launch,JOB-NAME[,THREADS]): the prefix of a job's command line; a
# job that runs alone on the critical path (the base) asks for THREADS.
ifeq ($(LAUNCH),slurm)
launch = $(SRUN) --job-name=$(notdir $(MODEL_O))-$1 --nodes=1 --ntasks=1 \
         --cpus-per-task=$(or $2,$(job_threads)) $(SLURM_ARGS)
else
launch =
endif

# $(call timed,STAGE,ID,COMMAND): runs COMMAND and, when it succeeds, appends
# "STAGE ID START END" (seconds since the epoch) to $(TIMINGS), the record
# `make catalog` sums into its per-stage breakdown. Appends of one short
# line are atomic, so parallel jobs do not interleave.
TIMINGS = $(MODEL_O)/timings.log
timed = t0=$$(date +%s.%N); { $3; } && printf '%s %s %s %s\n' $1 $2 $$t0 $$(date +%s.%N) >> $(TIMINGS)
