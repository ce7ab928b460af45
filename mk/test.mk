# mk/test.mk: `make test` and `make bench`.
#
# Components register:
#   UNIT_TESTS        cmocka programs (through $(call unit_test,...))
#   CROSS_UNIT_TESTS  those of them that also run on the device (aarch64); a
#                     host `make test` cross-builds them into $(CROSS_TEST_O)
#                     and runs them under qemu-user in the same summary
#   CROSS_TEST_DEPS   device programs that integration tests run under
#                     qemu-user (cross-built with the device tests)
#   CROSS_TARGETS     what `make CROSS=...` builds (the device side)
#   TEST_DEPS         anything else the tests need built first
#   THREAD_TEST_DEPS  what the THREAD_TESTS need built first (make test-threads)
#   BENCHES           executable scripts (one word each) run by `make bench`
# Integration tests are the scripts tests/integration/*.sh (TAP, see
# tests/lib.sh); they drive the real programs in $(BIN).

INTEGRATION_TESTS := $(sort $(wildcard tests/integration/*.sh))
TEST_JOBS ?= $(THREADS)
TEST_TIMEOUT ?= 1200

ifneq ($(SAN),)
# Sanitizer reports fail the test that triggered them.
# ASan's, LSan's and TSan's reports go to files beside the test's log
# (tests/run-tests.sh); UBSan's to stderr.
TEST_ENV := ASAN_OPTIONS=detect_leaks=1:halt_on_error=1:abort_on_error=0:exitcode=86 \
            LSAN_OPTIONS=suppressions=$(CURDIR)/tests/lsan.supp:print_suppressions=0 \
            UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:exitcode=86 \
            TSAN_OPTIONS=halt_on_error=1:exitcode=86:second_deadlock_stack=1
endif

# The unit tests that run threads (the engine's pools at several thread
# counts, two models at once, the data loaders' workers): `make
# test-threads` builds them with ThreadSanitizer in $(O)/tsan and runs them;
# a report fails the test that triggered it.
THREAD_TESTS := rtl_model trn_engine trn_layers trn_train trn_portable trn_gemm_path trn_lasso trn_data prn_rank \
                ds_import ds_synth rtl_gtdp
.PHONY: test-threads test-threads-run
test-threads: $(O)/.deps-ok ## build the threaded unit tests with ThreadSanitizer (in O/tsan) and run them
	$(Q)$(MAKE) --no-print-directory SAN=thread O=$(O)/tsan $(if $(findstring -j,$(MAKEFLAGS)),,-j$(THREADS)) \
	  test-threads-run
test-threads-run: $(addprefix $(TESTD)/unit/test_,$(THREAD_TESTS)) | $(THREAD_TEST_DEPS)
	$(Q)$(TEST_ENV) BIN=$(abspath $(BIN)) O=$(abspath $(O)) TOP=$(CURDIR) SAN=$(SAN) \
	  TESTD=$(abspath $(TESTD)) THREADS=$(THREADS) TEST_JOBS=$(TEST_JOBS) \
	  TEST_TIMEOUT=$(TEST_TIMEOUT) TESTS='$(TESTS)' tests/run-tests.sh $(TESTD)/logs $^

# `make test-san`: the whole of `make test` (unit, integration, differential,
# the device tests under qemu, which stay uninstrumented) with AddressSanitizer,
# LeakSanitizer and UBSan, built in $(O)/asan. A report fails the test file
# that caused it (tests/run-tests.sh). TEST_TIMEOUT (seconds per file) scales
# the limit on a slow or loaded machine. ONNX Runtime is the one `make deps`
# installed in $(O)/onnxrt (ORT_DIR names another).
.PHONY: test-san
test-san: $(O)/.deps-ok ## build and run every test with SAN=address,undefined (in O/asan)
	$(Q)ORT_DIR=$(or $(ORT_DIR),$(abspath $(O))/onnxrt) $(MAKE) --no-print-directory SAN=address,undefined \
	  O=$(O)/asan test

CROSS_TEST_PREFIX := aarch64-linux-gnu-
CROSS_TEST_O      := $(O)/$(patsubst %-,%,$(CROSS_TEST_PREFIX))
CROSS_QEMU        := qemu-$(firstword $(subst -, ,$(CROSS_TEST_PREFIX)))
CROSS_TEST_LIST   := $(if $(CROSS),$(O),$(CROSS_TEST_O))/cross-tests.list

.PHONY: test test-build check bench cross-test-build cross-test-list
ifeq ($(CROSS),)
# Host: every test here, plus the device tests cross-built and run under qemu.
# A plain `make test` builds with THREADS jobs (like `make catalog`), then
# runs the tests (TEST_JOBS at once).
test: $(O)/.deps-ok ## build and run every test (TESTS=substring runs a subset)
	$(Q)$(MAKE) --no-print-directory $(if $(findstring -j,$(MAKEFLAGS)),,-j$(THREADS)) test-build
	$(Q)$(TEST_ENV) BIN=$(abspath $(BIN)) O=$(abspath $(O)) TOP=$(CURDIR) SAN=$(SAN) \
	  GPU=$(GPU) CUDNN=$(CUDNN) DEBUG=$(DEBUG) \
	  TESTD=$(abspath $(TESTD)) THREADS=$(THREADS) TEST_JOBS=$(TEST_JOBS) \
	  TEST_TIMEOUT=$(TEST_TIMEOUT) TESTS='$(TESTS)' \
	  tests/run-tests.sh $(TESTD)/logs $(UNIT_TESTS) $(INTEGRATION_TESTS) $$(cat $(CROSS_TEST_LIST))

test-build: all $(UNIT_TESTS) $(TEST_DEPS) cross-test-build

cross-test-build:
	$(Q)mkdir -p $(CROSS_TEST_O); \
	if [ -z '$(strip $(CROSS_UNIT_TESTS))' ]; then : > $(CROSS_TEST_LIST).tmp && mv $(CROSS_TEST_LIST).tmp $(CROSS_TEST_LIST); \
	elif ! command -v $(CROSS_TEST_PREFIX)gcc >/dev/null || ! command -v $(CROSS_QEMU) >/dev/null; then \
	  echo 'skip:aarch64-device-tests:$(CROSS_TEST_PREFIX)gcc or $(CROSS_QEMU) is not installed (make deps installs gcc-aarch64-linux-gnu and qemu-user)' > $(CROSS_TEST_LIST).tmp && \
	    mv $(CROSS_TEST_LIST).tmp $(CROSS_TEST_LIST); \
	else \
	  echo "  CROSS    device tests for $(CROSS_TEST_PREFIX:-=) (run under $(CROSS_QEMU))"; \
	  $(MAKE) --no-print-directory CROSS=$(CROSS_TEST_PREFIX) O=$(CROSS_TEST_O) SAN= cross-test-list; \
	fi
else
# Cross build: the device tests, each run through qemu-user.
test: all cross-test-list ## build and run every test (TESTS=substring runs a subset)
	$(Q)BIN=$(abspath $(BIN)) O=$(abspath $(O)) TOP=$(CURDIR) TESTD=$(abspath $(TESTD)) \
	  THREADS=$(THREADS) TEST_JOBS=$(TEST_JOBS) TEST_TIMEOUT=$(TEST_TIMEOUT) TESTS='$(TESTS)' \
	  tests/run-tests.sh $(TESTD)/logs $(shell cat $(CROSS_TEST_LIST))
endif

cross-test-list: $(CROSS_UNIT_TESTS) $(CROSS_TEST_DEPS)
	$(Q)mkdir -p $(dir $(CROSS_TEST_LIST)) && \
	printf '$(CROSS_QEMU):%s\n' $(abspath $(CROSS_UNIT_TESTS)) > $(CROSS_TEST_LIST).tmp && \
	mv $(CROSS_TEST_LIST).tmp $(CROSS_TEST_LIST)
check: test

# Benchmarks measure a reference in the same run and print ratios against it;
# they run one at a time on an otherwise idle machine.
bench: all $(BENCH_DEPS) ## run the benchmarks; each prints ratios against a reference measured in the same run
	$(Q)status=0; $(foreach b,$(BENCHES),BIN=$(abspath $(BIN)) O=$(abspath $(O)) TOP=$(CURDIR) \
	  THREADS=$(THREADS) $(b) || status=1;) \
	[ -n '$(strip $(BENCHES))' ] || echo "bench: no benchmark is registered yet"; exit $$status
