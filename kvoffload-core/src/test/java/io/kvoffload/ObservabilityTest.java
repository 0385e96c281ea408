package io.kvoffload;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvoffload.attention.ExactAttention;
import io.kvoffload.strategy.swarm.ClusterOptions;
import io.kvoffload.strategy.swarm.Swarm;
import io.kvoffload.testing.PoolDamage;
import io.kvoffload.testing.TestEngines;
import io.kvoffload.workload.SyntheticWorkload;
import io.kvoffload.workload.WorkloadSpec;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import java.util.stream.Collectors;
import javax.management.MBeanServer;
import javax.management.ObjectName;
import jdk.jfr.Recording;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordingFile;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What an operator sees without a logger: JFR events read back from a recording, the engine's
 * MXBean on the platform MBean server, latency percentiles in {@link DecodeStats}, degradation
 * listeners, and toStrings that print numbers.
 */
class ObservabilityTest {
    static final KvShape SHAPE = SwarmOfflinePhaseTest.SHAPE;
    static final int TOKENS = SwarmOfflinePhaseTest.TOKENS;
    static final DecodeOptions ALL = DecodeOptions.builder().cacheBytes(0).sinkTokens(0).localWindow(0).sparsity(1.0)
            .build();

    @TempDir
    Path root;
    final SyntheticWorkload w = new SyntheticWorkload(WorkloadSpec.builder(SHAPE, TOKENS).seed(11).build());

    KvConfig.Builder config(String name, int devices) {
        return TestEngines.config(TestEngines.deviceDirs(root.resolve(name), devices), "portable").blockTokens(16);
    }

    /** Stores the workload, lays out layer 0 only (layer 1 stays unclustered) and commits. */
    void store(KvEngine e, String id) {
        try (KvSequence s = e.createSequence(id, SHAPE)) {
            SwarmOfflinePhaseTest.store(s, w);
            List<float[]> queries = new ArrayList<>();
            for (int step = 0; step < 32; step++) {
                queries.add(w.query(0, step));
            }
            Swarm.clusterLayerFromQueries(s, 0, queries, ClusterOptions.defaults());
            s.commit();
        }
    }

