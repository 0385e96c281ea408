package io.kvoffload.bench;

import me.tongfei.progressbar.ConsoleProgressBarConsumer;
import me.tongfei.progressbar.ProgressBar;
import me.tongfei.progressbar.ProgressBarBuilder;
import me.tongfei.progressbar.ProgressBarStyle;

/** The progress bar every benchmark command draws (on stderr, so the report on stdout stays clean). */
public final class ProgressBars {
    private ProgressBars() {}

    /**
     * An ASCII bar (it renders the same in any terminal and in CI logs) of at most 100 columns.
     *
     * @param task the name shown before the bar
     * @param max the number of steps that fills it
     * @param updateMillis how often it redraws
     */
    public static ProgressBar ascii(String task, long max, int updateMillis) {
        // Through System.err (the library's default consumer writes to the terminal directly), so a
        // caller that redirects stderr — the test runner, a log file — gets the bar too.
        return new ProgressBarBuilder().setTaskName(task).setInitialMax(max).setStyle(ProgressBarStyle.ASCII)
                .setUpdateIntervalMillis(updateMillis).setConsumer(new ConsoleProgressBarConsumer(System.err, 100))
                .build();
    }

    /** Steps {@code bar}; nothing for a null bar (a command run with {@code --no-progress}). */
    public static void step(ProgressBar bar) {
        if (bar != null) {
            bar.step();
        }
    }
}
