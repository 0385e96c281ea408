package io.kvoffload.bench.cli;

import io.kvoffload.bench.compare.CompareCommand;
import io.kvoffload.bench.compare.CompareQualityCommand;
import io.kvoffload.bench.compare.SweepCommand;
import io.kvoffload.bench.kvswap.KvSwapBench;
import io.kvoffload.bench.kvswap.KvSwapIoBench;
import io.kvoffload.bench.kvswap.TuneCommand;
import io.kvoffload.bench.scaling.ScalingCommand;
import io.kvoffload.bench.swarm.ClusterBuildBench;
import io.kvoffload.bench.swarm.ClusterDriftBench;
import io.kvoffload.bench.swarm.SwarmOnlineBench;
import io.kvoffload.bench.swarm.SelectionLatencyCommand;
import picocli.CommandLine;
import picocli.CommandLine.Command;

/** The command line: {@code kvo demo}, benchmarks and tools. */
@Command(name = "kvo", mixinStandardHelpOptions = true, version = "kvoffload 0.1.0",
        description = "kvoffload: KV-cache offloading across SSDs. Demo, benchmarks and tools.",
        subcommands = {DemoCommand.class, CompareCommand.class, SweepCommand.class, ClusterBuildBench.class,
            ClusterDriftBench.class,
            CompareQualityCommand.class, KvSwapBench.class, KvSwapIoBench.class, TuneCommand.class,
            SwarmOnlineBench.class, SelectionLatencyCommand.class, ScalingCommand.class,
            io.kvoffload.bench.scaling.PlacementBench.class,
            io.kvoffload.bench.compare.SelectEvalCommand.class, io.kvoffload.bench.compare.NeedleCommand.class,
            io.kvoffload.bench.engine.EngineLoopCommand.class, io.kvoffload.bench.engine.ForkBench.class,
            io.kvoffload.bench.batch.BatchBench.class,
            io.kvoffload.bench.faults.FaultCampaignCommand.class, io.kvoffload.bench.remote.RemoteBench.class,
            io.kvoffload.bench.elastic.ElasticBench.class,
            CommandLine.HelpCommand.class})
public final class KvoMain implements Runnable {
    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    public static void main(String[] args) {
        System.exit(run(args));
    }

    /** Runs the command line and returns its exit code (tests call this). */
    public static int run(String... args) {
        CommandLine cl = new CommandLine(new KvoMain());
        // A user's mistake deserves its message, not a stack trace.
        cl.setExecutionExceptionHandler((ex, cmd, parsed) -> {
            cmd.getErr().println("kvo: " + ex.getMessage());
            if (!(ex instanceof IllegalArgumentException || ex instanceof IllegalStateException)) {
                ex.printStackTrace(cmd.getErr());
            }
            cmd.getErr().flush();
            return 2;
        });
        return cl.execute(args);
    }

    @Override
    public void run() {
        spec.commandLine().usage(System.out);
    }
}
