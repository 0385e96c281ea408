#!/usr/bin/env bash
# Builds a self-contained bundle of kvoffload-cuda's GPU tests and HbmBench for a GPU machine that
# has an NVIDIA driver but no Maven, JDK or network (a lent cloud GPU, a locked-down node): a jlink'd
# Java 25 runtime, the test class path's jars, the test classes and JUnit's console launcher, with
# gpu-bundle/run.sh as its entry point. About 45 MB, xz-compressed.
#
#   kvoffload-cuda/gpu-bundle.sh [OUT.tar.xz (default kvoffload-cuda/target/gpu-bundle.tar.xz)]
#   # there:  mkdir b && tar -C b -xJf gpu-bundle.tar.xz && b/run.sh /tmp/out 4096 32768
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(realpath -m "${1:-kvoffload-cuda/target/gpu-bundle.tar.xz}")
if [[ -z "${JAVA_HOME:-}" ]]; then
  JAVA_HOME=$(ls -d /usr/lib/jvm/temurin-25-jdk-* 2>/dev/null | head -n1 || true)
fi
export JAVA_HOME PATH="$JAVA_HOME/bin:$PATH"
work=kvoffload-cuda/target/gpu-bundle
rm -rf "$work" && mkdir -p "$work/lib"
./mvnw -B -ntp -q -pl kvoffload-cuda -am install -DskipTests
# JUnit 5.x.y runs on the JUnit Platform 1.x.y: the console launcher of the parent pom's JUnit.
junit=$(./mvnw -B -ntp -q help:evaluate -Dexpression=junit.version -DforceStdout)
console=org.junit.platform:junit-platform-console-standalone:1.${junit#5.}
./mvnw -B -ntp -q -pl kvoffload-cuda test-compile dependency:build-classpath -Dmdep.includeScope=test \
  -Dmdep.outputFile="$PWD/$work/classpath.txt"
./mvnw -B -ntp -q dependency:copy -Dartifact="$console" -DoutputDirectory="$PWD/$work" -Dmdep.stripVersion=true
# The console launcher brings its own JUnit Platform and Jupiter: only the other jars are copied.
tr ':' '\n' < "$work/classpath.txt" | grep -v -E '/(junit|opentest4j|apiguardian)' | xargs -I{} cp {} "$work/lib/"
cp -r kvoffload-cuda/target/classes "$work/main"
cp -r kvoffload-cuda/target/test-classes "$work/test"
cp kvoffload-cuda/gpu-bundle/run.sh "$work/"
"$JAVA_HOME/bin/jlink" --add-modules java.base,java.logging,java.management,java.xml,jdk.jfr,jdk.unsupported,jdk.incubator.vector \
  --strip-debug --no-header-files --no-man-pages --compress=zip-9 --output "$work/jre" 2>/dev/null
rm "$work/classpath.txt"
tar -C "$work" -cJf "$out" .
echo "bundle: $out ($(du -h "$out" | cut -f1))"
