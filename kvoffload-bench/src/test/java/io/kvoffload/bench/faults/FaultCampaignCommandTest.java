package io.kvoffload.bench.faults;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvoffload.bench.cli.KvoMain;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A short fault campaign (the full one is {@code ./kvo bench faults}): at a high fault rate every
 * kind is injected, and nothing may be silently wrong, lost, hung or fail with a foreign exception.
 */
class FaultCampaignCommandTest {
    @TempDir
    Path root;

    @Test
    void aShortCampaignLosesNothingAndReturnsNothingWrong() {
        PrintStream old = System.out;
        ByteArrayOutputStream buf = new ByteArrayOutputStream();
        int code;
        try {
            System.setOut(new PrintStream(buf, true, StandardCharsets.UTF_8));
            code = KvoMain.run("faults", "--rounds", "6", "--ops", "40", "--rate", "0.05", "--kills", "3",
                    "--backend", "portable", "--dir", root.toString());
        } finally {
            System.setOut(old);
        }
        String out = buf.toString(StandardCharsets.UTF_8);
        assertEquals(0, code, out);
        assertTrue(out.contains("RESULT: PASS"), out);
        for (String kind : new String[] {"EIO", "TORN_READ", "BIT_FLIP_READ", "ENOSPC"}) {
            assertTrue(out.matches("(?s).*\\| " + kind + " \\| +[1-9][0-9]* \\|.*"), kind + " injected:\n" + out);
        }
        assertTrue(out.contains("| silent corruptions | 0 |"), out);
        assertTrue(out.contains("failed cleanly"), out);
    }
}
