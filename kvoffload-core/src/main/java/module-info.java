/**
 * kvoffload core: the public API ({@code io.kvoffload}), the backend SPI ({@code io.kvoffload.spi})
 * and the implementation, whose packages are exported only to kvoffload's own modules.
 */
module io.kvoffload.core {
    requires org.slf4j;
    requires com.fasterxml.jackson.jr.ob;
    requires ejml.core;   // EJML (KVSwap SVD): no Automatic-Module-Name, so the jar file name gives the module name
    requires ejml.ddense;
    requires jdk.unsupported;

    exports io.kvoffload;
    exports io.kvoffload.spi;
    exports io.kvoffload.strategy;
    exports io.kvoffload.strategy.swarm;
    exports io.kvoffload.strategy.kvswap;
    exports io.kvoffload.workload;
    exports io.kvoffload.internal.dram to io.kvoffload.iouring, io.kvoffload.cuda, io.kvoffload.bench;
    exports io.kvoffload.internal.util to io.kvoffload.iouring, io.kvoffload.cuda, io.kvoffload.bench;
    exports io.kvoffload.internal.cache to io.kvoffload.cuda;
    exports io.kvoffload.internal.swarm to io.kvoffload.bench;
    exports io.kvoffload.internal.baseline to io.kvoffload.bench;
    exports io.kvoffload.internal.kvswap to io.kvoffload.bench;
    exports io.kvoffload.internal.io to io.kvoffload.bench;

    uses io.kvoffload.spi.IoBackendProvider;
    uses io.kvoffload.spi.DramSlabListener;
    uses io.kvoffload.spi.DeviceTierProvider;
    uses io.kvoffload.strategy.SelectionStrategy;

    provides io.kvoffload.spi.IoBackendProvider with io.kvoffload.internal.io.PortableIoBackendProvider;
}
