# mk/config.mk: build options, their validation, and the flags they resolve to.
#
# Every option is a make variable with a default; a bad value stops the build
# with $(error) before anything runs. The resolved settings are written to
# $(O)/.settings; every object depends on that file, so changing an option
# (GPU=1, DEBUG=1, SAN=..., CROSS=...) rebuilds what it affects (Redis'
# .make-settings idea).

# Cross builds default to their own folder so the host tools stay intact.
O        ?= build$(if $(CROSS),/$(patsubst %-,%,$(CROSS)))
GPU      ?= 0
CUDNN    ?= 0
DEBUG    ?= 0
SAN      ?=
CROSS    ?=
PREFIX   ?= /usr/local
DESTDIR  ?=
ifeq ($(origin THREADS),undefined)
THREADS  := $(shell nproc 2>/dev/null || echo 1)
endif
V        ?= 0
CUDA_PATH ?= /usr/local/cuda

# One line of help per option (`make help`); components append theirs.
OPTIONS := O GPU CUDNN DEBUG SAN CROSS THREADS PREFIX DESTDIR V
OPT_DOC_O       := output folder for everything built and generated
OPT_DOC_GPU     := 1 compiles and links against CUDA in CUDA_PATH (kernels stay on the CPU until the CUDA backend lands)
OPT_DOC_CUDNN   := 1 uses cuDNN for convolutions (needs GPU=1)
OPT_DOC_DEBUG   := 1 builds without optimisation, with assertions
OPT_DOC_SAN     := sanitizers, a comma list of address,undefined; or thread alone (ThreadSanitizer: make test-threads)
OPT_DOC_CROSS   := cross-compiler prefix, e.g. aarch64-linux-gnu- for Jetson
OPT_DOC_THREADS := threads of our own loops and products (default: all cores); results never depend on it
OPT_DOC_PREFIX  := installation prefix
OPT_DOC_DESTDIR := staging root prepended to PREFIX by make install
OPT_DOC_V       := 1 prints every command

# ---- validation -------------------------------------------------------------

cfg_bool = $(if $(filter 0 1,$($1)),,$(error $1='$($1)' is not valid: use $1=0 or $1=1))
$(call cfg_bool,GPU)
$(call cfg_bool,CUDNN)
$(call cfg_bool,DEBUG)
$(call cfg_bool,V)

ifeq ($(CUDNN)$(GPU),10)
$(error CUDNN=1 needs GPU=1: cuDNN is used only by the CUDA backend)
endif

comma := ,
CFG_SAN_OK := address undefined thread
CFG_SAN_LIST := $(subst $(comma), ,$(SAN))
ifneq ($(filter-out $(CFG_SAN_OK),$(CFG_SAN_LIST)),)
$(error SAN='$(SAN)' is not valid: use a comma list of address,undefined, e.g. SAN=address,undefined, or SAN=thread)
endif
# ThreadSanitizer cannot share a process with AddressSanitizer.
ifneq ($(filter thread,$(CFG_SAN_LIST)),)
ifneq ($(filter-out thread,$(CFG_SAN_LIST)),)
$(error SAN='$(SAN)' is not valid: thread cannot be combined with another sanitizer; use SAN=thread alone)
endif
endif

ifneq ($(shell echo '$(THREADS)' | grep -Ex '[1-9][0-9]{0,3}'),$(THREADS))
$(error THREADS='$(THREADS)' is not valid: use a positive integer, e.g. THREADS=2)
endif

ifeq ($(filter /%,$(PREFIX)),)
$(error PREFIX='$(PREFIX)' is not valid: use an absolute path, e.g. PREFIX=/usr/local)
endif
ifneq ($(DESTDIR),)
ifeq ($(filter /%,$(DESTDIR)),)
$(error DESTDIR='$(DESTDIR)' is not valid: use an absolute path)
endif
endif

ifneq ($(words $(O)),1)
$(error O='$(O)' is not valid: use one directory name without spaces)
endif
ifneq ($(filter . ./ .. / $(CURDIR) $(CURDIR)/,$(O)),)
$(error O='$(O)' is not valid: outputs never go into the source tree; use e.g. O=build)
endif

ifneq ($(CROSS),)
ifeq ($(filter %-,$(CROSS)),)
$(error CROSS='$(CROSS)' is not valid: use a tool prefix ending in '-', e.g. CROSS=aarch64-linux-gnu-)
endif
endif

# ---- toolchain --------------------------------------------------------------

CC      := $(CROSS)gcc
AR      := $(CROSS)ar
NVCC    := $(CUDA_PATH)/bin/nvcc
# The target's multiarch triplet (x86_64-linux-gnu here, aarch64-linux-gnu when
# cross-compiling): pkg-config and the library checks look there.
TRIPLET := $(if $(CROSS),$(patsubst %-,%,$(CROSS)),$(shell gcc -dumpmachine 2>/dev/null))
ifneq ($(CROSS),)
PKG_CONFIG := PKG_CONFIG_LIBDIR=/usr/lib/$(TRIPLET)/pkgconfig:/usr/share/pkgconfig pkg-config
else
PKG_CONFIG := pkg-config
endif

