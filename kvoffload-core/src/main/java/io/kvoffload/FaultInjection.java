package io.kvoffload;

import io.kvoffload.internal.util.Checks;

/**
 * Faults to inject into every I/O the engine does, for testing how an application and the library
 * behave when devices misbehave ({@link KvConfig.Builder#faultInjection}); made with
 * {@link #builder(long)}. Each probability applies
 * to each request independently, drawn from {@code seed}, so a run is reproducible for a given
 * request order. Never configure this in production.
 *
 * @param seed the random seed
 * @param eio a request fails with EIO (errno 5); a read's buffer is left garbled
 * @param tornRead a read returns success with its second half garbled (a short or torn transfer)
 * @param bitFlipRead a read returns success with one bit flipped (corruption in flight)
 * @param bitFlipDisk a completed write has one bit flipped on the disk afterwards (media corruption)
 * @param tornWrite a completed write has its second half zeroed on the disk (a lost partial write)
 * @param enospc a write fails with ENOSPC (errno 28)
 * @param latencySpike a batch waits {@code latencySpikeMillis} longer
 * @param latencySpikeMillis the length of a spike
 * @param vanishDevice the device that vanishes (every later request fails with EIO), or -1
 * @param vanishAfterRequests how many requests pass before it vanishes
 * @param onlyDevice the device the per-request faults apply to, or -1 for every device
 * @param limit at most this many per-request faults in all ({@code Long.MAX_VALUE}: no limit), e.g.
 *     1 for a single transient fault
 */
public record FaultInjection(long seed, double eio, double tornRead, double bitFlipRead, double bitFlipDisk,
        double tornWrite, double enospc, double latencySpike, int latencySpikeMillis, int vanishDevice,
        long vanishAfterRequests, int onlyDevice, long limit) {

    public FaultInjection {
        Checks.inRange("eio", eio, 0, 1);
        Checks.inRange("tornRead", tornRead, 0, 1);
        Checks.inRange("bitFlipRead", bitFlipRead, 0, 1);
        Checks.inRange("bitFlipDisk", bitFlipDisk, 0, 1);
        Checks.inRange("tornWrite", tornWrite, 0, 1);
        Checks.inRange("enospc", enospc, 0, 1);
        Checks.inRange("latencySpike", latencySpike, 0, 1);
        Checks.inRange("latencySpikeMillis", latencySpikeMillis, 0, 60_000);
        Checks.inRange("vanishDevice", vanishDevice, -1, 255);
        Checks.inRange("vanishAfterRequests", vanishAfterRequests, 0, Long.MAX_VALUE);
        Checks.inRange("onlyDevice", onlyDevice, -1, 255);
        Checks.inRange("limit", limit, 0, Long.MAX_VALUE);
    }

    /** A builder with no faults at all, drawing from {@code seed}. */
    public static Builder builder(long seed) {
        return new Builder(seed);
    }

    /** Builds a {@link FaultInjection}; every fault is off until set. */
    public static final class Builder {
        private final long seed;
        private double eio;
        private double tornRead;
        private double bitFlipRead;
        private double bitFlipDisk;
        private double tornWrite;
        private double enospc;
        private double latencySpike;
        private int latencySpikeMillis;
        private int vanishDevice = -1;
        private long vanishAfterRequests;
        private int onlyDevice = -1;
        private long limit = Long.MAX_VALUE;

        private Builder(long seed) {
            this.seed = seed;
        }

        public Builder eio(double p) {
            this.eio = p;
            return this;
        }

        public Builder tornRead(double p) {
            this.tornRead = p;
            return this;
        }

        public Builder bitFlipRead(double p) {
            this.bitFlipRead = p;
            return this;
        }

        public Builder bitFlipDisk(double p) {
            this.bitFlipDisk = p;
            return this;
        }

        public Builder tornWrite(double p) {
            this.tornWrite = p;
            return this;
        }

        public Builder enospc(double p) {
            this.enospc = p;
            return this;
        }

        public Builder latencySpikes(double p, int millis) {
            this.latencySpike = p;
            this.latencySpikeMillis = millis;
            return this;
        }

        /** {@code device} fails every request after the first {@code afterRequests} of all devices. */
        public Builder vanishingDevice(int device, long afterRequests) {
            this.vanishDevice = device;
            this.vanishAfterRequests = afterRequests;
            return this;
        }

        /** The per-request faults hit only {@code device} (-1: every device). */
        public Builder onlyOnDevice(int device) {
            this.onlyDevice = device;
            return this;
        }

        /** At most {@code faults} per-request faults in all (1: a single transient fault). */
        public Builder atMost(long faults) {
            this.limit = faults;
            return this;
        }

        /** @throws IllegalArgumentException naming a value out of range */
        public FaultInjection build() {
            return new FaultInjection(seed, eio, tornRead, bitFlipRead, bitFlipDisk, tornWrite, enospc, latencySpike,
                    latencySpikeMillis, vanishDevice, vanishAfterRequests, onlyDevice, limit);
        }
    }
}
