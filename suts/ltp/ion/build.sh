#!/bin/sh
# Builds ION-DTN from a source tree (ION_SRC) into ION_PREFIX when asked, then
# our client, bin/dtnc-ion-ltp, against it. ION_PREFIX defaults to the
# repository's .tools/ion. `make peers ION_SRC=path/to/ION-DTN` runs this.
#
# ION-DTN is in no package registry: its source is github.com/nasa-jpl/ION-DTN
# (tested: tag ion-open-source-4.1.3, commit bf89726f). It needs autoconf,
# automake, libtool and pkg-config, and builds in about 2 minutes on 2 cores.
# Its tree ships a hand-written top-level Makefile that installs into
# /usr/local: configure always runs first here, with our prefix.
# ION's headers need the same SPACE_ORDER and -Dlinux as ION's own build
# (SPACE_ORDER 3 on 64-bit hosts), or its structures would not match.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
ION_PREFIX=${ION_PREFIX:-$(cd "$here/../../.." && pwd)/.tools/ion}
CC=${CC:-gcc}
if [ -n "${ION_SRC:-}" ]; then
    [ -d "$ION_SRC/ltp" ] || { echo "ION_SRC=$ION_SRC: not an ION-DTN source tree (no ltp/)" >&2; exit 1; }
    for tool in autoreconf libtoolize pkg-config make; do
        command -v $tool >/dev/null || {
            echo "$tool not found: apt-get install autoconf automake libtool pkg-config" >&2
            exit 1
        }
    done
    echo "building ION-DTN from $ION_SRC into $ION_PREFIX (about 2 minutes)" >&2
    (
        cd "$ION_SRC"
        [ -x configure ] || autoreconf -fi
        # a copy without its large files lacks this document, which
        # Makefile.am installs: an empty stand-in lets the install finish
        [ -e ION-LTP-configuration.pdf ] || : >ION-LTP-configuration.pdf
        ./configure --prefix="$ION_PREFIX" >"$ION_PREFIX.configure.log" 2>&1 ||
            { echo "configure failed: see $ION_PREFIX.configure.log" >&2; exit 1; }
        # objects of an earlier configure keep its prefix: libtool refuses them
        make clean >/dev/null 2>&1 || true
        make -j"$(nproc)" >"$ION_PREFIX.make.log" 2>&1 && make install >>"$ION_PREFIX.make.log" 2>&1 ||
            { echo "make failed: see $ION_PREFIX.make.log" >&2; exit 1; }
    )
fi
if [ ! -f "$ION_PREFIX/include/ltp.h" ] || [ ! -e "$ION_PREFIX/lib/libltp.so" ]; then
    echo "ION not found under ION_PREFIX=$ION_PREFIX: build it with" \
        "\`make peers ION_SRC=path/to/ION-DTN\` (docs/implementers.md)" >&2
    exit 1
fi
case "$(getconf LONG_BIT)" in 64) order=3 ;; *) order=2 ;; esac
mkdir -p "$here/bin"
$CC -O2 -g -Wall -Dlinux -DSPACE_ORDER=$order \
    -I"$ION_PREFIX/include" \
    -o "$here/bin/dtnc-ion-ltp" "$here/client/dtnc-ion-ltp.c" \
    -L"$ION_PREFIX/lib" -Wl,-rpath,"$ION_PREFIX/lib" \
    -lltp -lici -lpthread -lm
echo "built $here/bin/dtnc-ion-ltp" >&2