    @Test
    void aFlightRecordingHoldsFetchCommitChecksumEvictionDeviceAndDegradationEvents() throws Exception {
        Path jfr = root.resolve("kv.jfr");
        KvConfig cfg = config("a", 1).build();
        try (Recording r = new Recording()) {
            for (String name : List.of("Fetch", "Commit", "Eviction", "ChecksumFailure", "DeviceError", "Degradation")) {
                r.enable("io.kvoffload." + name).withThreshold(java.time.Duration.ZERO);
            }
            r.start();
            try (KvEngine e = KvEngine.open(cfg)) {
                store(e, "s");
                try (KvSequence s = e.openSequence("s"); KvDecoder d = s.decoder(ALL)) {
                    for (int step = 0; step < 2; step++) {
                        d.prefetch(0, w.query(0, step)).await().close();
                    }
                    d.prefetch(1, w.query(1, 0)).await().close(); // never laid out: a degradation
                }
                PoolDamage.damageEntry(e, cfg, "s", 123);
                try (KvSequence s = e.openSequence("s"); KvDecoder d = s.decoder(ALL)) {
                    assertThrows(KvChecksumException.class, () -> d.prefetch(0, w.query(0, 0)).await());
                }
            }
            evictOne();
            failADevice();
            r.stop();
            r.dump(jfr);
        }
        List<RecordedEvent> events = RecordingFile.readAllEvents(jfr);
        Map<String, Long> counts = events.stream().collect(Collectors.groupingBy(x -> x.getEventType().getName(),
                Collectors.counting()));

        List<RecordedEvent> fetches = of(events, "io.kvoffload.Fetch", x -> x.getString("sequence").equals("s"));
        assertEquals(3, fetches.size(), counts.toString()); // the failed fetch is not a fetch event
        RecordedEvent f = fetches.get(0);
        assertEquals(0, f.getInt("layer"));
        assertEquals(TOKENS, f.getInt("rows"), "sparsity 1: every token");
        assertTrue(f.getLong("bytes") >= (long) TOKENS * SHAPE.entryBytes(), f.toString());
        assertTrue(f.getLong("reads") > 0 && f.getLong("tokensFetched") == TOKENS, f.toString());
        assertTrue(f.getLong("selectNanos") > 0 && f.getLong("ioNanos") > 0 && f.getLong("waitNanos") > 0, f.toString());
        assertTrue(f.getDuration().toNanos() >= f.getLong("waitNanos"), "spans prefetch to await: " + f);
        assertEquals(1, fetches.get(2).getInt("layer"));
        assertEquals(0, fetches.get(2).getLong("reads"), "an unclustered layer is served from DRAM: " + fetches.get(2));

        RecordedEvent commit = of(events, "io.kvoffload.Commit", x -> x.getString("sequence").equals("s")).get(0);
        assertEquals(1, commit.getLong("commitNumber"));
        assertEquals(TOKENS, commit.getInt("tokens"));
        assertTrue(commit.getBoolean("succeeded") && commit.getLong("storedBytes") > 0, commit.toString());

        List<RecordedEvent> bad = of(events, "io.kvoffload.ChecksumFailure", x -> x.getString("sequence").equals("s"));
        assertFalse(bad.isEmpty(), counts.toString());
        assertEquals(0, bad.get(0).getInt("layer"));
        assertEquals(123, bad.get(0).getInt("fromToken"));
        assertTrue(bad.get(bad.size() - 1).getBoolean("fatal"), "no replica: the fetch failed");

        RecordedEvent degraded = of(events, "io.kvoffload.Degradation", x -> "s".equals(x.getString("sequence")))
                .get(0);
        assertEquals("UNCLUSTERED_LAYER", degraded.getString("kind"));
        assertEquals(1, degraded.getInt("layer"));

        RecordedEvent evicted = of(events, "io.kvoffload.Eviction", x -> true).get(0);
        assertEquals("b", evicted.getString("sequence"));
        assertEquals(80, evicted.getInt("tokens"));
        assertTrue(evicted.getLong("bytes") > 0);

        RecordedEvent device = of(events, "io.kvoffload.DeviceError", x -> true).get(0);
        assertEquals(1, device.getInt("device"));
        assertTrue(device.getString("reason").contains("batches in a row failed"), device.toString());
    }

    static List<RecordedEvent> of(List<RecordedEvent> events, String type, Predicate<RecordedEvent> p) {
        return events.stream().filter(x -> x.getEventType().getName().equals(type)).filter(p).toList();
    }

    /** Three sequences fill a 1 MiB pool; a fourth evicts the least recently used, "b" (as EvictionTest). */
    void evictOne() {
        KvConfig small = config("evict", 1).deviceCapacityBytes(1L << 20).build();
        try (KvEngine e = KvEngine.open(small)) {
            for (String id : List.of("a", "b", "c")) {
                EvictionTest.write(e, id, 5 * 16);
            }
            try (KvSequence a = e.openSequence("a")) {
                assertEquals(null, TestEngines.verify(a, "a".hashCode(), TestEngines.all(80)));
            }
            EvictionTest.write(e, "d", 5 * 16);
            assertEquals(1, e.stats().evictions());
        }
    }

    /** Device 1 fails every request: after a few failed batches it is taken out of service (as StoreSafetyTest). */
    void failADevice() {
        List<Path> d = TestEngines.deviceDirs(root.resolve("fail"), 2);
        try (KvEngine e = KvEngine.open(TestEngines.config(d, "portable").blockTokens(16).build());
             KvSequence s = e.createSequence("a", SHAPE)) {
            TestEngines.append(s, 1, 64, 64);
            s.commit();
        }
        KvConfig faulty = TestEngines.config(d, "portable").blockTokens(16)
                .faultInjection(FaultInjection.builder(7).vanishingDevice(1, 0).build()).build();
        try (KvEngine e = KvEngine.open(faulty)) {
            for (int i = 0; i < 12 && e.stats().unavailableDevices().isEmpty(); i++) {
                try (KvSequence s = e.openSequence("a")) {
                    assertThrows(KvIoException.class, () -> TestEngines.verify(s, 1, TestEngines.all(64)));
                }
            }
            assertEquals(1, e.stats().unavailableDevices().size());
        }
    }

