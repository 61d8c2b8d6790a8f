package io.nearstream.benchmarks.jobs;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

/**
 * Command-line flags of the benchmark mains: {@code --name value} pairs, every name known in
 * advance, every value checked, with an error that names the flag.
 */
public final class Flags {

    private final Map<String, String> values = new LinkedHashMap<>();

    /**
     * Parses {@code args}.
     *
     * @throws IllegalArgumentException on an unknown flag, a flag without a value, or a stray word
     */
    public Flags(String[] args, Set<String> known) {
        for (int i = 0; i < args.length; i++) {
            String arg = args[i];
            if (!arg.startsWith("--")) {
                throw new IllegalArgumentException("unexpected argument '" + arg + "'");
            }
            String name = arg.substring(2);
            String value;
            int eq = name.indexOf('=');
            if (eq >= 0) {
                value = name.substring(eq + 1);
                name = name.substring(0, eq);
            } else if (i + 1 < args.length) {
                value = args[++i];
            } else {
                throw new IllegalArgumentException("--" + name + " needs a value");
            }
            if (!known.contains(name)) {
                throw new IllegalArgumentException(
                        "unknown flag --"
                                + name
                                + "; known: --"
                                + String.join(", --", new TreeSet<>(known)));
            }
            values.put(name, value);
        }
    }

    public boolean has(String name) {
        return values.containsKey(name);
    }

    public String string(String name, String fallback) {
        return values.getOrDefault(name, fallback);
    }

    public String required(String name) {
        String v = values.get(name);
        if (v == null || v.isBlank()) {
            throw new IllegalArgumentException("--" + name + " is required");
        }
        return v;
    }

    public long positiveLong(String name, long fallback) {
        String v = values.get(name);
        if (v == null) {
            return fallback;
        }
        long n;
        try {
            n = Long.parseLong(v.replace("_", ""));
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("--" + name + " must be a number, not '" + v + "'");
        }
        if (n <= 0) {
            throw new IllegalArgumentException("--" + name + " must be > 0, not " + n);
        }
        return n;
    }

    public int positiveInt(String name, int fallback) {
        long n = positiveLong(name, fallback);
        if (n > Integer.MAX_VALUE) {
            throw new IllegalArgumentException("--" + name + " is too large: " + n);
        }
        return (int) n;
    }

    /** A comma-separated list of positive ints. */
    public List<Integer> positiveInts(String name, List<Integer> fallback) {
        String v = values.get(name);
        if (v == null) {
            return fallback;
        }
        List<Integer> out = new ArrayList<>();
        for (String part : v.split(",")) {
            try {
                int n = Integer.parseInt(part.trim());
                if (n <= 0) {
                    throw new NumberFormatException();
                }
                out.add(n);
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException(
                        "--"
                                + name
                                + " must be positive numbers separated by commas, not '"
                                + v
                                + "'");
            }
        }
        return out;
    }

    public long longValue(String name, long defaultValue, long min) {
        String v = values.get(name);
        if (v == null) {
            return defaultValue;
        }
        long parsed;
        try {
            parsed = Long.parseLong(v.replace("_", ""));
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("--" + name + " must be a number, got '" + v + "'");
        }
        if (parsed < min) {
            throw new IllegalArgumentException("--" + name + " must be >= " + min + ", got " + v);
        }
        return parsed;
    }

    public int intValue(String name, int defaultValue, int min) {
        long v = longValue(name, defaultValue, min);
        if (v > Integer.MAX_VALUE) {
            throw new IllegalArgumentException("--" + name + " is too large: " + v);
        }
        return (int) v;
    }
}
