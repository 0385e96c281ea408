package io.kvoffload.internal.storage;

import com.fasterxml.jackson.jr.ob.JSON;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.zip.CRC32C;

/**
 * Small JSON records with a CRC32C: {@code crc32c} is computed over the record serialised without
 * it, so a damaged or hand-edited file is told apart from a valid one. Readers trust nothing: every
 * field is type-checked, and any surprise is an {@link IOException} with the reason, never a
 * {@code ClassCastException} or {@code NullPointerException}.
 */
final class CheckedJson {
    static final String CRC = "crc32c";

    private CheckedJson() {}

    static byte[] encode(Map<String, Object> body) throws IOException {
        Map<String, Object> out = new LinkedHashMap<>(body);
        out.remove(CRC);
        out.put(CRC, crc(out));
        return JSON.std.with(JSON.Feature.PRETTY_PRINT_OUTPUT).asString(out).getBytes(StandardCharsets.UTF_8);
    }

    /**
     * Parses and checks a record.
     *
     * @param requireCrc false to accept a record written before records carried a CRC
     */
    static Map<String, Object> decode(byte[] bytes, boolean requireCrc) throws IOException {
        Object parsed;
        try {
            parsed = JSON.std.anyFrom(new String(bytes, StandardCharsets.UTF_8));
        } catch (IOException | RuntimeException e) {
            throw new IOException("not valid JSON (" + e.getMessage() + ")");
        }
        if (!(parsed instanceof Map<?, ?> raw)) {
            throw new IOException("not a JSON object");
        }
        Map<String, Object> map = new LinkedHashMap<>();
        for (Map.Entry<?, ?> e : raw.entrySet()) {
            map.put(String.valueOf(e.getKey()), e.getValue());
        }
        Object stored = map.remove(CRC);
        if (stored == null) {
            if (requireCrc) {
                throw new IOException("no " + CRC + " field");
            }
            return map;
        }
        if (!(stored instanceof Number n) || n.longValue() != crc(map)) {
            throw new IOException(CRC + " does not match the content (damaged or edited)");
        }
        return map;
    }

    private static long crc(Map<String, Object> body) throws IOException {
        CRC32C c = new CRC32C();
        c.update(JSON.std.asString(body).getBytes(StandardCharsets.UTF_8));
        return c.getValue();
    }

    static String string(Map<String, Object> m, String key) throws IOException {
        Object v = m.get(key);
        if (!(v instanceof String s) || s.isEmpty() || s.length() > 4096) {
            throw new IOException("field '" + key + "' is missing or not a string: " + abbreviate(v));
        }
        return s;
    }

    static long number(Map<String, Object> m, String key, long min, long max) throws IOException {
        Object v = m.get(key);
        if (!(v instanceof Number n) || n.doubleValue() != n.longValue() || n.longValue() < min
                || n.longValue() > max) {
            throw new IOException("field '" + key + "' is missing or not an integer in [" + min + ", " + max + "]: "
                    + abbreviate(v));
        }
        return n.longValue();
    }

    static List<?> list(Map<String, Object> m, String key) throws IOException {
        Object v = m.get(key);
        if (!(v instanceof List<?> l)) {
            throw new IOException("field '" + key + "' is missing or not a list: " + abbreviate(v));
        }
        return l;
    }

    @SuppressWarnings("unchecked")
    static Map<String, Object> object(Object v, String what) throws IOException {
        if (!(v instanceof Map<?, ?> m)) {
            throw new IOException(what + " is not an object: " + abbreviate(v));
        }
        for (Object k : m.keySet()) {
            if (!(k instanceof String)) {
                throw new IOException(what + " has a non-string key");
            }
        }
        return (Map<String, Object>) m;
    }

    private static String abbreviate(Object v) {
        String s = String.valueOf(v);
        return s.length() > 80 ? s.substring(0, 80) + "…" : s;
    }
}
