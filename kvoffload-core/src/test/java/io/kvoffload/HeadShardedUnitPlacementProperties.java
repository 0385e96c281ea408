package io.kvoffload;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.kvoffload.internal.sequence.SequenceAccess;
import io.kvoffload.internal.storage.DevicePool;
import io.kvoffload.internal.storage.GroupLayout;
import io.kvoffload.internal.storage.HeadShards;
import io.kvoffload.internal.storage.UnitLayout;
import io.kvoffload.strategy.kvswap.GroupOptions;
import io.kvoffload.strategy.kvswap.KvSwap;
import io.kvoffload.strategy.sparf.SparF;
import io.kvoffload.testing.Layouts;
import io.kvoffload.testing.TestEngines;
import io.kvoffload.workload.SyntheticWorkload;
import io.kvoffload.workload.WorkloadSpec;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.List;
import java.util.Random;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;

/**
 * Under {@link Placement#HEAD_SHARDED}, for random KV head counts, devices, dtypes and group sizes:
 * every stored unit of KVSwap's group layout (a head group of a group) and of SparF's dual layout
 * (one head's dimension slice) lies, after a restart, on the device {@link HeadShards} assigns its
 * head group, and the bytes there are exactly that head group's data.
 */
class HeadShardedUnitPlacementProperties {

    @Property(tries = 10)
    void everyUnitsBytesLandOnTheDeviceHeadShardsAssigns(@ForAll long seed,
            @ForAll @IntRange(min = 1, max = 4) int devices) throws Exception {
        Random rnd = new Random(seed);
        int kvHeads = new int[] {1, 2, 3, 4, 6, 8}[rnd.nextInt(6)];
        KvShape shape = new KvShape(2, kvHeads * 2, kvHeads, new int[] {8, 16}[rnd.nextInt(2)],
                DType.values()[rnd.nextInt(3)]);
        int g = 1 + rnd.nextInt(8);
        int tokens = 24 + rnd.nextInt(200);
        long dataSeed = rnd.nextLong();
        Path root = Files.createTempDirectory("kvo-hsu");
        try {
            KvConfig cfg = TestEngines.config(TestEngines.deviceDirs(root, devices), "portable")
                    .blockTokens(1 + rnd.nextInt(16)).placement(Placement.HEAD_SHARDED).build();
            SyntheticWorkload w = new SyntheticWorkload(WorkloadSpec.builder(shape, tokens).seed(dataSeed).build());
            try (KvEngine e = KvEngine.open(cfg); KvSequence s = e.createSequence("p", shape);
                    Arena a = Arena.ofConfined()) {
                s.appendTokens(new int[tokens]);
                for (int l = 0; l < 2; l++) { // finite keys: KVSwap fits its adapter to them
                    MemorySegment k = a.allocate((long) tokens * shape.halfEntryBytes());
                    MemorySegment v = a.allocate((long) tokens * shape.halfEntryBytes());
                    w.writeKv(l, 0, tokens, shape.dtype(), k, v);
                    s.appendKv(l, k, v);
                }
                KvSwap.groupLayer(s, 0, GroupOptions.defaults().withGroupSize(g));
                new SparF().layOut(s, 1);
                s.commit();
            }
            int shards = HeadShards.shards(Placement.HEAD_SHARDED, shape, devices);
            try (KvEngine e = KvEngine.open(cfg); KvSequence s = e.openSequence("p"); Arena a = Arena.ofConfined()) {
                List<Path> dirs = cfg.ssdDirectories();
                int half = shape.halfEntryBytes();
                long part = half / shards;
                MemorySegment k0 = a.allocate((long) tokens * half);
                MemorySegment v0 = a.allocate((long) tokens * half);
                w.writeKv(0, 0, tokens, shape.dtype(), k0, v0);
                GroupLayout gl = Layouts.groupLayout(s, 0);
                assertEquals(shards, gl.shards(), kvHeads + " KV heads on " + devices + " devices");
                for (int key = 0; key < gl.keyCount(); key++) {
                    int grp = key / shards, sh = key % shards;
                    int dev = shards == 1 ? grp % devices
                            : HeadShards.device(HeadShards.rotation(0, grp, devices), sh, shards, devices);
                    assertEquals(dev, gl.groupDevice(key), "group " + grp + " head group " + sh);
                    MemorySegment expected = a.allocate(gl.storedBytes());
                    for (int i = 0; i < g; i++) {
                        long src = (long) (grp * g + i) * half + sh * part;
                        MemorySegment.copy(k0, src, expected, i * part, part);
                        MemorySegment.copy(v0, src, expected, (g + i) * part, part);
                    }
                    assertEquals(-1, raw(dirs.get(dev), gl.groupOffset(key), gl.storedBytes()).mismatch(expected),
                            "bytes of group " + grp + " head group " + sh + " on device " + dev);
                }
                UnitLayout u = SequenceAccess.of(s).ledger().layer(1).units();
                assertEquals(shards, u.shards());
                int d = shape.headDim(), eb = shape.dtype().bytes();
                int slice = SparF.sliceTokens(shape.dtype());
                MemorySegment k1 = a.allocate((long) tokens * half);
                w.writeKv(1, 0, tokens, shape.dtype(), k1, a.allocate((long) tokens * half));
                for (int unit = 0; unit < u.unitCount(); unit++) {
                    int head = unit / d % kvHeads, sl = unit / (kvHeads * d), dim = unit % d;
                    int dev = shards == 1 ? unit / d % devices
                            : HeadShards.device(HeadShards.rotation(1, sl, devices),
                                    HeadShards.shardOfHead(head, kvHeads, shards), shards, devices);
                    assertEquals(dev, u.unitDevice(unit), "unit " + unit + " (slice " + sl + ", head " + head + ")");
                    MemorySegment expected = a.allocate(u.unitBytes()); // zeroed past the layer's tokens
                    for (int t = sl * slice; t < Math.min(tokens, (sl + 1) * slice); t++) {
                        MemorySegment.copy(k1, (long) t * half + ((long) head * d + dim) * eb, expected,
                                (long) (t - sl * slice) * eb, eb);
                    }
                    assertEquals(-1, raw(dirs.get(dev), u.unitOffset(unit), u.unitBytes()).mismatch(expected),
                            "bytes of unit " + unit + " on device " + dev);
                }
            }
        } finally {
            TestEngines.deleteRecursively(root);
        }
    }

    /** {@code n} bytes at {@code offset} of the pool file in {@code dir}, as the device holds them. */
    static MemorySegment raw(Path dir, long offset, int n) throws IOException {
        try (FileChannel ch = FileChannel.open(dir.resolve(DevicePool.POOL_FILE), StandardOpenOption.READ)) {
            ByteBuffer b = ByteBuffer.allocate(n);
            while (b.hasRemaining() && ch.read(b, offset + b.position()) > 0) {
                // a short read continues where it stopped
            }
            return MemorySegment.ofArray(b.array());
        }
    }
}
