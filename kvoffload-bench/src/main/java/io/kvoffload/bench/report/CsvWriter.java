package io.kvoffload.bench.report;

import java.io.BufferedWriter;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * Writes RFC 4180 CSV: a header row, then one row per call, fields quoted only when they hold a
 * comma, quote or line break. Numbers are written with {@link Locale#ROOT} so a German locale does
 * not turn 1.5 into 1,5. A writer this small needs no CSV library; {@link #read} parses the same
 * dialect back (tests and report tools use it).
 */
public final class CsvWriter implements AutoCloseable {
    private final BufferedWriter out;
    private final int columns;

    /** Creates (or replaces) {@code file}, creating its folder, and writes the header. */
    public CsvWriter(Path file, String... header) throws IOException {
        if (header.length == 0) {
            throw new IllegalArgumentException("header is empty; a CSV file needs at least one column");
        }
        Path parent = file.toAbsolutePath().getParent();
        if (parent != null) {
            Files.createDirectories(parent);
        }
        this.out = Files.newBufferedWriter(file, StandardCharsets.UTF_8);
        this.columns = header.length;
        writeRow((Object[]) header);
    }

    /** Writes one row; it must have as many fields as the header. Doubles keep up to 6 significant decimals. */
    public CsvWriter row(Object... fields) throws IOException {
        if (fields.length != columns) {
            throw new IllegalArgumentException("row has " + fields.length + " fields; the header has " + columns);
        }
        writeRow(fields);
        return this;
    }

    private void writeRow(Object... fields) throws IOException {
        for (int i = 0; i < fields.length; i++) {
            if (i > 0) {
                out.write(',');
            }
            out.write(quote(format(fields[i])));
        }
        out.write("\r\n");
    }

    static String format(Object v) {
        if (v == null) {
            return "";
        }
        if (v instanceof Double || v instanceof Float) {
            double d = ((Number) v).doubleValue();
            if (d == Math.rint(d) && Math.abs(d) < 1e15) {
                return Long.toString((long) d);
            }
            return new java.math.BigDecimal(d).round(new java.math.MathContext(7)).stripTrailingZeros()
                    .toPlainString();
        }
        return String.valueOf(v);
    }

    static String quote(String s) {
        if (s.indexOf(',') < 0 && s.indexOf('"') < 0 && s.indexOf('\n') < 0 && s.indexOf('\r') < 0) {
            return s;
        }
        return '"' + s.replace("\"", "\"\"") + '"';
    }

    @Override
    public void close() throws IOException {
        out.close();
    }

    /** Reads a CSV file written by this class (any RFC 4180 file): rows of fields, header first. */
    public static List<List<String>> read(Path file) throws IOException {
        String s = Files.readString(file, StandardCharsets.UTF_8);
        List<List<String>> rows = new ArrayList<>();
        List<String> row = new ArrayList<>();
        StringBuilder field = new StringBuilder();
        boolean quoted = false;
        boolean any = false;
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (quoted) {
                if (c == '"' && i + 1 < s.length() && s.charAt(i + 1) == '"') {
                    field.append('"');
                    i++;
                } else if (c == '"') {
                    quoted = false;
                } else {
                    field.append(c);
                }
                continue;
            }
            any = true;
            switch (c) {
                case '"' -> quoted = true;
                case ',' -> {
                    row.add(field.toString());
                    field.setLength(0);
                }
                case '\r' -> { }
                case '\n' -> {
                    row.add(field.toString());
                    field.setLength(0);
                    rows.add(row);
                    row = new ArrayList<>();
                    any = false;
                }
                default -> field.append(c);
            }
        }
        if (quoted) {
            throw new IOException(file + ": a quoted field is not closed");
        }
        if (any) {
            row.add(field.toString());
            rows.add(row);
        }
        return rows;
    }
}
