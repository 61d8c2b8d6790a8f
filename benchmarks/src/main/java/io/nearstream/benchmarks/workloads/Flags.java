package io.nearstream.benchmarks.workloads;

import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

/**
 * {@code --name value} / {@code --name=value} command-line flags of the producer programs. Unknown
 * flags, a flag without a value and malformed numbers are errors that name the flag.
 */
final class Flags {

    private final Map<String, String> values = new HashMap<>();

    private Flags() {}

    static Flags parse(String[] args, Set<String> known) {
        Flags flags = new Flags();
        for (int i = 0; i < args.length; i++) {
            String arg = args[i];
            if (!arg.startsWith("--") || arg.length() == 2) {
                throw new IllegalArgumentException("expected --flag, got '" + arg + "'");
            }
            String name;
            String value;
            int eq = arg.indexOf('=');
            if (eq > 0) {
                name = arg.substring(2, eq);
                value = arg.substring(eq + 1);
            } else {
                name = arg.substring(2);
                if (i + 1 >= args.length) {
                    throw new IllegalArgumentException("--" + name + " needs a value");
                }
                value = args[++i];
            }
            if (!known.contains(name)) {
                throw new IllegalArgumentException(
                        "unknown flag --"
                                + name
                                + "; known: --"
                                + String.join(", --", new TreeSet<>(known)));
            }
            flags.values.put(name, value);
        }
        return flags;
    }

    String string(String name, String defaultValue) {
        return values.getOrDefault(name, defaultValue);
    }

    String required(String name) {
        String v = values.get(name);
        if (v == null) {
            throw new IllegalArgumentException("--" + name + " is required");
        }
        return v;
    }

    long longValue(String name, long defaultValue, long min) {
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

    int intValue(String name, int defaultValue, int min) {
        long v = longValue(name, defaultValue, min);
        if (v > Integer.MAX_VALUE) {
            throw new IllegalArgumentException("--" + name + " is too large: " + v);
        }
        return (int) v;
    }
}
