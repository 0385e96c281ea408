package io.kvoffload;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvoffload.testing.TestEngines;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The I/O error policy (docs/architecture.md, "Errors"): a failed file operation of
 * {@link KvEngine#open}, {@link KvSequence#commit} and {@link KvEngine#deleteSequence} surfaces as
 * an unchecked {@link KvIoException} naming the operation and the file, with the
 * {@link IOException} as its cause, and leaves the store as the message says. The failures are
 * planted as directories where the store expects files, so they happen even as root.
 */
class IoErrorPolicyTest {
    @TempDir
    Path root;

    private List<Path> dirs(int n) {
        return TestEngines.deviceDirs(root, n);
    }

    private static KvConfig config(List<Path> dirs) {
        return StoreSafetyTest.config(dirs).build();
    }

    /** A non-empty directory at {@code file}: renaming or deleting onto it fails. */
    private static Path plantDirectory(Path file) throws IOException {
        Files.createDirectories(file);
        Files.writeString(file.resolve("keep"), "x");
        return file;
    }

    @Test
    void aCommitWhoseManifestWriteFailsThrowsKvIoExceptionAndKeepsThePreviousCommit() throws Exception {
        List<Path> d = dirs(2);
        try (KvEngine e = KvEngine.open(config(d))) {
            StoreSafetyTest.commit(e, "a", 1, 40);
            // The commit renames the current manifest to its previous generation: make that fail.
            for (Path copy : StoreSafetyTest.manifestCopies(d, "a")) {
                plantDirectory(copy.resolveSibling("a.kvom.prev"));
            }
            try (KvSequence s = e.openSequenceForAppend("a")) {
                TestEngines.append(s, 1, 8, 8);
                KvIoException ex = assertThrows(KvIoException.class, s::commit);
                assertTrue(ex.getMessage().contains("commit of sequence a failed; its previous commit is intact"),
                        ex.getMessage());
                assertTrue(ex.getMessage().contains("a.kvom"), ex.getMessage());
                assertInstanceOf(IOException.class, ex.getCause());
                assertNotNull(ex.path(), ex.getMessage());
                assertEquals(-1, ex.device());
            }
            StoreSafetyTest.assertExact(e, "a", 1, 40);
        }
        try (KvEngine e = KvEngine.open(config(d))) {
            StoreSafetyTest.assertExact(e, "a", 1, 40);
        }
    }

    @Test
    void aDeleteThatCannotRemoveAManifestThrowsKvIoExceptionAndKeepsTheSequence() throws Exception {
        List<Path> d = dirs(2);
        try (KvEngine e = KvEngine.open(config(d))) {
            StoreSafetyTest.commit(e, "a", 1, 40);
            Path planted = plantDirectory(StoreSafetyTest.manifestCopies(d, "a").get(0).resolveSibling("a.kvom.prev"));
            KvIoException ex = assertThrows(KvIoException.class, () -> e.deleteSequence("a"));
            assertTrue(ex.getMessage().contains("deleting sequence a failed"), ex.getMessage());
            assertTrue(ex.getMessage().contains(planted.getFileName().toString()), ex.getMessage());
            assertInstanceOf(IOException.class, ex.getCause());
            assertEquals(List.of("a"), e.sequences().stream().map(SequenceInfo::id).toList());
        }
    }

    @Test
    void anOpenWhoseLockFileCannotBeCreatedThrowsKvIoExceptionAndHoldsNothing() throws Exception {
        List<Path> d = dirs(2);
        Path lock = plantDirectory(d.get(1).resolve("kvoffload.lock"));
        KvIoException ex = assertThrows(KvIoException.class, () -> KvEngine.open(config(d)));
        assertTrue(ex.getMessage().contains("opening the store in"), ex.getMessage());
        assertTrue(ex.getMessage().contains(lock.toString()), ex.getMessage());
        assertInstanceOf(IOException.class, ex.getCause());
        // Nothing stayed locked: once the obstacle is gone the store opens.
        Files.delete(lock.resolve("keep"));
        Files.delete(lock);
        try (KvEngine e = KvEngine.open(config(d))) {
            assertTrue(e.sequences().isEmpty());
        }
    }
}
