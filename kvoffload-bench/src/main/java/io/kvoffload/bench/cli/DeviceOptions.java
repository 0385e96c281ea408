package io.kvoffload.bench.cli;

import io.kvoffload.KvConfig;
import io.kvoffload.bench.TempDirs;
import java.io.IOException;
import java.nio.file.Path;
import picocli.CommandLine.Option;

/**
 * The device options of the commands that lay their SSD directories out under one root
 * ({@code --devices}, {@code --dir}, {@code --backend}), as a picocli mixin, with the set-up they
 * share: the root (the named {@code --dir}, kept afterwards, or a temporary directory, deleted by
 * {@link #release}), its {@code ssd<i>} directories and the {@link KvConfig} builder over them. A
 * command picks its own device count by initialising the field,
 * {@code @Mixin DeviceOptions store = new DeviceOptions(3);}.
 */
public final class DeviceOptions extends DeviceCountOptions {

    @Option(names = "--dir", description = "Where the device directories go (default: a temporary directory).")
    public Path dir;

    /** Four devices by default. */
    public DeviceOptions() {
        this(4);
    }

    /** A command's own default device count. */
    public DeviceOptions(int devices) {
        super(devices);
    }

    /** The run's root directory: {@code --dir} (created if missing) or a new one named {@code prefix…}. */
    public Path root(String prefix) throws IOException {
        return TempDirs.givenOrTemp(dir, prefix);
    }

    /** Deletes {@code root} when it is a temporary one; a {@code --dir} keeps what the run left. */
    public void release(Path root) throws IOException {
        if (dir == null) {
            TempDirs.deleteRecursively(root);
        }
    }
}
