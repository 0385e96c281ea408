/**
 * kvoffload core: the public API ({@code io.kvoffload}), the backend SPI ({@code io.kvoffload.spi}),
 * the selection-strategy SPI and the built-in strategies' options ({@code io.kvoffload.strategy.*}),
 * reference attention and quality metrics ({@code io.kvoffload.attention}), the workload generator
 * and trace format ({@code io.kvoffload.workload}), and the implementation, whose packages are
 * exported only to kvoffload's own modules (the benchmark runs on the class path and needs none).
 * The library's own code never imports {@code io.kvoffload.workload}: the dependency points from the
 * workload tools to the library only.
 */
module io.kvoffload.core {
    requires org.slf4j;
    requires com.fasterxml.jackson.jr.ob;
    requires ejml.core;   // EJML (KVSwap SVD): no Automatic-Module-Name, so the jar file name gives the module name
    requires ejml.ddense;
    requires jdk.unsupported;
    requires jdk.jfr;               // flight-recorder events (internal.obs)
    requires transitive java.management; // the engine's MXBean; KvEngine.mxBeanName() returns an ObjectName
    requires HdrHistogram;          // decoders' latency histograms: no Automatic-Module-Name, named from the jar
    // Optional: with --add-modules jdk.incubator.vector, block scoring's exponentials are vectorised
    // (internal.util.VectorSoftmax); without it the scalar path runs.
    requires static jdk.incubator.vector;

    exports io.kvoffload;
    exports io.kvoffload.spi;
    exports io.kvoffload.strategy;
    exports io.kvoffload.attention;
    exports io.kvoffload.strategy.swarm;
    exports io.kvoffload.strategy.kvswap;
    exports io.kvoffload.strategy.sparf;
    exports io.kvoffload.workload;
    exports io.kvoffload.internal.dram to io.kvoffload.iouring, io.kvoffload.cuda;
    exports io.kvoffload.internal.util to io.kvoffload.iouring, io.kvoffload.cuda;
    exports io.kvoffload.internal.cache to io.kvoffload.cuda;
    exports io.kvoffload.internal.elastic to io.kvoffload.cuda;
    exports io.kvoffload.internal.decode to io.kvoffload.cuda; // ViewAccess.headMasks: the HBM upload

    uses io.kvoffload.spi.IoBackendProvider;
    uses io.kvoffload.spi.DramSlabListener;
    uses io.kvoffload.spi.DeviceTierProvider;
    uses io.kvoffload.spi.RemoteTierProvider;
    uses io.kvoffload.strategy.SelectionStrategy;
    uses io.kvoffload.strategy.StrategyProvider;
    uses io.kvoffload.internal.storage.GroupState.Codec;

    provides io.kvoffload.spi.IoBackendProvider with io.kvoffload.internal.io.PortableIoBackendProvider;
    provides io.kvoffload.internal.storage.GroupState.Codec with io.kvoffload.internal.kvswap.AdapterCodec;
    provides io.kvoffload.strategy.StrategyProvider with io.kvoffload.internal.swarm.SwarmStrategies,
            io.kvoffload.internal.kvswap.KvSwapStrategies, io.kvoffload.internal.baseline.BaselineStrategies,
            io.kvoffload.strategy.sparf.SparFStrategies;
}
