package io.kvoffload.bench.faults;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvoffload.bench.cli.KvoRun;
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
        KvoRun run = KvoRun.of("faults", "--rounds", "6", "--ops", "40", "--rate", "0.05", "--kills", "3",
                "--backend", "portable", "--dir", root.toString());
        assertEquals(0, run.code(), run.toString());
        String out = run.out();
        assertTrue(out.contains("RESULT: PASS"), out);
        for (String kind : new String[] {"EIO", "TORN_READ", "BIT_FLIP_READ", "ENOSPC"}) {
            assertTrue(out.matches("(?s).*\\| " + kind + " \\| +[1-9][0-9]* \\|.*"), kind + " injected:\n" + out);
        }
        assertTrue(out.contains("| silent corruptions | 0 |"), out);
        assertTrue(out.contains("failed cleanly"), out);
    }
}
