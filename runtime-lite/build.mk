# runtime-lite/build.mk: librtl (static and shared), rtl.h, rtl.pc and `rtl`.
#
# librtl holds runtime-lite's sources and the forward engine (trainer/nn/,
# its inference flavour NN_INFER_OBJS of trainer/build.mk, compiled with
# -DTRN_INFER_ONLY): one copy of the forward kernels, no training code. It
# depends on libsodium, libarchive, cJSON, OpenBLAS and libcurl (rtl pull),
# never on libtrn or the catalog. Only rtl_ names leave it: librtl.so is built from objects
# compiled with -fvisibility=hidden (RTL_API on the public declarations),
# and librtl.a holds one relocatable object in which every other global
# symbol is made local, so a program may link librtl.a beside libtrn.a
# (as `catalog` does) without two definitions of a trn_ name.

RTL_SRCS     := $(sort $(wildcard runtime-lite/src/*.c))
RTL_CLI_SRCS := $(sort $(wildcard runtime-lite/cli/*.c))
RTL_LIB      := $(LIBD)/librtl.a
RTL_SO       := $(LIBD)/librtl.so.1
RTL_PC       := $(O)/pkgconfig/rtl.pc
RTL_PKGS     := libsodium libarchive libcjson openblas libcurl
RTL_CFLAGS   := -Iruntime-lite/include -Iruntime-lite/src -Itrainer/nn/include $(TECH_CFLAGS) -fvisibility=hidden \
                $(shell $(PKG_CONFIG) --cflags $(RTL_PKGS) 2>/dev/null)
RTL_LDLIBS   := $(shell $(PKG_CONFIG) --libs $(RTL_PKGS) 2>/dev/null || \
                  echo -lsodium -larchive -lcjson -lopenblas -lcurl) -lm
RTL_VERSION  := $(shell sed -n 's/^\#define RTL_VERSION "\(.*\)"/\1/p' runtime-lite/include/rtl.h)
RTL_LD       := $(CROSS)ld
RTL_OBJCOPY  := $(CROSS)objcopy

# The engine's inference flavour (trainer/build.mk compiles it once).
RTL_TRN_OBJS := $(NN_INFER_OBJS)
RTL_OBJS     := $(call objs,$(RTL_SRCS)) $(RTL_TRN_OBJS)

# One relocatable object with rtl_* as its only global definitions.
RTL_PRELINK  := $(OBJ)/rtl/librtl.o
$(RTL_PRELINK): $(RTL_OBJS) | $$(@D)/.dirstamp
	$(call msg,LD,$@)$(RTL_LD) -r -o $@.tmp $^ && \
	  $(RTL_OBJCOPY) --wildcard --keep-global-symbol='rtl_*' $@.tmp $@ && rm -f $@.tmp

$(RTL_LIB): $(RTL_PRELINK) | $$(@D)/.dirstamp
	$(call msg,AR,$@)rm -f $@ && $(AR) rcsD $@ $^

$(call objs,$(RTL_SRCS) $(RTL_CLI_SRCS)): CFLAGS += $(RTL_CFLAGS)
$(call objs,$(RTL_CLI_SRCS)): CFLAGS += $(CK_CFLAGS)
$(call objs,$(RTL_SRCS) $(RTL_CLI_SRCS)): | $(TECH_H)

$(RTL_SO): $(RTL_OBJS) | $$(@D)/.dirstamp
	$(call msg,LD,$@)$(CC) $(LDFLAGS) -shared -Wl,-soname,librtl.so.1 -Wl,-z,defs -o $@ $^ $(RTL_LDLIBS)
$(LIBD)/librtl.so: $(RTL_SO)
	$(Q)ln -sf librtl.so.1 $@

# rtl.pc for $(PREFIX): regenerated on every build, replaced only when its
# text changes (PREFIX is not part of the recorded settings).
.PHONY: rtl-pc-force
$(RTL_PC): runtime-lite/rtl.pc.in rtl-pc-force | $$(@D)/.dirstamp
	$(Q)sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@VERSION@|$(RTL_VERSION)|' $< > $@.tmp && \
	  if cmp -s $@.tmp $@; then rm -f $@.tmp; else mv $@.tmp $@; echo "  GEN      $@"; fi

# The scheduler's trace simulator (runtime-lite/sim/, rtl_sim.h): a
# host-side tool, no part of librtl. It lives in its own small library,
# librtl-sim.a (built, never installed), which drives librtl's public
# scheduler; the host's rtl links it for `rtl simulate` (simulate_cli.c,
# RTL_SIM), the device's rtl (CROSS) has no simulate verb and librtl.a /
# librtl.so carry none of it (tests/integration/rtl_api_budget.sh). GTDP's
# run-record analysis (gtdp_records.c) is there too: rtl run --workers
# (cli/rtl_gtdp_cli.c) links it, on the device too, beside librtl.
# Not tests/tools: `rtl simulate` is a user's verb with its man page, and
# its unit test (tests/unit/rtl_sim) links the library as a program would.
# Link and speed emulation (emulate.c: rtl serve --emulate, --slowdown; rtl
# run --part-cpus) is the build host's only: its rtl installs it through
# rtl_serve_hooks and rtl_gtdp_hooks; the device's rtl has none of these
# options and its librtl no emulation code.
RTL_SIM_SRCS := runtime-lite/sim/sched_sim.c runtime-lite/sim/gtdp_records.c
ifeq ($(CROSS),)
RTL_SIM_SRCS += runtime-lite/sim/emulate.c
endif
RTL_SIM_CLI  := runtime-lite/sim/simulate_cli.c
RTL_SIM_LIB  := $(LIBD)/librtl-sim.a
$(call objs,$(RTL_SIM_SRCS) $(RTL_SIM_CLI)): CFLAGS += $(RTL_CFLAGS) -Iruntime-lite/sim
$(call objs,$(RTL_SIM_CLI)): CFLAGS += $(CK_CFLAGS) -Iruntime-lite/cli
$(RTL_SIM_LIB): $(call objs,$(RTL_SIM_SRCS)) | $$(@D)/.dirstamp
	$(call msg,AR,$@)rm -f $@ && $(AR) rcsD $@ $^
ifeq ($(CROSS),)
RTL_CLI_HOST := $(call objs,$(RTL_SIM_CLI))
$(call objs,runtime-lite/cli/rtl_cli.c runtime-lite/cli/rtl_offload_cli.c runtime-lite/cli/rtl_gtdp_cli.c): CFLAGS += -DRTL_SIM
ALL_TARGETS += $(RTL_SIM_LIB)
endif
RTL_CLI_HOST += $(RTL_SIM_LIB)
$(call objs,runtime-lite/cli/rtl_gtdp_cli.c runtime-lite/cli/rtl_offload_cli.c): CFLAGS += -Iruntime-lite/sim

$(eval $(call program,$(BIN)/rtl,$(call objs,$(RTL_CLI_SRCS)) $(RTL_CLI_HOST) $(CK_OBJS) $(RTL_LIB),$(RTL_LDLIBS)))

ALL_TARGETS     += $(RTL_LIB) $(RTL_SO) $(LIBD)/librtl.so $(RTL_PC) $(BIN)/rtl
INSTALL_BINS    += $(BIN)/rtl
INSTALL_LIBS    += $(RTL_LIB) $(RTL_SO) $(LIBD)/librtl.so
INSTALL_HEADERS += runtime-lite/include/rtl.h
INSTALL_PCS     += $(RTL_PC)
DEPS_PKGS       += libsodium-dev libarchive-dev libcjson-dev libopenblas-dev python3 libcurl4-openssl-dev

# The crash-test build: the same sources with RTL_CRASH_POINTS=1, so that
# RTL_CRASH_AT=N kills the process at the Nth crash point. Only the tests
# use it; the installed rtl never reads that variable.
$(eval $(call flavour_rules,rtl-crash))
RTL_CRASH_OBJS := $(call objs,$(RTL_SRCS) $(RTL_CLI_SRCS) runtime-lite/sim/gtdp_records.c,rtl-crash)
$(RTL_CRASH_OBJS): CFLAGS += $(RTL_CFLAGS) $(CK_CFLAGS) -Iruntime-lite/sim -DRTL_CRASH_POINTS=1
$(eval $(call program,$(TESTD)/rtl-crash,$(RTL_CRASH_OBJS) $(RTL_TRN_OBJS) $(CK_OBJS),$(RTL_LDLIBS)))
TEST_DEPS += $(TESTD)/rtl-crash

$(call objs,$(wildcard tests/unit/rtl_*/*.c)): CFLAGS += $(RTL_CFLAGS)
$(foreach a,$(filter-out rtl_model rtl_runner rtl_sim rtl_gtdp,$(notdir $(wildcard tests/unit/rtl_*))),$(eval $(call unit_test,$(a),$(RTL_LIB),$(RTL_LDLIBS))))
# the trace simulator, a host-side tool beside librtl (above)
$(call objs,$(wildcard tests/unit/rtl_sim/*.c)): CFLAGS += -Iruntime-lite/sim
$(eval $(call unit_test,rtl_sim,$(RTL_SIM_LIB) $(RTL_LIB),$(RTL_LDLIBS)))
# rtl_gtdp tests the run-record analysis too (gtdp_records.c)
$(call objs,$(wildcard tests/unit/rtl_gtdp/*.c)): CFLAGS += -Iruntime-lite/sim
$(eval $(call unit_test,rtl_gtdp,$(RTL_SIM_LIB) $(RTL_LIB),$(RTL_LDLIBS)))
# rtl_model compares loaded models with the trainer's own inference library
# (libtrn-infer, the same sources compiled apart: librtl's copies are local).
$(call objs,$(wildcard tests/unit/rtl_model/*.c)): CFLAGS += $(NN_CFLAGS) -DTRN_INFER_ONLY
$(eval $(call unit_test,rtl_model,$(RTL_LIB) $(TRN_INFER_LIB),$(RTL_LDLIBS)))
# rtl_runner writes its catalog's weights with libtrn-infer likewise.
$(call objs,$(wildcard tests/unit/rtl_runner/*.c)): CFLAGS += $(NN_CFLAGS) -DTRN_INFER_ONLY
$(eval $(call unit_test,rtl_runner,$(RTL_LIB) $(TRN_INFER_LIB),$(RTL_LDLIBS)))

# make bench: install throughput against plain tar -xf of the same archive;
# start-to-first-result and peak memory of rtl run against trainer predict.
BENCHES += tests/bench/rtl_install.sh
BENCHES += tests/bench/rtl_run.sh
BENCHES += tests/bench/rtl_pull.sh
BENCHES += tests/bench/rtl_sched.sh
BENCHES += tests/bench/rtl_sched_tables.sh
BENCHES += tests/bench/rtl_stream.sh
# make bench: five tasks through shared trunks against one task (rtl run --task).
BENCHES += tests/bench/rtl_tasks.sh

# The device build (make CROSS=aarch64-linux-gnu-) and the tests that run
# there under qemu-user as part of a host make test.
CROSS_TARGETS    += $(RTL_LIB) $(RTL_SO) $(LIBD)/librtl.so $(RTL_PC) $(BIN)/rtl
CROSS_UNIT_TESTS += $(TESTD)/unit/test_rtl_base $(TESTD)/unit/test_rtl_model $(TESTD)/unit/test_rtl_sha256 \
                    $(TESTD)/unit/test_rtl_pull $(TESTD)/unit/test_rtl_sched $(TESTD)/unit/test_rtl_context
# tests/integration/rtl_run.sh runs the device's rtl under qemu-user too
CROSS_TEST_DEPS  += $(BIN)/rtl

# rtl pull's systemd service and timer (runtime-lite/systemd/), installed by
# make install under PREFIX/lib/systemd/system and never enabled: a device
# opts in with /etc/default/rtl-pull and `systemctl enable --now
# rtl-pull.timer` (runtime-lite/README.md). The service names PREFIX.
RTL_SERVICE := $(O)/systemd/rtl-pull.service
$(RTL_SERVICE): runtime-lite/systemd/rtl-pull.service.in rtl-pc-force | $$(@D)/.dirstamp
	$(Q)sed -e 's|@PREFIX@|$(PREFIX)|g' $< > $@.tmp && \
	  if cmp -s $@.tmp $@; then rm -f $@.tmp; else mv $@.tmp $@; echo "  GEN      $@"; fi
ALL_TARGETS   += $(RTL_SERVICE)
CROSS_TARGETS += $(RTL_SERVICE)

.PHONY: install-rtl-systemd uninstall-rtl-systemd
install: install-rtl-systemd
install-rtl-systemd: $(RTL_SERVICE)
	$(Q)set -e; install -d '$(IDIR)/lib/systemd/system' '$(IDIR)/share/doc/rtl'; \
	for f in $(RTL_SERVICE) runtime-lite/systemd/rtl-pull.timer; do \
	  install -m 0644 "$$f" '$(IDIR)/lib/systemd/system/'; echo "  INSTALL $(IDIR)/lib/systemd/system/$${f##*/}"; done; \
	install -m 0644 runtime-lite/systemd/rtl-pull.default '$(IDIR)/share/doc/rtl/rtl-pull.default'; \
	install -m 0644 runtime-lite/README.md '$(IDIR)/share/doc/rtl/README.md'; \
	echo "  INSTALL $(IDIR)/share/doc/rtl/{rtl-pull.default,README.md} (rtl-pull.timer is not enabled)"
uninstall: uninstall-rtl-systemd
uninstall-rtl-systemd:
	$(Q)rm -fv '$(IDIR)/lib/systemd/system/rtl-pull.service' '$(IDIR)/lib/systemd/system/rtl-pull.timer' \
	  '$(IDIR)/share/doc/rtl/rtl-pull.default' '$(IDIR)/share/doc/rtl/README.md'

# Split execution and the peer (rtl plan / serve / run --split): a test
# tool that speaks the protocol by hand (bad frames, 64 clients), linked
# against runtime-lite's objects so it can reach the frame code.
RTL_PEER_TOOL := $(TESTD)/rtl_peer_testtool
$(call objs,tests/tools/rtl_peer_testtool.c): CFLAGS += $(RTL_CFLAGS)
$(eval $(call program,$(RTL_PEER_TOOL),$(call objs,tests/tools/rtl_peer_testtool.c) $(RTL_OBJS),$(RTL_LDLIBS) -lpthread))
TEST_DEPS += $(RTL_PEER_TOOL)
BENCHES += tests/bench/rtl_offload.sh
BENCHES += tests/bench/rtl_gtdp.sh

# make fuzz: libFuzzer (Debian's clang) on the peer's frame and message
# parsers and on rtl pull's index and manifest parsers, with ASan and UBSan; `make test` runs it briefly
# (tests/integration/rtl_fuzz.sh). FUZZ_TIME: seconds for make fuzz.
FUZZ_CC   ?= clang
FUZZ_TIME ?= 60
RTL_FUZZ  := $(TESTD)/fuzz/rtl_frame_fuzz
RTL_FUZZ_SRCS := tests/fuzz/rtl_frame_fuzz.c runtime-lite/src/frame.c runtime-lite/src/err.c trainer/nn/err.c
$(RTL_FUZZ): $(RTL_FUZZ_SRCS) runtime-lite/src/frame.h runtime-lite/src/internal.h | $$(@D)/.dirstamp
	$(call msg,FUZZ,$@)$(FUZZ_CC) -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
	  -Iruntime-lite/include -Iruntime-lite/src -Itrainer/nn/include -o $@ $(RTL_FUZZ_SRCS) \
	  $(shell $(PKG_CONFIG) --cflags --libs libsodium 2>/dev/null || echo -lsodium)
# the over-the-air JSON parsers: index.json, manifest.json, duplicate keys
RTL_JSON_FUZZ := $(TESTD)/fuzz/rtl_json_fuzz
RTL_JSON_FUZZ_SRCS := tests/fuzz/rtl_json_fuzz.c runtime-lite/src/index.c runtime-lite/src/catalog.c \
  runtime-lite/src/json.c runtime-lite/src/sha256.c runtime-lite/src/err.c trainer/nn/err.c
$(RTL_JSON_FUZZ): $(RTL_JSON_FUZZ_SRCS) runtime-lite/src/pull.h runtime-lite/src/catalog.h runtime-lite/src/internal.h \
  | $$(@D)/.dirstamp
	$(call msg,FUZZ,$@)$(FUZZ_CC) -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
	  -Iruntime-lite/include -Iruntime-lite/src -Itrainer/nn/include -o $@ $(RTL_JSON_FUZZ_SRCS) \
	  $(shell $(PKG_CONFIG) --cflags --libs libcjson libsodium 2>/dev/null || echo -lcjson -lsodium)
.PHONY: fuzz
fuzz: $(RTL_FUZZ) $(RTL_JSON_FUZZ) ## run each fuzzer (peer frames; OTA index and manifest) for FUZZ_TIME seconds (libFuzzer, ASan, UBSan)
	$(Q)mkdir -p $(TESTD)/fuzz/corpus && $(RTL_FUZZ) -max_total_time=$(FUZZ_TIME) -max_len=4096 \
	  $(TESTD)/fuzz/corpus tests/fuzz/corpus
	$(Q)mkdir -p $(TESTD)/fuzz/json-corpus && $(RTL_JSON_FUZZ) -max_total_time=$(FUZZ_TIME) -max_len=16384 \
	  $(TESTD)/fuzz/json-corpus tests/fuzz/json-corpus
DEPS_PKGS += clang libclang-rt-14-dev iproute2
# make test builds the fuzzer when this clang can link libFuzzer (else
# tests/integration/rtl_fuzz.sh says it skipped, and why)
ifeq ($(CROSS),)
RTL_FUZZ_OK := $(shell printf 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { return 0; }\n' | \
  $(FUZZ_CC) -x c - -fsanitize=fuzzer -o /dev/null >/dev/null 2>&1 && echo 1)
ifeq ($(RTL_FUZZ_OK),1)
TEST_DEPS += $(RTL_FUZZ) $(RTL_JSON_FUZZ)
endif
endif

# NestDNN capacity switching (tests/bench/nested_switch.sh): a small program
# against librtl that times a switch against opening the same capacity as
# its own variant, in one process.
RTL_NEST_TOOL := $(TESTD)/tools/rtl-nestbench
$(call objs,tests/tools/rtl_nestbench.c): CFLAGS += $(RTL_CFLAGS)
$(eval $(call program,$(RTL_NEST_TOOL),$(call objs,tests/tools/rtl_nestbench.c) $(RTL_LIB),$(RTL_LDLIBS)))
BENCH_DEPS += $(RTL_NEST_TOOL)
BENCHES += tests/bench/nested_switch.sh

# FlexDNN's early exits (tests/bench/rtl_exits.sh): a small program against
# librtl that times each image's run per alpha and says which exit answered.
RTL_EXIT_TOOL := $(TESTD)/tools/rtl-exitbench
$(call objs,tests/tools/rtl_exitbench.c): CFLAGS += $(RTL_CFLAGS)
$(eval $(call program,$(RTL_EXIT_TOOL),$(call objs,tests/tools/rtl_exitbench.c) $(RTL_LIB),$(RTL_LDLIBS)))
BENCH_DEPS += $(RTL_EXIT_TOOL)
BENCHES += tests/bench/rtl_exits.sh
