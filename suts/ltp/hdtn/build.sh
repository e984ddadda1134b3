#!/bin/sh
# Builds our client, bin/dtnc-hdtn-ltp, on HDTN's LTP library from an HDTN
# source tree (HDTN_SRC). The build folder is HDTN_BUILD, by default the
# repository's .tools/hdtn/build: once it holds a build, HDTN_SRC is needed no
# more. `make peers HDTN_SRC=path/to/HDTN` runs this.
#
# HDTN is in no package registry: its source is github.com/nasa/HDTN (tested:
# tag v1.3.1, commit 5d33d33f). It needs cmake, a C++17 compiler, Boost 1.66 or
# later (system, date_time, filesystem, timer, thread, regex, program_options,
# unit_test_framework, iostreams, random, log) and ZeroMQ's headers:
#   apt-get install cmake g++ libzmq3-dev libboost-{system,date-time,filesystem,
#     timer,thread,regex,program-options,test,iostreams,random,log}-dev
# Only HDTN's LTP library and what it links are built: about 10 minutes on 2
# cores. HDTN's web interface, OpenSSL and BPSec are switched off (LTP needs
# none), and so is RDSEED (not every CPU has it).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
HDTN_BUILD=${HDTN_BUILD:-$(cd "$here/../../.." && pwd)/.tools/hdtn/build}
if [ -n "${HDTN_SRC:-}" ]; then
    [ -f "$HDTN_SRC/common/ltp/include/LtpUdpEngineManager.h" ] ||
        { echo "HDTN_SRC=$HDTN_SRC: not an HDTN source tree (no common/ltp)" >&2; exit 1; }
    for tool in cmake make g++; do
        command -v $tool >/dev/null || { echo "$tool not found: apt-get install cmake g++" >&2; exit 1; }
    done
    for h in boost/version.hpp zmq.hpp; do
        [ -f "/usr/include/$h" ] || {
            echo "/usr/include/$h not found: apt-get install libzmq3-dev and Boost's -dev packages (see build.sh)" >&2
            exit 1
        }
    done
    mkdir -p "$HDTN_BUILD"
    echo "configuring HDTN's LTP library from $HDTN_SRC in $HDTN_BUILD" >&2
    cmake -S "$HDTN_SRC" -B "$HDTN_BUILD" -DCMAKE_PROJECT_HDTN_INCLUDE="$here/client/dtnc-hdtn-ltp.cmake" \
        -DCMAKE_BUILD_TYPE=Release -DUSE_WEB_INTERFACE=OFF -DENABLE_OPENSSL_SUPPORT=OFF \
        -DENABLE_BPSEC=OFF -DLTP_RNG_USE_RDSEED=OFF >"$HDTN_BUILD.configure.log" 2>&1 ||
        { echo "cmake failed: see $HDTN_BUILD.configure.log" >&2; exit 1; }
fi
if [ ! -f "$HDTN_BUILD/CMakeCache.txt" ]; then
    echo "no HDTN build in HDTN_BUILD=$HDTN_BUILD: build it with" \
        "\`make peers HDTN_SRC=path/to/HDTN\` (docs/implementers.md)" >&2
    exit 1
fi
echo "building dtnc-hdtn-ltp and HDTN's LTP library (about 10 minutes the first time)" >&2
cmake --build "$HDTN_BUILD" --target dtnc-hdtn-ltp -j"$(nproc)" >"$HDTN_BUILD.make.log" 2>&1 ||
    { echo "build failed: see $HDTN_BUILD.make.log" >&2; exit 1; }
mkdir -p "$here/bin"
cp "$HDTN_BUILD/dtnc-hdtn-ltp" "$here/bin/dtnc-hdtn-ltp"
echo "built $here/bin/dtnc-hdtn-ltp" >&2
