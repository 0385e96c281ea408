package io.kvoffload.bench.cli;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;

/**
 * One {@code kvo} command line run in-process through {@link KvoMain#run}, with what it wrote to
 * standard output and standard error, for the command tests: picocli and the commands write to
 * {@code System.out} and {@code System.err}, so both are swapped for buffers while it runs.
 *
 * @param code the exit code
 * @param out standard output, UTF-8
 * @param err standard error, UTF-8
 */
public record KvoRun(int code, String out, String err) {

    /** Runs {@code args} and returns the exit code with both streams. */
    public static KvoRun of(String... args) {
        PrintStream oldOut = System.out;
        PrintStream oldErr = System.err;
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int code;
        try {
            System.setOut(new PrintStream(out, true, StandardCharsets.UTF_8));
            System.setErr(new PrintStream(err, true, StandardCharsets.UTF_8));
            code = KvoMain.run(args);
        } finally {
            System.setOut(oldOut);
            System.setErr(oldErr);
        }
        return new KvoRun(code, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
    }

    /** The exit code and both streams, for a failed assertion's message. */
    @Override
    public String toString() {
        return "exit code " + code + "\n--- stdout\n" + out + "--- stderr\n" + err;
    }
}
