package io.kvoffload.bench.scaling;

import picocli.CommandLine.Option;

/** {@code scaling}'s decode-like read mix: batches of random reads of 4 KiB multiples, several batches in flight. */
final class ReadMixOptions {
    @Option(names = "--batch", defaultValue = "64", description = "Reads per batch (default: ${DEFAULT-VALUE}).")
    int batchSize;

    @Option(names = "--inflight", defaultValue = "4",
            description = "Batches in flight; queue depth = batch × inflight (default: ${DEFAULT-VALUE}).")
    int inflight;

    @Option(names = "--min-kib", defaultValue = "4", description = "Smallest read in KiB (default: ${DEFAULT-VALUE}).")
    int minKib;

    @Option(names = "--max-kib", defaultValue = "64", description = "Largest read in KiB (default: ${DEFAULT-VALUE}).")
    int maxKib;

    void validate() {
        if (batchSize < 1 || batchSize > 4096) {
            throw new IllegalArgumentException("--batch = " + batchSize + " is out of range; allowed: 1..4096");
        }
        if (inflight < 1 || inflight > 64) {
            throw new IllegalArgumentException("--inflight = " + inflight + " is out of range; allowed: 1..64");
        }
        if (minKib < 4 || maxKib > 1024 || minKib > maxKib || minKib % 4 != 0 || maxKib % 4 != 0) {
            throw new IllegalArgumentException("--min-kib = " + minKib + ", --max-kib = " + maxKib
                    + " are out of range; allowed: multiples of 4 with 4 <= min <= max <= 1024");
        }
    }

    /** Reads in flight: batch × inflight. */
    int queueDepth() {
        return batchSize * inflight;
    }

    int minBytes() {
        return minKib << 10;
    }

    int maxBytes() {
        return maxKib << 10;
    }
}
