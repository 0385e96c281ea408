package io.kvoffload.bench;

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
        return new ProgressBarBuilder().setTaskName(task).setInitialMax(max).setStyle(ProgressBarStyle.ASCII)
                .setUpdateIntervalMillis(updateMillis).setMaxRenderedLength(100).build();
    }
}
