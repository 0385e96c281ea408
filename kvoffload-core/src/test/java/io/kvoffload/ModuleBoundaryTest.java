package io.kvoffload;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The boundaries the design relies on, checked on the sources: the library never imports the
 * workload tools, and the decoder pipeline names no strategy.
 */
class ModuleBoundaryTest {
    static final Path MAIN = Path.of("src/main/java/io/kvoffload");

    @Test
    void libraryCodeDoesNotDependOnTheWorkloadPackage() throws IOException {
        List<String> offenders;
        try (Stream<Path> files = Files.walk(MAIN)) {
            offenders = files.filter(p -> p.toString().endsWith(".java"))
                    .filter(p -> !p.startsWith(MAIN.resolve("workload")))
                    .filter(p -> read(p).contains("io.kvoffload.workload"))
                    .map(Path::toString).toList();
        }
        assertEquals(List.of(), offenders, "library sources that mention io.kvoffload.workload");
    }

    @Test
    void theDecoderAndTheSequenceNameNoStrategyAndStaySmall() throws IOException {
        String decoder = read(MAIN.resolve("KvDecoder.java"));
        Pattern names = Pattern.compile("\\b(swarm|kvswap|quest|infllm|pqcache|clusterkv|sparq|sparf|medoid\\w*|oracle)\\b");
        assertTrue(!names.matcher(decoder.toLowerCase(Locale.ROOT)).find(), "KvDecoder names a strategy");
        assertTrue(decoder.lines().count() < 500, "KvDecoder.java has " + decoder.lines().count() + " lines");
        String sequence = read(MAIN.resolve("KvSequence.java"));
        assertTrue(!names.matcher(sequence.toLowerCase(Locale.ROOT)).find(), "KvSequence names a strategy");
        assertTrue(sequence.lines().count() < 500, "KvSequence.java has " + sequence.lines().count() + " lines");
    }

    private static String read(Path p) {
        try {
            return Files.readString(p);
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }
}
