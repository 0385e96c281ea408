package io.kvoffload.bench.cli;

import io.kvoffload.bench.ProgressBars;
import me.tongfei.progressbar.ProgressBar;
import picocli.CommandLine.Option;

/**
 * The {@code --no-progress} switch of the long-running commands, as a picocli mixin, with the bar it
 * allows: {@code @Mixin ProgressOptions progress = new ProgressOptions();}.
 */
public final class ProgressOptions {

    @Option(names = "--no-progress", description = "No progress bar (it draws on stderr).")
    public boolean off;

    /**
     * The command's {@link ProgressBars#ascii} bar, or null with {@code --no-progress} (a
     * try-with-resources skips a null resource, so callers only null-check their steps).
     */
    public ProgressBar bar(String task, long max, int updateMillis) {
        return off ? null : ProgressBars.ascii(task, max, updateMillis);
    }
}
