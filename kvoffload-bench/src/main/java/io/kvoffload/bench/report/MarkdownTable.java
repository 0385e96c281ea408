package io.kvoffload.bench.report;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * A GitHub-flavoured markdown table: a header, rows of cells, optional right alignment for
 * numeric columns. Cells are escaped ({@code |} and line breaks) so any text is safe.
 */
public final class MarkdownTable {
    private final String[] header;
    private final boolean[] right;
    private final List<String[]> rows = new ArrayList<>();

    public MarkdownTable(String... header) {
        if (header.length == 0) {
            throw new IllegalArgumentException("header is empty; a table needs at least one column");
        }
        this.header = header.clone();
        this.right = new boolean[header.length];
    }

    /** Right-aligns the given columns (numbers read better that way). */
    public MarkdownTable alignRight(int... columns) {
        for (int c : columns) {
            if (c < 0 || c >= header.length) {
                throw new IllegalArgumentException("column = " + c + " is out of range; allowed: 0.." + (header.length - 1));
            }
            right[c] = true;
        }
        return this;
    }

    /** Adds a row of as many cells as the header; each cell is written with {@link String#valueOf}. */
    public MarkdownTable row(Object... cells) {
        if (cells.length != header.length) {
            throw new IllegalArgumentException("row has " + cells.length + " cells; the header has " + header.length);
        }
        rows.add(Arrays.stream(cells).map(c -> escape(String.valueOf(c))).toArray(String[]::new));
        return this;
    }

    public int rowCount() {
        return rows.size();
    }

    static String escape(String s) {
        return s.replace("|", "\\|").replace("\r\n", " ").replace('\n', ' ').replace('\r', ' ');
    }

    /** The table as markdown, ending with a line break. */
    public String render() {
        StringBuilder sb = new StringBuilder();
        sb.append('|');
        for (String h : header) {
            sb.append(' ').append(escape(h)).append(" |");
        }
        sb.append('\n').append('|');
        for (boolean r : right) {
            sb.append(r ? "---:|" : "---|");
        }
        sb.append('\n');
        for (String[] row : rows) {
            sb.append('|');
            for (String c : row) {
                sb.append(' ').append(c).append(" |");
            }
            sb.append('\n');
        }
        return sb.toString();
    }

    @Override
    public String toString() {
        return render();
    }
}
