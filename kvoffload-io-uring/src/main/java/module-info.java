/**
 * The io_uring I/O backend for kvoffload: liburing 2.3 bound through the FFM API. Adding this module
 * (or jar) upgrades an engine from the portable backend without code changes; it is found through
 * {@link io.kvoffload.spi.IoBackendProvider}.
 */
module io.kvoffload.iouring {
    requires transitive io.kvoffload.core;
    requires org.slf4j;

    exports io.kvoffload.iouring;

    provides io.kvoffload.spi.IoBackendProvider with io.kvoffload.iouring.IoUringBackendProvider;
}
