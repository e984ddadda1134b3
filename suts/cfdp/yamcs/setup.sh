#!/usr/bin/env bash
# Idempotent set-up of Yamcs 5.13.2 for suts/cfdp/yamcs/harness.py: copies
# org.yamcs:yamcs-core:5.13.2 and its runtime dependencies (pom.xml) from
# Maven Central into suts/cfdp/yamcs/lib/ (42 jars, ~47 MB). Needs java (17+) and
# mvn. Safe to run again: it does nothing when lib/ already holds the jar.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
lib="$here/lib"
version="5.13.2"
core="$lib/yamcs-core-$version.jar"

for tool in java mvn; do
  command -v "$tool" >/dev/null 2>&1 || {
    echo "yamcs: $tool not found (apt-get install default-jdk-headless maven)" >&2
    exit 1
  }
done

if [ -f "$core" ] && [ -f "$lib/.complete" ]; then
  echo "yamcs: Yamcs $version already in $lib ($(ls "$lib"/*.jar | wc -l) jars)"
  exit 0
fi

echo "yamcs: copying org.yamcs:yamcs-core:$version and its dependencies into $lib"
rm -f "$lib/.complete"
mvn -q -B -Dstyle.color=never -f "$here/pom.xml" dependency:copy-dependencies -DoutputDirectory="$lib" \
  -DincludeScope=runtime
test -f "$core" || { echo "yamcs: $core missing after mvn" >&2; exit 1; }
touch "$lib/.complete"
echo "yamcs: installed $(ls "$lib"/*.jar | wc -l) jars ($(du -sh "$lib" | cut -f1)) in $lib"
