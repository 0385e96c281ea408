package io.kvoffload.bench.report;

import java.awt.Color;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.knowm.xchart.BitmapEncoder;
import org.knowm.xchart.BitmapEncoder.BitmapFormat;
import org.knowm.xchart.CategoryChart;
import org.knowm.xchart.CategoryChartBuilder;
import org.knowm.xchart.XYChart;
import org.knowm.xchart.XYChartBuilder;
import org.knowm.xchart.style.Styler;
import org.knowm.xchart.style.lines.SeriesLines;
import org.knowm.xchart.style.markers.SeriesMarkers;

/**
 * PNG plots for reports, drawn by XChart without a display ({@code java.awt.headless=true} is set
 * before the first chart, so a server or CI machine without X11 can draw them). Two shapes cover
 * the reports: a line chart of numeric series (bandwidth vs prefix length, scaling vs SSD count,
 * quality vs budget) and a grouped bar chart over categories (I/O time per strategy).
 */
public final class Plots {
    /** Default image size in pixels. */
    public static final int WIDTH = 900;
    public static final int HEIGHT = 560;

    private Plots() {}

    static {
        headless();
    }

    /** Makes AWT headless unless the application already decided (must run before AWT initialises). */
    public static void headless() {
        if (System.getProperty("java.awt.headless") == null) {
            System.setProperty("java.awt.headless", "true");
        }
    }

    /**
     * One named series of a line chart.
     *
     * @param name legend text
     * @param x x values
     * @param y y values, as many as x
     * @param dashed draw a dashed line (for limits and references next to measured series)
     */
    public record Series(String name, double[] x, double[] y, boolean dashed) {
        public Series(String name, double[] x, double[] y) {
            this(name, x, y, false);
        }

        public Series {
            if (x.length != y.length || x.length == 0) {
                throw new IllegalArgumentException("series '" + name + "' has " + x.length + " x and " + y.length
                        + " y values; allowed: the same positive number of each");
            }
        }
    }

    /** Options of a line chart. */
    public record LineOptions(boolean logX, boolean logY, boolean yFromZero) {
        public static final LineOptions DEFAULT = new LineOptions(false, false, true);
    }

    /** Writes a line chart with markers to {@code file} (PNG); returns the file. */
    public static Path line(Path file, String title, String xLabel, String yLabel, List<Series> series,
            LineOptions options) throws IOException {
        if (series.isEmpty()) {
            throw new IllegalArgumentException("series is empty; a chart needs at least one series");
        }
        XYChart chart = new XYChartBuilder().width(WIDTH).height(HEIGHT).title(title).xAxisTitle(xLabel)
                .yAxisTitle(yLabel).build();
        style(chart.getStyler());
        chart.getStyler().setXAxisLogarithmic(options.logX());
        chart.getStyler().setYAxisLogarithmic(options.logY());
        if (options.yFromZero() && !options.logY()) {
            chart.getStyler().setYAxisMin(0.0);
        }
        for (Series s : series) {
            var added = chart.addSeries(s.name(), s.x(), s.y());
            added.setMarker(s.dashed() ? SeriesMarkers.NONE : SeriesMarkers.CIRCLE);
            if (s.dashed()) {
                added.setLineStyle(SeriesLines.DASH_DASH);
            }
        }
        return save(file, chart);
    }

    /**
     * Writes a grouped bar chart: one group per category, one bar per series in each group.
     *
     * @param categories the x-axis categories, in order
     * @param values series name → one value per category
     */
    public static Path bars(Path file, String title, String xLabel, String yLabel, List<String> categories,
            Map<String, double[]> values) throws IOException {
        if (categories.isEmpty() || values.isEmpty()) {
            throw new IllegalArgumentException("categories and values must not be empty");
        }
        CategoryChart chart = new CategoryChartBuilder().width(WIDTH).height(HEIGHT).title(title).xAxisTitle(xLabel)
                .yAxisTitle(yLabel).build();
        style(chart.getStyler());
        for (Map.Entry<String, double[]> e : new LinkedHashMap<>(values).entrySet()) {
            if (e.getValue().length != categories.size()) {
                throw new IllegalArgumentException("series '" + e.getKey() + "' has " + e.getValue().length
                        + " values; allowed: one per category (" + categories.size() + ")");
            }
            List<Double> ys = java.util.Arrays.stream(e.getValue()).boxed().toList();
            chart.addSeries(e.getKey(), categories, ys);
        }
        return save(file, chart);
    }

    private static void style(Styler s) {
        s.setLegendPosition(Styler.LegendPosition.OutsideS);
        s.setChartBackgroundColor(Color.WHITE);
        s.setPlotBackgroundColor(Color.WHITE);
        s.setAntiAlias(true);
    }

    private static Path save(Path file, org.knowm.xchart.internal.chartpart.Chart<?, ?> chart) throws IOException {
        Path parent = file.toAbsolutePath().getParent();
        if (parent != null) {
            Files.createDirectories(parent);
        }
        BitmapEncoder.saveBitmap(chart, file.toString(), BitmapFormat.PNG);
        // saveBitmap appends ".png" when the name lacks it.
        return file.toString().endsWith(".png") ? file : Path.of(file + ".png");
    }
}
