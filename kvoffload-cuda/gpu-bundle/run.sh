#!/usr/bin/env bash
# Runs inside an unpacked GPU bundle (built by kvoffload-cuda/gpu-bundle.sh) on a machine with an
# NVIDIA GPU but no Maven, JDK or network: every kvoffload-cuda test with the GPU required (a skip
# fails), then HbmBench once per view size given. With KVO_MEMCHECK=1 the tests run under CUDA's
# compute-sanitizer (memcheck with leak check: every device access and CUDA call checked, device
# memory left allocated at exit reported); its summary lines are printed and any error fails.
#
#   [KVO_MEMCHECK=1] run.sh [OUT_DIR (default /tmp/kvo-gpu)] [tokens per view ... (default 4096)]
set -uo pipefail
B=$(cd "$(dirname "$0")" && pwd)
O=${1:-/tmp/kvo-gpu}; shift || true
mkdir -p "$O"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv 2>&1 | tee "$O/smi.txt"
J=("$B/jre/bin/java" --enable-native-access=ALL-UNNAMED --add-modules=jdk.incubator.vector -Xmx16g
   -Dkvoffload.requireGpu=true -Dorg.slf4j.simpleLogger.log.io.kvoffload.cuda.HbmBench=info)
L=("$B/junit-platform-console-standalone.jar" execute --disable-banner --disable-ansi-colors
   --class-path "$B/main:$B/test:$(ls "$B"/lib/*.jar | tr '\n' ':')")
rc=0
W=()
if [[ "${KVO_MEMCHECK:-0}" == 1 ]]; then
  cs=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -n1 || true)
  [[ -n "$cs" ]] || { echo "FAIL: KVO_MEMCHECK=1 but compute-sanitizer was not found" >&2; exit 2; }
  W=("$cs" --tool memcheck --leak-check full --target-processes all --error-exitcode 3)
fi
"${W[@]}" "${J[@]}" -jar "${L[@]}" --details=tree --include-classname='.*' --scan-class-path "$B/test" \
  --reports-dir "$O/reports" > "$O/tests.txt" 2>&1 || rc=1
echo "== tests (log: $O/tests.txt)"
grep -E '✘|■|copy hidden|tests (found|successful|failed|aborted|skipped)|ERROR SUMMARY|LEAK SUMMARY' "$O/tests.txt"
grep -q -E '^\[ +0 tests aborted' "$O/tests.txt" || { echo "FAIL: a GPU test was skipped" >&2; rc=1; }
for t in "${@:-4096}"; do
  "${J[@]}" -Dkvoffload.bench.tokens="$t" -Dkvoffload.bench.layers=32 -jar "${L[@]}" \
    --select-class io.kvoffload.cuda.HbmBenchGpu > "$O/bench-$t.txt" 2>&1 || rc=1
  echo "== HbmBench, $t tokens per view"
  grep -E 'HbmBench - ' "$O/bench-$t.txt"
done
exit $rc
