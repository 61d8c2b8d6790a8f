package io.nearstream.flinkcluster;

import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * The exact check of the word count job's output: for every word w with total n in the input, the
 * records {@code w<TAB>1} .. {@code w<TAB>n}, each exactly once, and nothing else. Loss leaves a
 * count out; a duplicate (a record written twice, or a count replayed after a restore without its
 * state) shows up twice or as a count above n.
 */
final class RunningCounts {

    private static final int SHOWN = 20;

    private RunningCounts() {}

    /** How many records the output holds when the job is done. */
    static int expectedSize(Map<String, Long> totals) {
        return Math.toIntExact(totals.values().stream().mapToLong(Long::longValue).sum());
    }

    /** What is wrong with {@code output} against {@code totals}; empty when it is exact. */
    static String differences(Map<String, Long> totals, Collection<String> output) {
        Map<String, Integer> unmatched = new HashMap<>();
        for (String record : output) {
            unmatched.merge(record, 1, Integer::sum);
        }
        List<String> missing = new ArrayList<>();
        for (Map.Entry<String, Long> e : new TreeMap<>(totals).entrySet()) {
            for (long c = 1; c <= e.getValue(); c++) {
                String record = e.getKey() + '\t' + c;
                int copies = unmatched.getOrDefault(record, 0);
                if (copies == 0) {
                    missing.add(record);
                } else {
                    unmatched.put(record, copies - 1);
                }
            }
        }
        List<String> extra = new ArrayList<>();
        new TreeMap<>(unmatched)
                .forEach((record, copies) -> extra.addAll(Collections.nCopies(copies, record)));
        if (missing.isEmpty() && extra.isEmpty()) {
            return "";
        }
        return output.size()
                + " records, "
                + expectedSize(totals)
                + " expected; "
                + missing.size()
                + " missing "
                + shown(missing)
                + ", "
                + extra.size()
                + " unexpected (duplicates or wrong counts) "
                + shown(extra);
    }

    private static String shown(List<String> records) {
        List<String> first = records.subList(0, Math.min(SHOWN, records.size()));
        return first.toString().replace("\t", "=") + (records.size() > SHOWN ? "..." : "");
    }
}
