package io.kvoffload;

/**
 * The counters of {@link KvStats}, as JMX sees them: every open engine registers one on the
 * platform MBean server under {@code io.kvoffload:type=KvEngine,store=<store uuid>} and removes it
 * when it closes, so JConsole, VisualVM, a JMX exporter (Prometheus's jmx_exporter, say) or
 * {@code ManagementFactory.getPlatformMBeanServer()} read them without code in the engine. Each
 * attribute read takes a fresh {@link KvEngine#stats()} snapshot.
 */
public interface KvEngineMXBean {
    /** The store's identity (the {@code store} key of the object name). */
    String getStoreUuid();

    String getIoBackend();

    /** Devices serving. */
    int getDevices();

    long getBytesRead();

    long getBytesWritten();

    long getReads();

    long getWrites();

    long getCapacityBytes();

    long getFreeBytes();

    long getChecksumsVerified();

    long getChecksumFailures();

    long getEvictions();

    long getDramBudgetBytes();

    long getDramReservedBytes();

    long getDramInUseBytes();

    int getUnavailableDevices();

    int getUnavailableSequences();

    long getQuarantinedBytes();

    long getFailovers();

    long getRepairs();

    long getRereads();

    /** Committed sequences. */
    int getSequences();
}
