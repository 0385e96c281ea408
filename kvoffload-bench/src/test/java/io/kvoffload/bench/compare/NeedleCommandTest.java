package io.kvoffload.bench.compare;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.PrintWriter;
import java.io.StringWriter;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/** {@code kvo needle} at a tiny size: the oracle holds every needle, every strategy gets a row, bad options are named. */
class NeedleCommandTest {
    @Test
    void theOracleHoldsEveryNeedleAndEveryStrategyIsReported() {
        for (String[] mode : new String[][] {{"one", "each", "1"}, {"all", "shared", "2"}}) {
            StringWriter text = new StringWriter();
            CommandLine cl = new CommandLine(new NeedleCommand());
            cl.setOut(new PrintWriter(text));
            int code = cl.execute("--tokens", "4096", "--layers", "2", "--query-heads", "8", "--kv-heads", "2", "--head-dim",
                    "64", "--window", "64", "--shares", "0.5", "--budgets", "0.05,0.1", "--lookers", mode[0], "--needles",
                    mode[1], "--head-groups", mode[2], "--strategies", "oracle,mass-auto,quest");
            assertEquals(0, code, text.toString());
            String out = text.toString();
            assertTrue(out.contains("| oracle | 4/4 (2/2) | 4/4 (2/2) |"), "the exact top-k holds a needle of half a head's"
                    + " attention at 5% and 10%: " + out);
            assertTrue(out.contains("| mass-auto | ") && out.contains("| quest | "), out);
            assertTrue(out.contains("share 0.50, budget 0.05") && out.contains(mode[0] + " looker"), out);
        }
        CommandLine cl = new CommandLine(new NeedleCommand());
        StringWriter err = new StringWriter();
        cl.setErr(new PrintWriter(err));
        cl.setOut(new PrintWriter(new StringWriter()));
        assertEquals(1, cl.execute("--shares", "1.5"), "a bad option fails the command");
        assertTrue(err.toString().contains("--shares = 1.5"), err.toString());
    }
}
