package io.kvoffload.bench.cli;

import picocli.CommandLine.Option;

/**
 * The options of the commands that measure decoding against fio in paired rounds ({@code --rounds},
 * {@code --fio-seconds}, {@code --queue-depth}), as a picocli mixin: round 0 warms up and is not
 * reported, rounds 1..{@code --rounds} each run the decode and fio back to back, and both keep the
 * same queue depth per device. A command picks its fio run length by initialising the field,
 * {@code @Mixin FioRoundsOptions paired = new FioRoundsOptions(5);}.
 */
public final class FioRoundsOptions {

    @Option(names = "--rounds", description = "Paired decode/fio rounds after a warm-up round (default: ${DEFAULT-VALUE}).")
    public int rounds = 3;

    @Option(names = "--fio-seconds", description = "Seconds per fio run (default: ${DEFAULT-VALUE}).")
    public int fioSeconds;

    @Option(names = "--queue-depth", description = "KvConfig queueDepth: requests in flight per device"
            + " (default: ${DEFAULT-VALUE}).")
    public int queueDepth = 128;

    /** A command's own fio run length, in seconds. */
    public FioRoundsOptions(int fioSeconds) {
        this.fioSeconds = fioSeconds;
    }
}
