package io.kvoffload.bench.cli;

import io.kvoffload.KvConfig;
import io.kvoffload.bench.TempDirs;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import picocli.CommandLine.Option;

/**
 * The device options of the benchmarks that measure on scratch SSD directories ({@code --devices},
 * {@code --backend}, {@code --dir}), as a picocli mixin: unlike {@link DeviceOptions}, {@code --dir}
 * only says where a new temporary root goes, and the run deletes that root afterwards. Four devices,
 * {@code @Mixin ScratchDeviceOptions store = new ScratchDeviceOptions();}.
 */
public final class ScratchDeviceOptions extends BackendOptions {

    @Option(names = "--devices", description = "SSD directories (default: ${DEFAULT-VALUE}).")
    public int devices = 4;

    @Option(names = "--dir", description = "Directory for the SSD directories (default: the temp directory; must"
            + " support O_DIRECT, so not tmpfs).")
    public Path dir;

    /** A new, empty root named {@code prefix…} under {@code --dir}; the caller deletes it. */
    public Path scratch(String prefix) throws IOException {
        return TempDirs.createUnder(dir, prefix);
    }

    /** The {@code --devices} directories {@code ssd<i>} below {@code root}, created if missing. */
    public List<Path> ssdDirectories(Path root) throws IOException {
        return TempDirs.ssdDirectories(root, devices);
    }

    /**
     * A configuration builder over {@code dirs} with the {@code --backend} chosen and room on each
     * device for {@code bytes} spread over the devices ({@link DeviceOptions#capacityFor}).
     */
    public KvConfig.Builder config(List<Path> dirs, long bytes) {
        return config(dirs).deviceCapacityBytes(DeviceOptions.capacityFor(bytes, devices));
    }
}
