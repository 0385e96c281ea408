package io.kvoffload;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvoffload.testing.TestEngines;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A commit whose manifest reached some of its directories and then failed leaves no copy of that
 * attempt behind: each directory it reached keeps its previous generation. Before, the attempt's copy
 * stayed; a retried commit, which takes the same number, moved it to {@code .prev} and wrote its own
 * beside it, so at the next open the copies of that number disagreed and recovery fell back to the
 * commit before it: an acknowledged commit lost.
 */
class CommitRetryTest {
    static final KvShape SHAPE = new KvShape(2, 8, 2, 16, DType.BF16);

    @TempDir
    Path root;

    /** The directories holding a current manifest copy of {@code id}, in the order commits write them. */
    private static List<Path> manifestCopies(List<Path> devices, String id) throws IOException {
        try (Stream<Path> s = devices.stream().flatMap(d -> {
            try {
                return Files.walk(d);
            } catch (IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
        })) {
            return s.filter(p -> p.getFileName().toString().equals(id + ".kvom")).sorted().toList();
        }
    }

    @Test
    void aRetriedCommitAfterAPartlyWrittenManifestIsTheOneRecovered() throws IOException {
        List<Path> dirs = TestEngines.deviceDirs(root, 3);
        KvConfig cfg = TestEngines.config(dirs, "portable").blockTokens(4).build();
        try (KvEngine e = TestEngines.open(cfg)) {
            TestEngines.commit(e, "s", SHAPE, 7, 20);
            List<Path> copies = manifestCopies(dirs, "s");
            assertTrue(copies.size() >= 2, "manifest copies: " + copies);
            List<byte[]> first = new java.util.ArrayList<>();
            for (Path c : copies) {
                first.add(Files.readAllBytes(c));
            }
            // Each copy's directory in turn refuses the next generation (its .prev is a non-empty
            // directory, which moving the current copy aside cannot replace). Directories are written in
            // an order of their own, so one of the two attempts fails after another directory took it.
            for (Path copy : copies) {
                Path blocker = copy.resolveSibling("s.kvom.prev");
                TestEngines.deleteRecursively(blocker);
                Files.createDirectories(blocker.resolve("x"));
                try (KvSequence s = e.openSequenceForAppend("s")) {
                    TestEngines.append(s, 7, 10, 16);
                    assertThrows(KvIoException.class, s::commit);
                }
                TestEngines.deleteRecursively(blocker);
                try (KvSequence probe = e.openSequence("s")) {
                    assertEquals(20, probe.tokenCount(), "the failed commit is not the sequence's state");
                }
            }
            for (int i = 0; i < copies.size(); i++) {
                assertArrayEquals(first.get(i), Files.readAllBytes(copies.get(i)),
                        "the failed attempts left the first commit in " + copies.get(i));
            }
            try (KvSequence s = e.openSequenceForAppend("s")) {
                TestEngines.append(s, 7, 12, 16);
                s.commit(); // acknowledged
            }
            TestEngines.assertExact(e, "s", 7, 32);
        }
        try (KvEngine e = TestEngines.open(cfg)) {
            assertTrue(e.stats().quarantine().isEmpty(), e.stats().quarantine().toString());
            TestEngines.assertExact(e, "s", 7, 32);
        }
    }
}