CFLAGS_WARN := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
               -Wno-sign-compare
# -ffp-contract=off, deliberately: the compiler never fuses a*b+c on its own
# (aarch64 has fma in its base ISA, x86-64 does not), so every C expression
# rounds alike on both; where a fused multiply-add is wanted, the code says
# so (fmaf, intrinsics: trainer/nn/portable.c). -std=c11 implies it; it is
# spelled out so that no later -std=gnu11 or -O3 changes it silently.
CFLAGS_BASE := -std=c11 -D_GNU_SOURCE -fPIC -g -pthread -ffp-contract=off $(CFLAGS_WARN)
ifeq ($(DEBUG),1)
CFLAGS_OPT := -O0 -g3 -DTRN_DEBUG=1
else
CFLAGS_OPT := -O2 -DNDEBUG
endif
ifneq ($(SAN),)
CFLAGS_SAN  := -fsanitize=$(SAN) -fno-omit-frame-pointer -fno-sanitize-recover=all
LDFLAGS_SAN := -fsanitize=$(SAN)
endif
ifeq ($(GPU),1)
CFLAGS_GPU  := -DTRN_GPU=1 -I$(CUDA_PATH)/include
LDLIBS_GPU  := -L$(CUDA_PATH)/lib64 -Wl,-rpath,$(CUDA_PATH)/lib64 -lcudart -lcublas
NVCCFLAGS   := -O2 -Xcompiler -fPIC -I$(CUDA_PATH)/include
ifeq ($(CUDNN),1)
CFLAGS_GPU  += -DTRN_CUDNN=1
LDLIBS_GPU  += -lcudnn
NVCCFLAGS   += -DTRN_CUDNN=1
endif
endif

# Flags for our own code. Third-party headers are included with -isystem so
# their warnings never fail our -Werror build.
CFLAGS  := $(CFLAGS_BASE) $(CFLAGS_OPT) $(CFLAGS_SAN) $(CFLAGS_GPU) $(EXTRA_CFLAGS)
LDFLAGS := -pthread $(LDFLAGS_SAN) $(EXTRA_LDFLAGS)
DEPFLAGS = -MMD -MP

# ---- recorded settings ------------------------------------------------------

CFG_SETTINGS := CC=$(CC) CFLAGS=$(CFLAGS) LDFLAGS=$(LDFLAGS) GPU=$(GPU) CUDNN=$(CUDNN) \
                CUDA_PATH=$(CUDA_PATH) TRIPLET=$(TRIPLET)
SETTINGS_FILE := $(O)/.settings

# Goals that build nothing need no settings file and no library check.
CFG_NOBUILD_GOALS := help deps clean distclean uninstall print-config
ifneq ($(MAKECMDGOALS),)
ifeq ($(filter-out $(CFG_NOBUILD_GOALS),$(MAKECMDGOALS)),)
CFG_NOBUILD := 1
endif
endif

ifneq ($(CFG_NOBUILD),1)
CFG_CHANGED := $(shell mkdir -p '$(O)' && \
  if [ "$$(cat '$(SETTINGS_FILE)' 2>/dev/null)" != '$(CFG_SETTINGS)' ]; then \
    printf '%s\n' '$(CFG_SETTINGS)' > '$(SETTINGS_FILE).tmp' && \
    mv '$(SETTINGS_FILE).tmp' '$(SETTINGS_FILE)' && echo yes; fi)
ifeq ($(MAKELEVEL),0)
$(info config: O=$(O) GPU=$(GPU) CUDNN=$(CUDNN) DEBUG=$(DEBUG) SAN=$(SAN) CROSS=$(CROSS) \
THREADS=$(THREADS) PREFIX=$(PREFIX)$(if $(CFG_CHANGED), (settings changed: rebuilding)))
endif
endif

print-config: ## print the resolved options and flags
	@echo 'O=$(O) GPU=$(GPU) CUDNN=$(CUDNN) DEBUG=$(DEBUG) SAN=$(SAN) CROSS=$(CROSS) THREADS=$(THREADS)'
	@echo 'PREFIX=$(PREFIX) DESTDIR=$(DESTDIR) CC=$(CC) TRIPLET=$(TRIPLET)'
	@echo 'CFLAGS=$(CFLAGS)'
	@echo 'LDFLAGS=$(LDFLAGS)'
	@# the products' path the built trainer takes on this CPU (issue 37)
	@echo "GEMM=$$($(BIN)/trainer --version 2>/dev/null | sed -n 's/^GEMM: //p' | grep . || echo '(build the trainer first: make)')"

ifeq ($(V),1)
Q :=
msg =
else
Q := @
msg = @printf '  %-8s %s\n' '$1' '$2';
endif
