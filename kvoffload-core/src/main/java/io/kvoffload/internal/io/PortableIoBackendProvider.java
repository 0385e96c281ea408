package io.kvoffload.internal.io;

import io.kvoffload.spi.Availability;
import io.kvoffload.spi.IoBackend;
import io.kvoffload.spi.IoBackendProvider;
import io.kvoffload.spi.IoDevice;
import io.kvoffload.spi.IoOptions;
import java.io.IOException;
import java.util.List;

/** The backend that runs everywhere: FileChannel positional I/O on a few threads per device. */
public final class PortableIoBackendProvider implements IoBackendProvider {
    public static final String NAME = "portable";

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public int priority() {
        return 0;
    }

    @Override
    public Availability probe() {
        return Availability.yes("FileChannel positional I/O is always available");
    }

    @Override
    public IoBackend open(List<IoDevice> devices, IoOptions options) throws IOException {
        return new PortableIoBackend(devices, options);
    }
}
