package io.kvoffload.bench.cli;

import io.kvoffload.bench.TempDirs;
import java.io.IOException;
import java.nio.file.Path;
import picocli.CommandLine.Option;

/**
 * The device options of the benchmarks that measure on scratch SSD directories ({@code --devices},
 * {@code --backend}, {@code --dir}), as a picocli mixin: unlike {@link DeviceOptions}, {@code --dir}
 * only says where a new temporary root goes, and the run deletes that root afterwards. Four devices,
 * {@code @Mixin ScratchDeviceOptions store = new ScratchDeviceOptions();}.
 */
public final class ScratchDeviceOptions extends DeviceCountOptions {

    @Option(names = "--dir", description = "Directory for the SSD directories (default: the temp directory; must"
            + " support O_DIRECT, so not tmpfs).")
    public Path dir;

    /** Four devices. */
    public ScratchDeviceOptions() {
        super(4);
    }

    /** A new, empty root named {@code prefix…} under {@code --dir}; the caller deletes it. */
    public Path scratch(String prefix) throws IOException {
        return TempDirs.createUnder(dir, prefix);
    }
}
