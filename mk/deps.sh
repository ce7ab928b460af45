#!/bin/sh
# mk/deps.sh: install the Debian packages named in $DEPS_PKGS (called by `make deps`).
#
# Idempotent: when everything is present it only asks dpkg and returns (well
# under a second). As root it installs the missing packages non-interactively,
# running `apt-get update` first when apt does not know a package. Without
# root it prints the exact command to run and exits 1.
# DEPS_ARCHS names foreign architectures (e.g. arm64) that packages with an
# ':arch' suffix need enabled in dpkg first.
set -u
missing=''
for p in $DEPS_PKGS; do
    st=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)
    case "$st" in *" ok installed") ;; *) missing="$missing $p" ;; esac
done
missing=${missing# }
n=$(echo $DEPS_PKGS | wc -w)
if [ -z "$missing" ]; then
    echo "deps: all $n packages are installed"
    exit 0
fi

need_arch=''
for a in ${DEPS_ARCHS:-}; do
    dpkg --print-foreign-architectures | grep -qx "$a" || need_arch="$need_arch $a"
done

if [ "$(id -u)" != 0 ]; then
    echo "deps: missing packages: $missing"
    echo "deps: run this as root (or with sudo), then run make again:"
    for a in $need_arch; do echo "  sudo dpkg --add-architecture $a"; done
    [ -n "$need_arch" ] && echo "  sudo apt-get update"
    echo "  sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $missing"
    exit 1
fi

export DEBIAN_FRONTEND=noninteractive
updated=0
for a in $need_arch; do
    echo "deps: enabling the $a architecture in dpkg"
    dpkg --add-architecture "$a" || exit 1
    updated=2
done
# apt-get update first when apt has no candidate for a missing package (a
# fresh image often ships with empty package lists).
for p in $missing; do
    if [ $updated = 2 ] || ! apt-cache show "$p" >/dev/null 2>&1; then
        echo "deps: apt does not know $p yet; running apt-get update"
        apt-get update -q || { echo "deps: error: apt-get update failed"; exit 1; }
        updated=1
        break
    fi
done
echo "deps: installing $missing"
if ! apt-get install -y -q --no-install-recommends $missing; then
    if [ $updated = 0 ]; then
        echo "deps: install failed; running apt-get update and trying once more"
        apt-get update -q && apt-get install -y -q --no-install-recommends $missing && exit 0
    fi
    echo "deps: error: apt-get install failed for: $missing"
    exit 1
fi
