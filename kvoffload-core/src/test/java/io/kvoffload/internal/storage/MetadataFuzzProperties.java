package io.kvoffload.internal.storage;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.kvoffload.DType;
import io.kvoffload.KvConfig;
import io.kvoffload.KvEngine;
import io.kvoffload.KvException;
import io.kvoffload.KvSequence;
import io.kvoffload.KvShape;
import io.kvoffload.KvStats;
import io.kvoffload.testing.KvTestData;
import io.kvoffload.testing.TestEngines;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.stream.Stream;
import java.util.zip.CRC32C;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.lifecycle.AfterContainer;
import net.jqwik.api.lifecycle.BeforeContainer;

/**
 * Fuzzes the store's metadata: manifests (current and previous generations, every copy), device
 * records and store records, with raw damage (flips, truncation, garbage, deletion) and with
 * semantic damage whose CRC is recomputed so it passes the file's own check. Whatever the damage,
 * opening the store gives the last good state or a {@link KvException}: never another exception
 * type, a hang, wrong KV or token ids, or a healthy sequence silently dropped (each sequence is
 * either readable bit-exact or listed as unavailable or quarantined in the stats).
 */
class MetadataFuzzProperties {
    static final KvShape SHAPE = new KvShape(2, 4, 2, 8, DType.BF16);
    static final Map<String, Integer> SEQUENCES = new LinkedHashMap<>();
    static Path pristine;
    static Path work;

    static {
        SEQUENCES.put("s0", 24);
        SEQUENCES.put("s1", 40);
        SEQUENCES.put("s2", 9);
    }

    static long seed(String id) {
        return id.hashCode() * 31L + 7;
    }

    static KvConfig config(Path root) {
        return TestEngines.config(dirs(root), "portable").blockTokens(4).deviceCapacityBytes(1 << 20)
                .directIo(false).build();
    }

    static List<Path> dirs(Path root) {
        return List.of(root.resolve("ssd0"), root.resolve("ssd1"), root.resolve("ssd2"));
    }

    @BeforeContainer
    static void buildStore() throws Exception {
        Path base = Files.isDirectory(Path.of("/dev/shm")) ? Path.of("/dev/shm") : Path.of(System.getProperty("java.io.tmpdir"));
        pristine = Files.createTempDirectory(base, "kvo-fuzz-pristine");
        work = Files.createTempDirectory(base, "kvo-fuzz-work");
        TestEngines.deviceDirs(pristine, 3);
        try (KvEngine e = KvEngine.open(config(pristine))) {
            for (Map.Entry<String, Integer> s : SEQUENCES.entrySet()) {
                try (KvSequence q = e.createSequence(s.getKey(), SHAPE)) {
                    TestEngines.append(q, seed(s.getKey()), s.getValue() - 4, 8);
                    q.commit();
                }
            }
            // A second commit of s1 so that .prev generations exist too.
            try (KvSequence q = e.openSequenceForAppend("s1")) {
                TestEngines.append(q, seed("s1"), 4, 4);
                q.commit();
            }
            for (String id : List.of("s0", "s2")) {
                try (KvSequence q = e.openSequenceForAppend(id)) {
                    TestEngines.append(q, seed(id), 4, 4);
                    q.commit();
                }
            }
        }
    }

    @AfterContainer
    static void cleanUp() {
        TestEngines.deleteRecursively(pristine);
        TestEngines.deleteRecursively(work);
    }

    static List<Path> metadataFiles(Path root) throws IOException {
        List<Path> out = new ArrayList<>();
        try (Stream<Path> s = Files.walk(root)) {
            s.filter(Files::isRegularFile).filter(p -> {
                String n = p.getFileName().toString();
                return n.endsWith(".kvom") || n.endsWith(".kvom.prev") || n.equals(DevicePool.DEVICE_FILE)
                        || n.equals(StoreRecord.FILE);
            }).sorted().forEach(out::add);
        }
        return out;
    }

    static void copyTree(Path from, Path to) throws IOException {
        TestEngines.deleteRecursively(to);
        try (Stream<Path> s = Files.walk(from)) {
            for (Path p : s.toList()) {
                Path t = to.resolve(from.relativize(p).toString());
                if (Files.isDirectory(p)) {
                    Files.createDirectories(t);
                } else {
                    Files.copy(p, t);
                }
            }
        }
    }

