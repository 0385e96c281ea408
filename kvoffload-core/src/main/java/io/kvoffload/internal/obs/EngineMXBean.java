package io.kvoffload.internal.obs;

import io.kvoffload.KvEngineMXBean;
import io.kvoffload.KvStats;
import java.lang.management.ManagementFactory;
import java.util.function.IntSupplier;
import java.util.function.Supplier;
import java.util.function.ToLongFunction;
import javax.management.JMException;
import javax.management.MBeanServer;
import javax.management.ObjectName;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * An engine's {@link KvEngineMXBean}, registered on the platform MBean server for the engine's
 * lifetime. Registration failing (a security manager, a name taken) costs the JMX view only: it
 * is logged and the engine opens anyway.
 */
public final class EngineMXBean implements KvEngineMXBean, AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(EngineMXBean.class);
    private final String storeUuid;
    private final Supplier<KvStats> stats;
    private final IntSupplier sequences;
    private final ObjectName name;
    private boolean registered;

    private EngineMXBean(String storeUuid, Supplier<KvStats> stats, IntSupplier sequences) {
        this.storeUuid = storeUuid;
        this.stats = stats;
        this.sequences = sequences;
        this.name = objectName(storeUuid);
    }

    /** The name an engine over the store {@code storeUuid} registers under. */
    public static ObjectName objectName(String storeUuid) {
        try {
            return new ObjectName("io.kvoffload", new java.util.Hashtable<>(java.util.Map.of("type", "KvEngine",
                    "store", ObjectName.quote(storeUuid))));
        } catch (JMException e) {
            throw new IllegalArgumentException("storeUuid = '" + storeUuid + "' makes no valid ObjectName", e);
        }
    }

    /** Creates and registers the bean of an engine. */
    public static EngineMXBean register(String storeUuid, Supplier<KvStats> stats, IntSupplier sequences) {
        EngineMXBean b = new EngineMXBean(storeUuid, stats, sequences);
        try {
            ManagementFactory.getPlatformMBeanServer().registerMBean(b, b.name);
            b.registered = true;
        } catch (JMException | RuntimeException e) {
            LOG.warn("could not register the engine's MXBean {}: {}", b.name, e.toString());
        }
        return b;
    }

    public ObjectName name() {
        return name;
    }

    /** Unregisters the bean. */
    @Override
    public synchronized void close() {
        if (!registered) {
            return;
        }
        registered = false;
        MBeanServer server = ManagementFactory.getPlatformMBeanServer();
        try {
            server.unregisterMBean(name);
        } catch (JMException e) {
            LOG.warn("could not unregister the engine's MXBean {}: {}", name, e.toString());
        }
    }

    @Override
    public String getStoreUuid() {
        return storeUuid;
    }

    @Override
    public String getIoBackend() {
        return stats.get().ioBackend();
    }

    @Override
    public int getDevices() {
        return stats.get().devices().size();
    }

    @Override
    public long getBytesRead() {
        return stats.get().totalBytesRead();
    }

    @Override
    public long getBytesWritten() {
        return stats.get().totalBytesWritten();
    }

    @Override
    public long getReads() {
        return deviceSum(KvStats.Device::reads);
    }

    @Override
    public long getWrites() {
        return deviceSum(KvStats.Device::writes);
    }

    @Override
    public long getCapacityBytes() {
        return deviceSum(KvStats.Device::capacityBytes);
    }

    @Override
    public long getFreeBytes() {
        return deviceSum(KvStats.Device::freeBytes);
    }

    @Override
    public long getChecksumsVerified() {
        return stats.get().checksumsVerified();
    }

    @Override
    public long getChecksumFailures() {
        return stats.get().checksumFailures();
    }

    @Override
    public long getEvictions() {
        return stats.get().evictions();
    }

    @Override
    public long getDramBudgetBytes() {
        return stats.get().dramBudgetBytes();
    }

    @Override
    public long getDramReservedBytes() {
        return stats.get().dramReservedBytes();
    }

    @Override
    public long getDramInUseBytes() {
        return stats.get().dramInUseBytes();
    }

    @Override
    public int getUnavailableDevices() {
        return stats.get().unavailableDevices().size();
    }

    @Override
    public int getUnavailableSequences() {
        return stats.get().unavailableSequences().size();
    }

    @Override
    public long getQuarantinedBytes() {
        return stats.get().quarantinedBytes();
    }

    @Override
    public long getFailovers() {
        return stats.get().failovers();
    }

    @Override
    public long getRepairs() {
        return stats.get().repairs();
    }

    @Override
    public long getRereads() {
        return stats.get().rereads();
    }

    @Override
    public int getSequences() {
        return sequences.getAsInt();
    }

    /** {@code counter} summed over the devices of a fresh snapshot. */
    private long deviceSum(ToLongFunction<KvStats.Device> counter) {
        return stats.get().devices().stream().mapToLong(counter).sum();
    }
}
