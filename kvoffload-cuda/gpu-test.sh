#!/usr/bin/env bash
# Runs kvoffload-cuda's GPU tests and the HBM benchmark (HbmBench, through HbmBenchGpu) in one
# command, on a machine with an NVIDIA GPU and driver. Fails loudly when the GPU tier is
# unavailable: -Dkvoffload.requireGpu=true turns the probe's "skip" into a failure, and a skipped
# GPU test in the reports fails the script too.
#
#   kvoffload-cuda/gpu-test.sh [tokens per layer view, default 4096] [layers, default 32]
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ -z "${JAVA_HOME:-}" ]]; then
  JAVA_HOME=$(ls -d /usr/lib/jvm/temurin-25-jdk-* 2>/dev/null | head -n1 || true)
  export JAVA_HOME
fi
echo "== nvidia-smi"
nvidia-smi || { echo "FAIL: nvidia-smi did not run: no NVIDIA driver or GPU here" >&2; exit 2; }

echo "== GPU tests and HBM benchmark"
./mvnw -B -ntp -pl kvoffload-cuda -am verify -Dkvoffload.requireGpu=true \
  -Dkvoffload.bench.tokens="${1:-4096}" -Dkvoffload.bench.layers="${2:-32}" \
  -Dsurefire.failIfNoSpecifiedTests=false -Dorg.slf4j.simpleLogger.log.io.kvoffload.cuda.HbmBench=info \
  -Dtest='GpuTierTest,EngineGpuConfigTest,CudaProbeTest,HbmBenchGpu'

reports=kvoffload-cuda/target/surefire-reports
for t in GpuTierTest HbmBenchGpu; do
  f="$reports/TEST-io.kvoffload.cuda.$t.xml"
  [[ -f "$f" ]] || { echo "FAIL: no report for $t" >&2; exit 2; }
  if grep -q '<skipped' "$f"; then echo "FAIL: $t was skipped; see $f" >&2; exit 2; fi
done
echo "== GPU tests passed; benchmark figures are logged above ([main] INFO io.kvoffload.cuda.HbmBench)"
