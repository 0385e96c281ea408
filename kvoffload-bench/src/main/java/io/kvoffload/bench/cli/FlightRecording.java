package io.kvoffload.bench.cli;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Path;
import java.text.ParseException;
import java.time.Duration;
import java.util.Map;
import java.util.TreeMap;
import jdk.jfr.Configuration;
import jdk.jfr.Recording;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordingFile;

/**
 * A JFR recording around a command (the demo's {@code --jfr FILE}): the JDK's {@code default}
 * settings plus every kvoffload event at no threshold, dumped to a file when the command ends; the
 * kvoffload events found in it are counted on the console. Open the file in JDK Mission Control or
 * print it with {@code jfr print --events 'io.kvoffload.*' FILE}.
 */
final class FlightRecording implements AutoCloseable {
    static final String[] EVENTS = {"Fetch", "Commit", "Eviction", "ChecksumFailure", "DeviceError", "Degradation"};
    private final Recording recording;
    private final Path file;
    private final PrintStream out;

    private FlightRecording(Recording recording, Path file, PrintStream out) {
        this.recording = recording;
        this.file = file;
        this.out = out;
    }

    /** Starts recording; {@link #close} stops it and writes {@code file}. */
    static FlightRecording start(Path file, PrintStream out) throws IOException {
        Configuration c;
        try {
            c = Configuration.getConfiguration("default");
        } catch (ParseException e) {
            throw new IOException("the JDK's default JFR configuration does not parse", e);
        }
        Recording r = new Recording(c);
        for (String e : EVENTS) {
            r.enable("io.kvoffload." + e).withThreshold(Duration.ZERO);
        }
        r.setToDisk(true);
        r.setDestination(file);
        r.start();
        return new FlightRecording(r, file, out);
    }

    /** The kvoffload events in {@code file}, by name. */
    static Map<String, Long> count(Path file) throws IOException {
        Map<String, Long> n = new TreeMap<>();
        for (RecordedEvent e : RecordingFile.readAllEvents(file)) {
            String name = e.getEventType().getName();
            if (name.startsWith("io.kvoffload.")) {
                n.merge(name, 1L, Long::sum);
            }
        }
        return n;
    }

    @Override
    public void close() throws IOException {
        recording.stop(); // writes the destination file
        recording.close();
        out.printf("JFR: %s holds %s (jfr print --events 'io.kvoffload.*' %s)%n", file, count(file), file);
    }
}