    @Test
    void theEngineMxBeanShowsItsCountersOnThePlatformServerUntilClosed() throws Exception {
        MBeanServer server = ManagementFactory.getPlatformMBeanServer();
        KvConfig cfg = config("m", 2).build();
        ObjectName name;
        try (KvEngine e = KvEngine.open(cfg)) {
            name = e.mxBeanName();
            assertEquals("io.kvoffload", name.getDomain());
            assertEquals("KvEngine", name.getKeyProperty("type"));
            assertTrue(server.isRegistered(name), name.toString());
            try (KvSequence s = e.createSequence("x", SHAPE)) {
                TestEngines.append(s, 3, 256, 64);
                s.commit();
            }
            try (KvSequence s = e.openSequence("x")) {
                assertEquals(null, TestEngines.verify(s, 3, TestEngines.all(256)));
            }
            KvStats st = e.stats();
            assertTrue(st.totalBytesRead() > 0 && st.checksumsVerified() > 0, st.toString());
            assertEquals(st.totalBytesRead(), server.getAttribute(name, "BytesRead"));
            assertEquals(st.totalBytesWritten(), server.getAttribute(name, "BytesWritten"));
            assertEquals(st.checksumsVerified(), server.getAttribute(name, "ChecksumsVerified"));
            assertEquals(0L, server.getAttribute(name, "ChecksumFailures"));
            assertEquals(0L, server.getAttribute(name, "Evictions"));
            assertEquals(2, server.getAttribute(name, "Devices"));
            assertEquals(1, server.getAttribute(name, "Sequences"));
            assertEquals("portable", server.getAttribute(name, "IoBackend"));
            assertEquals(st.dramBudgetBytes(), server.getAttribute(name, "DramBudgetBytes"));
            KvEngineMXBean proxy = javax.management.JMX.newMXBeanProxy(server, name, KvEngineMXBean.class);
            assertEquals(st.devices().stream().mapToLong(KvStats.Device::reads).sum(), proxy.getReads());
            assertEquals(name.getKeyProperty("store"), ObjectName.quote(proxy.getStoreUuid()));
        }
        assertFalse(server.isRegistered(name), "unregistered on close");
        try (KvEngine e = KvEngine.open(cfg)) {
            assertEquals(name, e.mxBeanName(), "the store's identity names it across reopens");
            assertTrue(server.isRegistered(name));
        }
    }

    @Test
    void latencyPercentilesCoverEveryFetchInOrder() throws Exception {
        try (KvEngine e = KvEngine.open(config("l", 2).build())) {
            store(e, "s");
            try (KvSequence s = e.openSequence("s");
                 KvDecoder d = s.decoder(DecodeOptions.builder().cacheBytes(0).build())) {
                DecodeStats first = null;
                for (int step = 0; step < 20; step++) {
                    d.prefetch(0, w.query(0, step)).await().close();
                    if (step == 4) {
                        first = d.stats();
                    }
                }
                DecodeStats st = d.stats();
                assertEquals(20, st.fetchLatency().count());
                assertEquals(20, st.selectLatency().count());
                assertTrue(st.ioLatency().count() > 0 && st.ioLatency().count() <= 20, st.toString());
                for (LatencyHistogram h : List.of(st.fetchLatency(), st.selectLatency(), st.ioLatency())) {
                    assertTrue(0 < h.p50Nanos() && h.p50Nanos() <= h.p99Nanos() && h.p99Nanos() <= h.p999Nanos()
                            && h.p999Nanos() <= h.maxNanos(), h.toString());
                }
                // A fetch contains its selection; its median is at least the selection's.
                assertTrue(st.fetchLatency().maxNanos() >= st.selectLatency().p50Nanos(), st.toString());
                assertTrue(st.waitNanos() > 0 && st.waitNanos() < st.fetchLatency().count() * st.fetchLatency().maxNanos()
                        + 1, st.toString());
                DecodeStats later = st.since(first);
                assertEquals(15, later.fetchLatency().count());
                assertEquals(15, later.steps());
                assertThrows(IllegalArgumentException.class, () -> st.fetchLatency().percentileNanos(101));
                assertEquals(0, LatencyHistogram.empty().p99Nanos());
            }
        }
    }

