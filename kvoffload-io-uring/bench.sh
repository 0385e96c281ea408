#!/usr/bin/env bash
# Runs IoUringThroughputBench (src/test/java): random reads through the portable backend, the
# io_uring backend and fio on the same files, and prints the markdown tables of docs/io-uring.md.
#
#   kvoffload-io-uring/bench.sh [mode] [target] [seconds-per-run] [file-MiB] [rounds]
#     mode:   throughput (default) | topology | sharing | fixed | all
#     (-Dkvo.bench.depths=32,64 and -Dkvo.bench.portable=false in BENCH_JAVA_OPTS narrow a throughput run)
#     target: directory for the test files (default /tmp/kvo-bench; needs O_DIRECT, i.e. not tmpfs),
#             or a block device used as it is, e.g. a loop device over a tmpfs file (CPU-bound, stable):
#               dd if=/dev/urandom of=/dev/shm/kvo.img bs=1M count=1024; losetup -f --show /dev/shm/kvo.img
#
# Needs: a JDK >= 25 (JAVA_HOME or /usr/lib/jvm), liburing2 and fio (apt-get install liburing2 fio).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
mode="${1:-throughput}"; dir="${2:-/tmp/kvo-bench}"; secs="${3:-2}"; mib="${4:-1024}"; rounds="${5:-3}"

if [[ -z "${JAVA_HOME:-}" ]]; then
  for d in /usr/lib/jvm/temurin-25*/ /usr/lib/jvm/*25*/; do [[ -x "$d/bin/java" ]] && JAVA_HOME="${d%/}" && break; done
fi
export JAVA_HOME
command -v fio >/dev/null || { echo "bench.sh: fio is not installed (apt-get install fio)" >&2; exit 2; }

cd "$root"
./mvnw -B -q -ntp -pl kvoffload-core,kvoffload-io-uring -am install -DskipTests
./mvnw -B -q -ntp -pl kvoffload-io-uring test-compile dependency:build-classpath \
  -Dmdep.outputFile="$here/target/bench.classpath" -Dmdep.includeScope=test
cp="$here/target/test-classes:$here/target/classes:$(cat "$here/target/bench.classpath")"
run() { "$JAVA_HOME/bin/java" --enable-native-access=ALL-UNNAMED -Xmx1g ${BENCH_JAVA_OPTS:-} -Dorg.slf4j.simpleLogger.defaultLogLevel=warn \
  -cp "$cp" io.kvoffload.iouring.IoUringThroughputBench "$1" "$dir" "$secs" "$mib" "$rounds"; }
if [[ "$mode" == all ]]; then
  for m in topology sharing fixed throughput; do echo "## $m"; run "$m"; echo; done
else
  run "$mode"
fi
