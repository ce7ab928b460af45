# mk/deps.mk: the Debian packages the project needs, `make deps`, and the
# library check every build step waits for.
#
# Components add their packages to DEPS_PKGS (and headers to DEPS_HEADERS,
# libraries to DEPS_LIBS) in their own build.mk; `make deps` installs them all.

# nginx-light and curl serve and fetch in the rtl pull tests and benchmark
# (each test starts its own nginx on loopback; on a machine where installing
# a package starts its service, Debian's nginx also starts on port 80:
# `systemctl disable --now nginx` stops it, the tests do not need it).
DEPS_PKGS := build-essential pkg-config libopenblas-dev liblapacke-dev libarchive-dev \
             libcjson-dev libsodium-dev libzstd-dev libstb-dev libcmocka-dev minisign \
             darknet zstd libcurl4-openssl-dev nginx-light curl openssl zlib1g-dev
# Zalando's Fashion-MNIST (the .gz idx files in /usr/share/datasets/fashion-mnist),
# the real data set of `make dataset IMPORT=fashion-mnist` (datasets/README.md).
DEPS_PKGS += dataset-fashion-mnist
# A real one-node Slurm cluster for tests/integration/slurm_cluster.sh (the
# daemons run only inside that test, on loopback, never as services).
DEPS_PKGS += slurm-wlm munge
# The device side (runtime-lite) is cross-compiled for the Jetson (aarch64) and
# its tests run under qemu-user, with Debian's arm64 libraries (multiarch).
DEPS_ARCHS := arm64
DEPS_PKGS  += gcc-aarch64-linux-gnu libc6-dev:arm64 qemu-user libopenblas-dev:arm64 \
              liblapacke-dev:arm64 libarchive-dev:arm64 libcjson-dev:arm64 libsodium-dev:arm64 \
              libzstd-dev:arm64 libcmocka-dev:arm64 libcurl4-openssl-dev:arm64

# What compiling and linking needs, checked with the target's own compiler, and
# what running the tests needs.
ifeq ($(CROSS),)
DEPS_HEADERS := cblas.h lapacke.h archive.h cjson/cJSON.h sodium.h zstd.h stb/stb_image.h cmocka.h curl/curl.h zlib.h
DEPS_LIBS    := -lopenblas -llapacke -larchive -lcjson -lsodium -lzstd -lcmocka -lcurl -lz
DEPS_FILES   := /usr/bin/minisign /usr/lib/darknet/libdarknet.so /usr/bin/zstd /usr/sbin/nginx /usr/bin/curl
else
DEPS_HEADERS := cblas.h archive.h cjson/cJSON.h sodium.h stb/stb_image.h cmocka.h curl/curl.h
DEPS_LIBS    := -lopenblas -larchive -lcjson -lsodium -lcmocka -lcurl
DEPS_FILES   := $(shell command -v $(CC) 2>/dev/null || echo $(CC))
endif

# Goals that may install missing packages by themselves (the README promises
# that these work as the first command on a fresh Debian machine).
DEPS_AUTO_GOALS := test catalog bench variants
DEPS_AUTO := $(if $(filter $(DEPS_AUTO_GOALS),$(MAKECMDGOALS)),1,0)

.PHONY: deps
deps: ## install the Debian packages the project needs (as root; else prints the command)
	@DEPS_PKGS='$(sort $(DEPS_PKGS))' DEPS_ARCHS='$(DEPS_ARCHS)' sh mk/deps.sh
	@$(if $(CROSS),true,sh mk/onnxrt.sh $(O)/onnxrt)

# The stamp every object waits for (order-only). It is rebuilt when the
# package list or the build settings change.
$(O)/.deps-ok: mk/deps.mk mk/deps.sh $(SETTINGS_FILE)
	$(Q)mkdir -p $(@D); \
	deps_check() { \
	  printf '#include <stdarg.h>\n#include <stddef.h>\n#include <stdint.h>\n#include <setjmp.h>\n$(foreach h,$(DEPS_HEADERS),#include <$(h)>\n)int main(void){return 0;}\n' | \
	    $(CC) -x c - -o $(@D)/.deps-probe $(shell $(PKG_CONFIG) --cflags stb 2>/dev/null) $(DEPS_LIBS) \
	    >/dev/null 2>&1 && rm -f $(@D)/.deps-probe && \
	  for f in $(DEPS_FILES); do [ -e "$$f" ] || return 1; done; }; \
	if ! deps_check; then \
	  if [ '$(DEPS_AUTO)' = 1 ]; then \
	    echo "deps: some build dependencies are missing; running 'make deps' first"; \
	    $(MAKE) --no-print-directory deps && deps_check || { \
	      echo "error: build dependencies still missing after 'make deps' (see above)"; exit 1; }; \
	  else \
	    missing=''; for h in $(DEPS_HEADERS); do printf '#include <stdarg.h>\n#include <stddef.h>\n#include <setjmp.h>\n#include <%s>\n' "$$h" | \
	      $(CC) -E -x c - $(shell $(PKG_CONFIG) --cflags stb 2>/dev/null) >/dev/null 2>&1 || missing="$$missing $$h"; done; \
	    for f in $(DEPS_FILES); do [ -e "$$f" ] || missing="$$missing $$f"; done; \
	    echo "error: missing build dependencies ($${missing:- cannot link $(DEPS_LIBS)} ): run 'make deps'"; \
	    exit 1; \
	  fi; \
	fi; \
	touch $@
