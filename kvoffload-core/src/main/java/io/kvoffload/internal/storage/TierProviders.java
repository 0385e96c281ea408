package io.kvoffload.internal.storage;

import io.kvoffload.KvConfig;
import io.kvoffload.KvException;
import io.kvoffload.internal.dram.DramPool;
import io.kvoffload.internal.dram.DramSlot;
import io.kvoffload.spi.Availability;
import io.kvoffload.spi.DeviceTier;
import io.kvoffload.spi.DeviceTierOptions;
import io.kvoffload.spi.DeviceTierProvider;
import io.kvoffload.spi.HostSlots;
import io.kvoffload.spi.IoBackend;
import io.kvoffload.spi.IoBackendProvider;
import io.kvoffload.spi.IoDevice;
import io.kvoffload.spi.IoOptions;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.ServiceLoader;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The {@link Store}'s pluggable tiers, found through {@link ServiceLoader}: the I/O backend the
 * configuration names (or the highest-priority available one) and the optional device (GPU) tier.
 */
final class TierProviders {
    private static final Logger LOG = LoggerFactory.getLogger(TierProviders.class);

    private TierProviders() {
    }

    /**
     * Opens the device tier the configuration asks for: none for {@code gpu = off}; the first
     * available provider for {@code auto} (none, with the reasons logged, when no provider works);
     * for {@code on}, the first available provider or a {@link KvException} naming every reason.
     */
    static DeviceTier openDeviceTier(KvConfig config, DramPool dram) {
        if (config.gpu() == KvConfig.Gpu.OFF) {
            return null;
        }
        List<String> reasons = new ArrayList<>();
        for (DeviceTierProvider p : ServiceLoader.load(DeviceTierProvider.class)) {
            Availability a = p.probe();
            if (!a.available()) {
                reasons.add(p.name() + ": " + a.reason());
                continue;
            }
            DeviceTier t = p.open(new DeviceTierOptions(config.gpuDevice(), config.gpuCacheBudgetBytes()),
                    dramSlots(dram));
            LOG.info("device tier {} ({})", p.name(), t.describe());
            return t;
        }
        String why = reasons.isEmpty()
                ? "no device tier provider on the class path (add kvoffload-cuda)"
                : String.join("; ", reasons);
        if (config.gpu() == KvConfig.Gpu.ON) {
            throw new KvException("gpu = on but no GPU tier is available here: " + why);
        }
        LOG.info("running without a GPU tier: {}", why);
        return null;
    }

    private static HostSlots dramSlots(DramPool dram) {
        return bytes -> {
            DramSlot slot = dram.acquire(bytes);
            return new HostSlots.Lease() {
                private boolean closed;

                @Override
                public java.lang.foreign.MemorySegment segment() {
                    return slot.segment();
                }

                @Override
                public int slabId() {
                    return slot.slabId();
                }

                @Override
                public synchronized void close() {
                    if (!closed) {
                        closed = true;
                        dram.release(slot);
                    }
                }
            };
        };
    }

    static IoBackend openBackend(KvConfig config, List<DevicePool> devices) throws IOException {
        List<IoBackendProvider> providers = new ArrayList<>();
        for (IoBackendProvider p : ServiceLoader.load(IoBackendProvider.class)) {
            providers.add(p);
        }
        providers.sort(Comparator.comparingInt(IoBackendProvider::priority).reversed());
        List<IoDevice> ioDevices = devices.stream()
                .map(d -> new IoDevice(d.index(), d.poolFile(), d.sizeBytes(), d.alignment()))
                .toList();
        IoOptions options = new IoOptions(config.directIo(), config.queueDepth(), config.ioThreadsPerDevice());
        String wanted = config.ioBackend();
        if (!KvConfig.AUTO.equals(wanted)) {
            for (IoBackendProvider p : providers) {
                if (p.name().equals(wanted)) {
                    Availability a = p.probe();
                    if (!a.available()) {
                        throw new KvException("ioBackend = '" + wanted + "' is not available here: " + a.reason());
                    }
                    LOG.info("I/O backend {} (configured)", wanted);
                    return p.open(ioDevices, options);
                }
            }
            throw new IllegalArgumentException("ioBackend = '" + wanted + "' is unknown; allowed: 'auto' or one of "
                    + providers.stream().map(IoBackendProvider::name).toList());
        }
        IOException lastFailure = null;
        for (IoBackendProvider p : providers) {
            Availability a = p.probe();
            if (!a.available()) {
                LOG.info("I/O backend {} not available: {}", p.name(), a.reason());
                continue;
            }
            try {
                IoBackend b = p.open(ioDevices, options);
                LOG.info("I/O backend {} ({})", p.name(), a.reason());
                return b;
            } catch (IOException | RuntimeException e) {
                LOG.warn("I/O backend {} failed to open, trying the next: {}", p.name(), e.toString());
                lastFailure = e instanceof IOException io ? io : new IOException(e);
            }
        }
        throw new IOException("no I/O backend could be opened", lastFailure);
    }
}
