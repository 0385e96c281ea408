package io.kvoffload.bench.cli;

import io.kvoffload.bench.TempDirs;
import java.io.IOException;
import java.nio.file.Path;
import picocli.CommandLine.Option;

/**
 * The options of the commands that write a report folder and measure on scratch SSD directories
 * ({@code --backend}, {@code --work}, {@code --out}), as a picocli mixin: each run makes a new
 * temporary root under {@code --work} (deleted afterwards) and writes its CSV, plots and summary
 * into {@code --out}. A command picks its report folder by initialising the field,
 * {@code @Mixin ReportOptions report = new ReportOptions("kvoffload-bench/target/reports/placement");}.
 */
public final class ReportOptions extends BackendOptions {

    @Option(names = "--work", description = "Where the SSD directories go (default: java.io.tmpdir; not tmpfs).")
    public Path work;

    @Option(names = "--out", description = "Output folder for the CSV, the plots and summary.md (default: ${DEFAULT-VALUE}).")
    public Path out;

    /** A command's own report folder. */
    public ReportOptions(String out) {
        this.out = Path.of(out);
    }

    /** A new, empty scratch root named {@code prefix…} under {@code --work}; the caller deletes it. */
    public Path scratch(String prefix) throws IOException {
        return TempDirs.createUnder(work, prefix);
    }
}
