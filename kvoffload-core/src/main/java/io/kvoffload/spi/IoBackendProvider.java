package io.kvoffload.spi;

import java.io.IOException;
import java.util.List;

/**
 * Factory for an I/O backend, found through {@link java.util.ServiceLoader}. The engine opens the
 * available provider with the highest {@link #priority()} unless the configuration names one.
 */
public interface IoBackendProvider {
    /** Short name used in configuration, e.g. {@code "portable"} or {@code "io_uring"}. */
    String name();

    /** Higher wins when the configuration says {@code auto}. The portable backend has 0. */
    int priority();

    /** Whether this backend can run here; cheap and side-effect free. */
    Availability probe();

    /** Opens the backend over the given devices. */
    IoBackend open(List<IoDevice> devices, IoOptions options) throws IOException;
}
