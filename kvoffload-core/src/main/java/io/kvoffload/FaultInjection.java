package io.kvoffload;

import io.kvoffload.internal.util.Checks;

/**
 * Faults to inject into every I/O the engine does, for testing how an application and the library
 * behave when devices misbehave ({@link KvConfig.Builder#faultInjection}). Each probability applies
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

    /** No faults at all; a starting point for the {@code with} methods. */
    public static FaultInjection none(long seed) {
        return new FaultInjection(seed, 0, 0, 0, 0, 0, 0, 0, 0, -1, 0, -1, Long.MAX_VALUE);
    }

    public FaultInjection withEio(double p) {
        return new FaultInjection(seed, p, tornRead, bitFlipRead, bitFlipDisk, tornWrite, enospc, latencySpike,
                latencySpikeMillis, vanishDevice, vanishAfterRequests, onlyDevice, limit);
    }

    public FaultInjection withTornRead(double p) {
        return new FaultInjection(seed, eio, p, bitFlipRead, bitFlipDisk, tornWrite, enospc, latencySpike,
                latencySpikeMillis, vanishDevice, vanishAfterRequests, onlyDevice, limit);
    }

    public FaultInjection withBitFlipRead(double p) {
        return new FaultInjection(seed, eio, tornRead, p, bitFlipDisk, tornWrite, enospc, latencySpike,
                latencySpikeMillis, vanishDevice, vanishAfterRequests, onlyDevice, limit);
    }

    public FaultInjection withBitFlipDisk(double p) {
        return new FaultInjection(seed, eio, tornRead, bitFlipRead, p, tornWrite, enospc, latencySpike,
                latencySpikeMillis, vanishDevice, vanishAfterRequests, onlyDevice, limit);
    }

    public FaultInjection withTornWrite(double p) {
        return new FaultInjection(seed, eio, tornRead, bitFlipRead, bitFlipDisk, p, enospc, latencySpike,
                latencySpikeMillis, vanishDevice, vanishAfterRequests, onlyDevice, limit);
    }

    public FaultInjection withEnospc(double p) {
        return new FaultInjection(seed, eio, tornRead, bitFlipRead, bitFlipDisk, tornWrite, p, latencySpike,
                latencySpikeMillis, vanishDevice, vanishAfterRequests, onlyDevice, limit);
    }

    public FaultInjection withLatencySpikes(double p, int millis) {
        return new FaultInjection(seed, eio, tornRead, bitFlipRead, bitFlipDisk, tornWrite, enospc, p, millis,
                vanishDevice, vanishAfterRequests, onlyDevice, limit);
    }

    public FaultInjection withVanishingDevice(int device, long afterRequests) {
        return new FaultInjection(seed, eio, tornRead, bitFlipRead, bitFlipDisk, tornWrite, enospc, latencySpike,
                latencySpikeMillis, device, afterRequests, onlyDevice, limit);
    }

    /** The per-request faults hit only {@code device} (-1: every device). */
    public FaultInjection onlyOnDevice(int device) {
        return new FaultInjection(seed, eio, tornRead, bitFlipRead, bitFlipDisk, tornWrite, enospc, latencySpike,
                latencySpikeMillis, vanishDevice, vanishAfterRequests, device, limit);
    }

    /** At most {@code faults} per-request faults in all (1: a single transient fault). */
    public FaultInjection atMost(long faults) {
        return new FaultInjection(seed, eio, tornRead, bitFlipRead, bitFlipDisk, tornWrite, enospc, latencySpike,
                latencySpikeMillis, vanishDevice, vanishAfterRequests, onlyDevice, faults);
    }
}