    @Property(tries = 1100)
    void damagedMetadataGivesTheLastGoodStateOrAKvException(@ForAll long mutationSeed) throws Exception {
        copyTree(pristine, work);
        Random rnd = new Random(mutationSeed);
        List<Path> files = metadataFiles(work);
        Path target = files.get(rnd.nextInt(files.size()));
        String mutation = mutate(target, rnd);
        String context = target + " " + mutation;
        KvEngine engine;
        try {
            engine = KvEngine.open(config(work));
        } catch (KvException e) {
            return; // refused with a library exception: allowed
        } catch (Exception | Error e) {
            throw new AssertionError("open threw " + e + " after " + context, e);
        }
        try (KvEngine e = engine) {
            KvStats st = e.stats();
            Set<String> listed = new HashSet<>();
            e.sequences().forEach(i -> listed.add(i.id()));
            for (Map.Entry<String, Integer> s : SEQUENCES.entrySet()) {
                String id = s.getKey();
                boolean reported = st.unavailableSequences().contains(id)
                        || st.quarantine().stream().anyMatch(q -> q.startsWith("sequence " + id + ":"))
                        || st.quarantine().stream().anyMatch(q -> !q.startsWith("sequence "));
                if (!listed.contains(id) || st.unavailableSequences().contains(id)) {
                    assertTrue(reported, id + " silently dropped after " + context + "; stats " + st);
                    continue;
                }
                try (KvSequence q = e.openSequence(id)) {
                    // A CRC-valid rewrite may give an older generation: any prefix of what was written is
                    // a state the sequence had, but its token ids and KV must be exactly those.
                    int n = q.tokenCount();
                    assertTrue(n == s.getValue() || n == s.getValue() - 4, id + " has " + n + " tokens after " + context);
                    assertTrue(Arrays.equals(KvTestData.tokenIds(seed(id), 0, n), q.tokenIds()),
                            id + " token ids differ after " + context);
                    assertNull(TestEngines.verify(q, seed(id), TestEngines.all(n)), id + " after " + context);
                } catch (KvException ok) {
                    // detected (checksum, unavailable device): allowed, never wrong data
                }
            }
        } catch (KvException ok) {
            // allowed
        } catch (AssertionError e) {
            throw e;
        } catch (Exception | Error e) {
            fail("threw " + e + " after " + context, e);
        }
    }

    /** Damages {@code f} one of several ways; returns what was done. */
    static String mutate(Path f, Random rnd) throws IOException {
        byte[] b = Files.readAllBytes(f);
        boolean json = f.getFileName().toString().endsWith(".json");
        int kind = rnd.nextInt(json ? 7 : 6);
        switch (kind) {
            case 0 -> {
                int at = rnd.nextInt(b.length);
                b[at] ^= (byte) (1 << rnd.nextInt(8));
                Files.write(f, b);
                return "flip at " + at;
            }
            case 1 -> {
                int n = rnd.nextInt(b.length);
                Files.write(f, Arrays.copyOf(b, n));
                return "truncate to " + n;
            }
            case 2 -> {
                byte[] g = new byte[rnd.nextInt(64)];
                rnd.nextBytes(g);
                Files.write(f, g);
                return "replace with " + g.length + " random bytes";
            }
            case 3 -> {
                Files.delete(f);
                return "delete";
            }
            case 4, 5 -> {
                // Semantic damage that passes the file's own CRC.
                if (json) {
                    return rewriteJson(f, b, rnd);
                }
                int at = 8 + rnd.nextInt(Math.max(1, b.length - 12));
                int count = 1 + rnd.nextInt(4);
                for (int i = 0; i < count && at + i < b.length - 4; i++) {
                    b[at + i] = kind == 4 ? (byte) (b[at + i] ^ (1 << rnd.nextInt(8))) : (byte) rnd.nextInt();
                }
                CRC32C c = new CRC32C();
                c.update(b, 0, b.length - 4);
                ByteBuffer.wrap(b).putInt(b.length - 4, (int) c.getValue());
                Files.write(f, b);
                return "bytes at " + at + " changed, CRC recomputed";
            }
            default -> {
                return rewriteJson(f, b, rnd);
            }
        }
    }

    @SuppressWarnings("unchecked")
    static String rewriteJson(Path f, byte[] b, Random rnd) throws IOException {
        Map<String, Object> m = CheckedJson.decode(b, false);
        List<String> keys = new ArrayList<>(m.keySet());
        String key = keys.get(rnd.nextInt(keys.size()));
        Object value = switch (rnd.nextInt(7)) {
            case 0 -> null;
            case 1 -> rnd.nextLong();
            case 2 -> "x" + rnd.nextInt(100);
            case 3 -> List.of(1, 2);
            case 4 -> -1;
            case 5 -> m.get(key) instanceof Number n ? n.longValue() + 4096 : java.util.UUID.randomUUID().toString();
            default -> {
                if (m.get(key) instanceof List<?> l && !l.isEmpty() && l.get(0) instanceof Map<?, ?> first) {
                    Map<String, Object> copy = new LinkedHashMap<>((Map<String, Object>) first);
                    String k = new ArrayList<>(copy.keySet()).get(rnd.nextInt(copy.size()));
                    copy.put(k, copy.get(k) instanceof Number n ? n.longValue() / 2 : "elsewhere");
                    List<Object> nl = new ArrayList<>(l);
                    nl.set(0, copy);
                    yield nl;
                }
                yield Map.of();
            }
        };
        m.put(key, value);
        Files.write(f, CheckedJson.encode(m));
        return "field " + key + " = " + value + ", CRC recomputed";
    }
}
