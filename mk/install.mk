# mk/install.mk: `make install` / `make uninstall` under $(DESTDIR)$(PREFIX).
#
# Components register INSTALL_BINS (programs), INSTALL_LIBS (libraries),
# INSTALL_HEADERS (public headers) and INSTALL_PCS (pkg-config files, already
# generated for $(PREFIX) under $(O)/pkgconfig) and INSTALL_MANS (manual
# pages, section 1: mk/man.mk).

IDIR := $(DESTDIR)$(PREFIX)

.PHONY: install uninstall
install: all ## install programs, manual pages, the runtime library, header and pkg-config file under DESTDIR+PREFIX
	$(Q)set -e; \
	install -d '$(IDIR)/bin' '$(IDIR)/lib' '$(IDIR)/include' '$(IDIR)/lib/pkgconfig'; \
	for f in $(INSTALL_BINS); do install -m 0755 "$$f" '$(IDIR)/bin/'; echo "  INSTALL $(IDIR)/bin/$${f##*/}"; done; \
	for f in $(INSTALL_LIBS); do install -m 0644 "$$f" '$(IDIR)/lib/'; echo "  INSTALL $(IDIR)/lib/$${f##*/}"; done; \
	for f in $(INSTALL_HEADERS); do install -m 0644 "$$f" '$(IDIR)/include/'; echo "  INSTALL $(IDIR)/include/$${f##*/}"; done; \
	for f in $(INSTALL_PCS); do install -m 0644 "$$f" '$(IDIR)/lib/pkgconfig/'; echo "  INSTALL $(IDIR)/lib/pkgconfig/$${f##*/}"; done; \
	if [ -n '$(strip $(INSTALL_MANS))' ]; then install -d '$(IDIR)/share/man/man1'; fi; \
	for f in $(INSTALL_MANS); do install -m 0644 "$$f" '$(IDIR)/share/man/man1/'; echo "  INSTALL $(IDIR)/share/man/man1/$${f##*/}"; done

uninstall: ## remove what make install installed
	$(Q)for f in $(notdir $(INSTALL_BINS)); do rm -fv '$(IDIR)/bin/'"$$f"; done; \
	for f in $(notdir $(INSTALL_LIBS)); do rm -fv '$(IDIR)/lib/'"$$f"; done; \
	for f in $(notdir $(INSTALL_HEADERS)); do rm -fv '$(IDIR)/include/'"$$f"; done; \
	for f in $(notdir $(INSTALL_PCS)); do rm -fv '$(IDIR)/lib/pkgconfig/'"$$f"; done; \
	for f in $(notdir $(INSTALL_MANS)); do rm -fv '$(IDIR)/share/man/man1/'"$$f"; done