    @Test
    void degradationsReachListenersAddedAfterOpenAndUnclusteredLayersAreCounted() throws Exception {
        KvConfig cfg = config("g", 1).build();
        LinkedBlockingQueue<KvDegradation> heard = new LinkedBlockingQueue<>();
        try (KvEngine e = KvEngine.open(cfg)) {
            store(e, "s");
            try (KvSequence s = e.createSequence("q", SHAPE)) {
                TestEngines.append(s, 5, 64, 64);
                s.commit();
            }
            e.addDegradationListener(heard::add);
            try (KvSequence s = e.openSequence("s"); KvDecoder d = s.decoder(DecodeOptions.defaults())) {
                d.prefetch(0, w.query(0, 0)).await().close();
                assertEquals(0, d.stats().unclusteredLayers(), "layer 0 is laid out");
                d.prefetch(1, w.query(1, 0)).await().close();
                d.prefetch(1, w.query(1, 1)).await().close();
                assertEquals(1, d.stats().unclusteredLayers(), "once per layer");
            }
            KvDegradation u = heard.poll(10, TimeUnit.SECONDS);
            assertNotNull(u);
            assertEquals(KvDegradation.Kind.UNCLUSTERED_LAYER, u.kind());
            assertEquals("s", u.sequenceId());
            assertEquals(1, u.layer());
            assertTrue(u.message().contains("not laid out"), u.message());
        }
        // Every copy of q's manifest damaged: quarantined at open, told to a listener added afterwards.
        for (Path dir : cfg.ssdDirectories()) {
            Path m = dir.resolve("manifests").resolve("q.kvom");
            if (Files.exists(m)) {
                Files.write(m, new byte[] {'n', 'o', 't', ' ', 'a', ' ', 'm', 'a', 'n', 'i', 'f', 'e', 's', 't'});
            }
        }
        try (KvEngine e = KvEngine.open(cfg)) {
            assertFalse(e.stats().quarantine().isEmpty(), e.stats().toString());
            LinkedBlockingQueue<KvDegradation> late = new LinkedBlockingQueue<>();
            e.addDegradationListener(late::add);
            KvDegradation q = late.poll(10, TimeUnit.SECONDS);
            assertNotNull(q);
            assertEquals(KvDegradation.Kind.MANIFEST_QUARANTINED, q.kind());
            assertEquals("q", q.sequenceId());
            assertThrows(NullPointerException.class, () -> e.addDegradationListener(null));
        }
    }

    @Test
    void toStringsPrintNumbersNotArrayIdentities() throws Exception {
        try (KvEngine e = KvEngine.open(config("t", 1).build())) {
            store(e, "s");
            try (KvSequence s = e.openSequence("s"); KvDecoder d = s.decoder(DecodeOptions.defaults())) {
                d.prefetch(0, w.query(0, 0)).await().close();
                String st = d.stats().toString();
                assertFalse(st.contains("[J@"), st);
                assertTrue(st.contains("steps=1") && st.contains("p99=") && st.contains("reads/"), st);
                assertTrue(st.matches(".*bytesRead=[1-9][0-9]*.*"), st);
            }
            String ks = e.stats().toString();
            assertFalse(ks.matches(".*\\[[A-Z]@.*"), ks);
            assertTrue(ks.contains("checksumsVerified="), ks);
        }
        ExactAttention.Result r = new ExactAttention.Result(new float[] {0.25f, 0.75f}, null);
        assertEquals("Result{weights=2 values [0.25, 0.75], output=null}", r.toString());
    }
}
