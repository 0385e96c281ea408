package io.kvoffload.bench.cli;

import io.kvoffload.DeviceModelSpec;
import java.util.Arrays;
import picocli.CommandLine.Option;

/**
 * The SSD counts a benchmark measures through the device model ({@code --ssd-counts}), as a picocli
 * mixin of {@code compare} (the base of its scaling options) and {@code placement}, with the model
 * they share: high-end SSDs scaled for the largest count, so that every count is simulated alike.
 */
public class SimulatedSsdOptions {

    @Option(names = "--ssd-counts", split = ",", defaultValue = "1,2,4,8",
            description = "SSD counts of the simulated runs; empty for none (default: ${DEFAULT-VALUE}).")
    public int[] ssdCounts;

    /** The largest SSD count (1 with none), the one the device model is scaled for. */
    public int largest() {
        return Arrays.stream(ssdCounts).reduce(1, Math::max);
    }

    /** The simulated SSDs: {@link DeviceModelSpec#highEnd()} scaled for {@link #largest()} devices. */
    public DeviceModelSpec model() {
        return DeviceModelSpec.highEnd().withScaleDevices(largest());
    }
}
