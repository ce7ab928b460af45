# mk/test.mk: `make test` and `make bench`.
#
# Components register:
#   UNIT_TESTS        cmocka programs (through $(call unit_test,...))
#   TEST_DEPS         anything else the tests need built first
#   BENCHES           commands run by `make bench`, one per line of output
# Integration tests are the scripts tests/integration/*.sh (TAP, see
# tests/lib.sh); they drive the real programs in $(BIN).

INTEGRATION_TESTS := $(sort $(wildcard tests/integration/*.sh))
TEST_JOBS ?= $(THREADS)
TEST_TIMEOUT ?= 1200

ifneq ($(SAN),)
# Sanitizer reports fail the test that triggered them.
TEST_ENV := ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:exitcode=86 \
            LSAN_OPTIONS=suppressions=$(CURDIR)/tests/lsan.supp:print_suppressions=0 \
            UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
endif

.PHONY: test check bench
test: all $(UNIT_TESTS) $(TEST_DEPS) ## build and run every test (TESTS=substring runs a subset)
	$(Q)$(TEST_ENV) BIN=$(abspath $(BIN)) O=$(abspath $(O)) TOP=$(CURDIR) SAN=$(SAN) \
	  TESTD=$(abspath $(TESTD)) THREADS=$(THREADS) TEST_JOBS=$(TEST_JOBS) \
	  TEST_TIMEOUT=$(TEST_TIMEOUT) TESTS='$(TESTS)' \
	  tests/run-tests.sh $(TESTD)/logs $(UNIT_TESTS) $(INTEGRATION_TESTS)
check: test

# Benchmarks measure a reference in the same run and print ratios against it;
# they run one at a time on an otherwise idle machine.
bench: all $(BENCH_DEPS) ## run the benchmarks; each prints ratios against a reference measured in the same run
	$(Q)status=0; $(foreach b,$(BENCHES),BIN=$(abspath $(BIN)) O=$(abspath $(O)) TOP=$(CURDIR) \
	  THREADS=$(THREADS) $(b) || status=1;) \
	[ -n '$(strip $(BENCHES))' ] || echo "bench: no benchmark is registered yet"; exit $$status
