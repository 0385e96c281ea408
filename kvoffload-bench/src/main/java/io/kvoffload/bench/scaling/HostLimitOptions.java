package io.kvoffload.bench.scaling;

import picocli.CommandLine.Option;

/** The host (the one disk) limits {@code scaling}'s device model is scaled to: given, or measured at the start. */
final class HostLimitOptions {
    @Option(names = "--host-bandwidth", description = "The disk's bandwidth for scaling the model, e.g. 1400MiB"
            + " (per second). Default: measured at the start.")
    String hostBandwidth;

    @Option(names = "--host-iops", description = "The disk's IOPS for scaling the model. Default: measured.")
    Long hostIops;

    @Option(names = "--calibrate-seconds", defaultValue = "1.0",
            description = "Time of each host measurement (4 KiB and 64 KiB reads) (default: ${DEFAULT-VALUE}).")
    double calibrateSeconds;

    void validate() {
        if (!(calibrateSeconds > 0 && calibrateSeconds <= 60)) {
            throw new IllegalArgumentException("--calibrate-seconds = " + calibrateSeconds
                    + " is out of range; allowed: (0, 60]");
        }
    }
}
