package io.kvoffload.bench.compare;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvoffload.strategy.Strategies;
import java.util.List;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/**
 * Every comparison command, run without {@code --strategies}, compares the library's default strategy
 * with the oracle: what a user who tries the bench first sees.
 */
class DefaultStrategyComparedTest {
    @Test
    void theComparisonsIncludeTheDefaultStrategyAndTheOracleByDefault() {
        String name = Strategies.defaultStrategy().name();
        CompareCommand compare = new CompareCommand();
        SweepCommand sweep = new SweepCommand();
        SelectEvalCommand eval = new SelectEvalCommand();
        for (Object command : List.of(compare, sweep, eval)) {
            new CommandLine(command).parseArgs();
        }
        for (List<String> strategies : List.of(compare.strategies, sweep.strategies, eval.strategies)) {
            assertEquals("oracle", strategies.get(0), strategies.toString());
            assertTrue(strategies.contains(name), name + " missing from the default " + strategies);
        }
    }
}
