package io.kvoffload.bench.cli;

import io.kvoffload.KvConfig;
import io.kvoffload.bench.TempDirs;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import picocli.CommandLine.Option;

/**
 * The {@code --devices} option (with {@code --backend}) and what it lays out, as the base of
 * {@link DeviceOptions} and {@link ScratchDeviceOptions}: the two differ only in what {@code --dir}
 * means (a root kept afterwards, or where a deleted scratch root goes), so the device count, its
 * {@code ssd<i>} directories and the configuration sized for them are written once, here.
 */
public abstract class DeviceCountOptions extends BackendOptions {

    @Option(names = "--devices", description = "SSD directories (default: ${DEFAULT-VALUE}).")
    public int devices;

    /** A command's own default device count. */
    protected DeviceCountOptions(int devices) {
        this.devices = devices;
    }

    /** The {@code --devices} directories {@code ssd<i>} below {@code root}, created if missing. */
    public List<Path> ssdDirectories(Path root) throws IOException {
        return TempDirs.ssdDirectories(root, devices);
    }

    /**
     * As {@link #config(List)}, with room on each device for {@code bytes} spread over the devices
     * ({@link #capacityFor}).
     */
    public KvConfig.Builder config(List<Path> dirs, long bytes) {
        return config(dirs).deviceCapacityBytes(capacityFor(bytes, devices));
    }

    /**
     * The device capacity the benchmarks give a store of {@code bytes} on {@code devices} devices:
     * three times each device's share, plus 64 MiB, in whole MiB.
     */
    static long capacityFor(long bytes, int devices) {
        return (bytes * 3 / devices + (64L << 20)) & -(1L << 20);
    }
}
