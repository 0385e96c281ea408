package io.kvoffload.bench.cli;

import io.kvoffload.KvConfig;
import java.nio.file.Path;
import java.util.List;
import picocli.CommandLine.Option;

/**
 * The {@code --backend} option of the mixins that open an engine on SSD directories
 * ({@link ReportOptions}, and through {@link DeviceCountOptions} {@link DeviceOptions} and
 * {@link ScratchDeviceOptions}), with the configuration builder it picks: they extend this class
 * (picocli reads the options a mixin inherits), so the flag and its default are declared once.
 */
public abstract class BackendOptions {

    @Option(names = "--backend", description = "I/O backend (default: ${DEFAULT-VALUE}).")
    public String backend = "auto";

    /** A configuration builder over {@code dirs} with the {@code --backend} chosen. */
    public KvConfig.Builder config(List<Path> dirs) {
        return KvConfig.builder().ssdDirectories(dirs).ioBackend(backend);
    }
}
